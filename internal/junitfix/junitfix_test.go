package junitfix

import (
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the .fixed.xml goldens")

// Each gotestsum file in testdata, fixed, is its golden (testdata/*.fixed.xml), which
// test_junit_files.py validates against junit-10.xsd and reads with junitparser.
func TestFixMatchesTheGoldens(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "*.gotestsum.xml"))
	require.NoError(t, err)
	require.NotEmpty(t, ins)
	for _, in := range ins {
		t.Run(filepath.Base(in), func(t *testing.T) {
			b, err := os.ReadFile(in)
			require.NoError(t, err)
			got, err := Fix(b)
			require.NoError(t, err)
			again, err := Fix(got)
			require.NoError(t, err)
			assert.Equal(t, string(got), string(again), "idempotent")
			golden := strings.TrimSuffix(in, ".gotestsum.xml") + ".fixed.xml"
			if *update {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "go test ./internal/junitfix -update writes it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// A row that failed at preflight: one failing stage, preflight, its message the reason
// and its type the stage; the seven stages that did not run skipped as not-run with the
// reason; the row's case and its table's failed, naming the stage; the report case's text
// kept as output.
func TestFailedPreflightIsOneFailingStage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "failed-preflight.gotestsum.xml"))
	require.NoError(t, err)
	out, err := Fix(b)
	require.NoError(t, err)
	var root Suites
	require.NoError(t, xml.Unmarshal(out, &root))
	assert.Equal(t, 3, root.Failures, "the stage, the row, the table")
	assert.Equal(t, 0, root.Errors)
	s := root.Suites[0]
	assert.Equal(t, 8, s.Skipped)
	const reason = "stage preflight failed: gate: 2 requirement(s) not met:"
	var names []string
	for _, c := range s.Cases {
		short := strings.TrimPrefix(c.Name, "TestRefEdit/refedit-v1/")
		names = append(names, short)
		switch short {
		case "preflight":
			require.NotNil(t, c.Failure)
			assert.Equal(t, "preflight", c.Failure.Type)
			assert.Equal(t, reason, c.Failure.Message)
			assert.True(t, strings.HasPrefix(c.Failure.Text, reason+"\n\n=== RUN"), "the body: the reason, then what go test said")
		case "report":
			assert.Nil(t, c.Failure)
			assert.Contains(t, c.SystemOut, "--- FAIL", "the report keeps what go test said")
		case "TestRefEdit/refedit-v1", "TestRefEdit":
			require.NotNil(t, c.Failure, c.Name)
			assert.Equal(t, SubtestFailed, c.Failure.Type)
		default:
			require.NotNil(t, c.Skipped, c.Name)
			assert.Equal(t, NotRun, c.Skipped.Type)
			assert.Equal(t, "not run: "+reason, c.Skipped.Message)
			assert.Nil(t, c.Failure)
			assert.Nil(t, c.Error)
		}
		assert.Nil(t, c.Properties)
		assert.Regexp(t, `^[0-9]+\.[0-9]{3}$`, c.Time)
	}
	assert.Equal(t, []string{"preflight", "build", "correctness", "serve", "benchmark", "quality", "influence", "controls", "identity", "report",
		"TestRefEdit/refedit-v1", "TestRefEdit"}, names)
	assert.Equal(t, reason, s.Cases[10].Failure.Message, "the row says its reason")
	assert.Equal(t, "refedit-v1: "+reason, s.Cases[11].Failure.Message, "the table names the row")
	var status string
	for _, p := range s.Properties {
		if p.Name == "TestRefEdit/refedit-v1/report qualkit.status" {
			status = p.Value
		}
	}
	assert.Equal(t, "failed", status, "the report case's properties, on the suite")
}

// An ordinary test's failure says what failed, not gotestsum's "Failed"; its parent names
// it; the suite's time is the package's wall as gotestsum stated it, not the sum of its
// cases (which ran in parallel here: 2 x 3 s in a 3.2 s package); a case's time is its
// own less its subtests'.
func TestOrdinaryFailuresAndTheSuiteWall(t *testing.T) {
	in := `<testsuites tests="3" failures="3" errors="0" time="3.400000">
	<testsuite tests="3" failures="3" time="3.200000" name="qualkit/x">
		<testcase classname="qualkit/x" name="TestA/one" time="3.000000"><failure message="Failed" type="">=== RUN   TestA/one
    a_test.go:12: want 2, got 3
--- FAIL: TestA/one (3.00s)
</failure></testcase>
		<testcase classname="qualkit/x" name="TestA/two" time="3.000000"></testcase>
		<testcase classname="qualkit/x" name="TestA" time="3.100000"><failure message="Failed" type="">=== RUN   TestA
--- FAIL: TestA (3.10s)
</failure></testcase>
		<testcase classname="qualkit/x" name="TestB" time="0.100000"><failure message="Failed" type="">=== RUN   TestB
--- FAIL: TestB (0.10s)
</failure></testcase>
	</testsuite>
</testsuites>`
	out, err := Fix([]byte(in))
	require.NoError(t, err)
	var root Suites
	require.NoError(t, xml.Unmarshal(out, &root))
	s := root.Suites[0]
	assert.Equal(t, "3.200", s.Time, "the package's wall")
	assert.Equal(t, "3.400", root.Time, "the run's wall")
	assert.Equal(t, "a_test.go:12: want 2, got 3", s.Cases[0].Failure.Message)
	assert.Equal(t, "one: a_test.go:12: want 2, got 3", s.Cases[2].Failure.Message)
	assert.Equal(t, SubtestFailed, s.Cases[2].Failure.Type)
	assert.Equal(t, "Failed", s.Cases[3].Failure.Message, "nothing but go test's own lines: nothing better to say")
	assert.Equal(t, []string{"3.000", "3.000", "0.000", "0.100"}, []string{s.Cases[0].Time, s.Cases[1].Time, s.Cases[2].Time, s.Cases[3].Time})
	again, err := Fix(out)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again), "idempotent")
}

// A testify failure's message is its position with the assertion's own words, not the
// bare "interrupt_test.go:76:" that go test prints above the block.
func TestTestifyFailureSaysItsAssertion(t *testing.T) {
	for text, want := range map[string]string{
		"=== RUN   TestS\n    interrupt_test.go:76: \n        \tError Trace:\t/r/qual/interrupt_test.go:76\n        \tError:      \tShould be true\n        \tTest:       \tTestS\n        \tMessages:   \tno run.json in /tmp/x\n--- FAIL: TestS (1.00s)\n": "interrupt_test.go:76: Should be true: no run.json in /tmp/x",
		"    a_test.go:9: \n        \tError Trace:\ta_test.go:9\n        \tError:      \tNot equal: \n        \t            \texpected: 1\n":                                                                                                                 "a_test.go:9: Not equal:",
		"    a_test.go:9: \n    b_test.go:3: \n        \tError:      \tlater\n": "a_test.go:9:",
		"    a_test.go:12: want 2, got 3\n":                                     "a_test.go:12: want 2, got 3",
	} {
		assert.Equal(t, want, firstMeaningfulLine(text), text)
	}
}
