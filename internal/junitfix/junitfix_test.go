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

// A row that failed at preflight: one failure, on preflight, its message the reason and
// its type the stage; the seven stages that did not run as not-run errors; no failure on
// the report, row or table case, their text kept as output.
func TestFailedPreflightIsOneFailure(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "failed-preflight.gotestsum.xml"))
	require.NoError(t, err)
	out, err := Fix(b)
	require.NoError(t, err)
	var root Suites
	require.NoError(t, xml.Unmarshal(out, &root))
	assert.Equal(t, 1, root.Failures)
	assert.Equal(t, 7, root.Errors)
	s := root.Suites[0]
	var names []string
	for _, c := range s.Cases {
		names = append(names, strings.TrimPrefix(c.Name, "TestRefEdit/refedit-v1/"))
		switch {
		case c.Failure != nil:
			assert.Equal(t, "TestRefEdit/refedit-v1/preflight", c.Name)
			assert.Equal(t, "preflight", c.Failure.Type)
			assert.Equal(t, "stage preflight failed: gate: 2 requirement(s) not met:", c.Failure.Message)
		case c.Error != nil:
			assert.Equal(t, NotRun, c.Error.Type)
			assert.Equal(t, "not run: stage preflight failed", c.Error.Message)
		default:
			assert.Contains(t, c.SystemOut, "--- FAIL", "%s keeps what go test said", c.Name)
		}
		assert.Nil(t, c.Properties)
		assert.Regexp(t, `^[0-9]+\.[0-9]{3}$`, c.Time)
	}
	assert.Equal(t, []string{"preflight", "build", "correctness", "serve", "benchmark", "quality", "influence", "identity", "report",
		"TestRefEdit/refedit-v1", "TestRefEdit"}, names)
	var status string
	for _, p := range s.Properties {
		if p.Name == "TestRefEdit/refedit-v1/report qualkit.status" {
			status = p.Value
		}
	}
	assert.Equal(t, "failed", status, "the report case's properties, on the suite")
}
