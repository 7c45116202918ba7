package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// make test-failed reruns the top-level tests that failed, once each, and never calls a
// test that failed and then passed with the tree unchanged a pass: it is flaky.
func TestRerunReportsFlakyNeverPassed(t *testing.T) {
	dir := t.TempDir()
	last := filepath.Join(dir, "junit.xml")
	require.NoError(t, os.WriteFile(last, []byte(`<testsuites><testsuite>
<testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/serve"><failure message="stage serve failed: boom" type="serve"></failure></testcase>
<testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/benchmark"><skipped message="not run" type="not-run"></skipped></testcase>
<testcase classname="qualkit/qual" name="TestStoppedRunsLeaveNothing"><failure message="interrupt_test.go:76: Should be true" type=""></failure></testcase>
<testcase classname="qualkit/internal/x" name="TestOK"></testcase>
</testsuite></testsuites>`), 0o644))
	// Nothing of the tree is newer than the failed run.
	require.NoError(t, os.Chtimes(last, time.Now().Add(time.Hour), time.Now().Add(time.Hour)))

	var ran [][]string
	fake := func(args []string) error {
		ran = append(ran, args)
		file := args[slices.Index(args, "--junitfile")+1]
		return os.WriteFile(file, []byte(`<testsuites><testsuite>
<testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/serve"></testcase>
<testcase classname="qualkit/qual" name="TestStoppedRunsLeaveNothing"><failure message="interrupt_test.go:76: Should be true" type=""></failure></testcase>
</testsuite></testsuites>`), 0o644)
	}
	var out bytes.Buffer
	code, err := rerun(&out, last, filepath.Join(dir, "rerun.xml"), "trtmcdata", fake)
	require.NoError(t, err)
	assert.Equal(t, 1, code, "a flaky test and one that failed again: not green")
	require.Len(t, ran, 1, "one package, one run")
	assert.Equal(t, []string{"--format", "testname", "--junitfile", filepath.Join(dir, "rerun.xml"), "--",
		"-count=1", "-tags", "trtmcdata", "-run", "^(TestRefEdit|TestStoppedRunsLeaveNothing)$", "qualkit/qual"}, ran[0])
	assert.Contains(t, out.String(), "test-failed: FLAKY: qualkit/qual TestRefEdit: failed in the last run, passed on rerun with the tree unchanged")
	assert.Contains(t, out.String(), "test-failed: FAILED again: qualkit/qual TestStoppedRunsLeaveNothing: interrupt_test.go:76: Should be true")
	assert.NotContains(t, out.String(), "TestOK")
}

func TestRerunVerdictsAfterChanges(t *testing.T) {
	v := rerunVerdicts(rerunPlan{"p": {"TestA"}}, nil, []string{"a.go", "b.go"})
	require.Len(t, v, 1)
	assert.Equal(t, "passed after changes", v[0].Verdict)
	assert.Contains(t, v[0].Message, "a.go, b.go")

	var out bytes.Buffer
	dir := t.TempDir()
	code, err := rerun(&out, filepath.Join(dir, "none.xml"), filepath.Join(dir, "r.xml"), "", nil)
	assert.Equal(t, 2, code)
	assert.ErrorContains(t, err, "run make test first")
	empty := filepath.Join(dir, "ok.xml")
	require.NoError(t, os.WriteFile(empty, []byte(`<testsuites><testsuite><testcase classname="p" name="TestA"></testcase></testsuite></testsuites>`), 0o644))
	code, err = rerun(&out, empty, filepath.Join(dir, "r.xml"), "", nil)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "nothing failed")
}
