package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

const sample = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3">
  <testsuite name="qualkit/qual" tests="3">
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/identity" time="0.1"></testcase>
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/report" time="0.1"></testcase>
    %s
  </testsuite>
</testsuites>`

func write(t *testing.T, name, data string) string {
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

func junit(t *testing.T, extra string) string {
	return write(t, "junit.xml", strings.Replace(sample, "%s", extra, 1))
}

func TestGatePasses(t *testing.T) {
	p := junit(t, `<testcase classname="qualkit/qual" name="TestOther"></testcase>`)
	n, err := gate(p, []string{"qualkit/qual/TestRefEdit/refedit-v1/identity", "qualkit/qual/TestOther"})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

func TestGateFailsOnSkip(t *testing.T) {
	p := junit(t, `<testcase classname="qualkit/qual" name="TestGPU"><skipped message="no GPU"></skipped></testcase>`)
	_, err := gate(p, nil)
	require.ErrorContains(t, err, "1 test(s) skipped (qualkit/qual/TestGPU)")
}

func TestGateFailsWhenNothingPassed(t *testing.T) {
	p := write(t, "junit.xml", `<testsuites></testsuites>`)
	_, err := gate(p, nil)
	require.ErrorContains(t, err, "no test passed")
}

func TestGateFailsOnAbsentOrFailedExpected(t *testing.T) {
	p := junit(t, `<testcase classname="qualkit/qual" name="TestBroken"><failure message="x"></failure></testcase>`)
	_, err := gate(p, []string{"qualkit/qual/TestBroken", "qualkit/qual/TestAbsent"})
	require.ErrorContains(t, err, "2 expected test(s) did not run and pass: qualkit/qual/TestAbsent, qualkit/qual/TestBroken")
}

// -test's names are expected like any other: absent, the gate fails.
func TestNamedTestsAreExpected(t *testing.T) {
	assert.Equal(t, []string{"qualkit/qual/TestPerfServeConformance", "qualkit/qual/TestX"}, namedTests(" qualkit/qual/TestPerfServeConformance,,qualkit/qual/TestX "))
	assert.Empty(t, namedTests(""))
	_, err := gate(junit(t, ""), namedTests("qualkit/qual/TestPerfServeConformance"))
	require.ErrorContains(t, err, "1 expected test(s) did not run and pass: qualkit/qual/TestPerfServeConformance")
}

func TestGateFailsWithoutJUnit(t *testing.T) {
	_, err := gate(filepath.Join(t.TempDir(), "none.xml"), nil)
	require.ErrorContains(t, err, "did gotestsum run with --junitfile?")
}

// A failure or an error anywhere fails the gate, not only in an expected test.
func TestGateFailsOnAnyFailureOrError(t *testing.T) {
	p := junit(t, `<testcase classname="qualkit/internal/x" name="TestA"><failure message="x"></failure></testcase>`+
		`<testcase classname="qualkit/internal/x" name="TestB"><error message="y"></error></testcase>`)
	_, err := gate(p, nil)
	require.ErrorContains(t, err, "2 test(s) failed or errored (qualkit/internal/x/TestA, qualkit/internal/x/TestB)")
}

const tablesJSON = `[
 {"package": "qualkit/qual", "test": "TestRefEdit", "rows": ["refedit-v1"], "stages": ["build", "report"]},
 {"package": "qualkit/qual", "test": "TestQwen", "hardware": true, "rows": ["a", "b"], "stages": ["build", "report"]}
]`

func TestTablesGiveRowStagesAndTheSkipPattern(t *testing.T) {
	tables, err := schema.ReadTables(write(t, "tables.json", tablesJSON))
	require.NoError(t, err)
	rows, err := rowTests(tables, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"qualkit/qual/TestRefEdit/refedit-v1/build", "qualkit/qual/TestRefEdit/refedit-v1/report"}, rows)
	rows, err = rowTests(tables, "TestQwen")
	require.NoError(t, err)
	assert.Len(t, rows, 4)
	_, err = rowTests(tables, "TestNone")
	assert.ErrorContains(t, err, "no table TestNone")
	assert.Equal(t, "^(TestQwen)$", skipPattern(tables))
	assert.Equal(t, []string{"qualkit/qual/TestRefEdit", "qualkit/x/TestQwen"},
		withoutHardware([]string{"qualkit/qual/TestRefEdit", "qualkit/qual/TestQwen", "qualkit/x/TestQwen"}, tables))
}

func TestGoTestsReadsTheDeclaredTests(t *testing.T) {
	tests, err := goTests("./", "")
	require.NoError(t, err)
	assert.Contains(t, tests, "qualkit/scripts/testgate/TestGoTestsReadsTheDeclaredTests")
	assert.NotContains(t, tests, "qualkit/scripts/testgate/TestMain")
	for _, name := range []string{"Test", "TestX", "Test_x", "Fuzz", "FuzzY"} {
		assert.True(t, testFunc.MatchString(name), name)
	}
	for _, name := range []string{"Testing", "Fuzzy", "helperTest"} {
		assert.False(t, testFunc.MatchString(name), name)
	}
}

func TestPytestIDsFollowJUnitNaming(t *testing.T) {
	p := write(t, "collect.txt", "fixtures/image_edit/test_manifest.py::test_pins[photo]\n"+
		"families/refedit/correctness/selftest/test_x.py::TestBundle::test_tamper\n\nwarnings: a.py::b looks like an id\n2 tests collected in 0.1s\n")
	ids, err := pytestIDs(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"fixtures.image_edit.test_manifest/test_pins[photo]",
		"families.refedit.correctness.selftest.test_x.TestBundle/test_tamper"}, ids)
	_, err = pytestIDs(write(t, "empty.txt", "no tests ran\n"))
	assert.ErrorContains(t, err, "lists no test")
}

// The failure list names the stage that failed and its reason, leaves out the stages not
// run after it and the parents failed by their subtest, and says when a file is missing.
func TestFailedListsTheFailedLeaves(t *testing.T) {
	p := junit(t, `<testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/preflight"><failure message="stage preflight failed: gate&#xA;second line" type="preflight"></failure></testcase>
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/build"><error message="not run: stage preflight failed" type="not-run"></error></testcase>
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1"><failure message="Failed" type=""></failure></testcase>
    <testcase classname="qualkit/qual" name="TestRefEdit"><failure message="Failed" type=""></failure></testcase>
    <testcase classname="qualkit/internal/x" name="TestPanics"><error message="Failed" type=""></error></testcase>
    <testcase classname="qualkit/internal/x" name="TestSkipped"><skipped message="no GPU"></skipped></testcase>`)
	var b strings.Builder
	require.NoError(t, writeFailed(&b, []string{p, filepath.Join(t.TempDir(), "absent.xml")}))
	want := p + ": 2 test(s) FAILED:\n" +
		"  qualkit/qual TestRefEdit/refedit-v1/preflight: stage preflight failed: gate\n" +
		"  qualkit/internal/x TestPanics\n"
	assert.True(t, strings.HasPrefix(b.String(), want), "got:\n%s\nwant first:\n%s", b.String(), want)
	assert.Contains(t, b.String(), "absent.xml: not written (its step did not run)\n")

	b.Reset()
	require.NoError(t, writeFailed(&b, []string{junit(t, "")}))
	assert.Contains(t, b.String(), ": no test failed\n")

	_, err := failedCases(write(t, "bad.xml", "<testsuites><testsuite>"))
	assert.ErrorContains(t, err, "parse JUnit")
}

// A failed row's stages that never ran (junitfix: skipped, type not-run) are reported
// apart from skipped tests, beside the failure; a not-run skip with no failed stage in
// its row is a skip like any other.
func TestGateCountsNotRunStagesApart(t *testing.T) {
	row := `<testcase classname="qualkit/qual" name="TestRefEdit/r/preflight"><failure message="stage preflight failed: gate" type="preflight"></failure></testcase>` +
		`<testcase classname="qualkit/qual" name="TestRefEdit/r/build"><skipped type="not-run" message="not run: stage preflight failed: gate"></skipped></testcase>` +
		`<testcase classname="qualkit/qual" name="TestRefEdit/r/serve"><skipped type="not-run" message="not run: stage preflight failed: gate"></skipped></testcase>`
	p := junit(t, row)
	_, err := gate(p, []string{"qualkit/qual/TestRefEdit/r/build"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1 test(s) failed or errored (qualkit/qual/TestRefEdit/r/preflight)")
	assert.Contains(t, err.Error(), "2 stage(s) not run after their row's stage failed (qualkit/qual/TestRefEdit/r/build, qualkit/qual/TestRefEdit/r/serve)")
	assert.NotContains(t, err.Error(), "skipped")
	assert.NotContains(t, err.Error(), "did not run and pass", "listed once, as not run")

	forged := junit(t, `<testcase classname="qualkit/qual" name="TestRefEdit/ok/build"><skipped type="not-run" message="not run"></skipped></testcase>`)
	_, err = gate(forged, nil)
	require.ErrorContains(t, err, "1 test(s) skipped (qualkit/qual/TestRefEdit/ok/build): a skip is never a pass here")
	assert.NotContains(t, err.Error(), "not run after")
}
