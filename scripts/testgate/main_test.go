package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3">
  <testsuite name="qualkit/qual" tests="3">
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/identity" time="0.1"></testcase>
    <testcase classname="qualkit/qual" name="TestRefEdit/refedit-v1/report" time="0.1"></testcase>
    %s
  </testsuite>
</testsuites>`

func write(t *testing.T, extra string) string {
	p := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(p, []byte(fmtSample(extra)), 0o644))
	return p
}

func fmtSample(extra string) string { return strings.Replace(sample, "%s", extra, 1) }

func TestGatePasses(t *testing.T) {
	p := write(t, `<testcase classname="qualkit/qual" name="TestOther"></testcase>`)
	require.NoError(t, gate(p, 3, []string{"qualkit/qual/TestRefEdit/refedit-v1/identity"}))
}

func TestGateFailsOnSkip(t *testing.T) {
	p := write(t, `<testcase classname="qualkit/qual" name="TestGPU"><skipped message="no GPU"></skipped></testcase>`)
	err := gate(p, 1, nil)
	require.ErrorContains(t, err, "1 test(s) skipped (qualkit/qual/TestGPU)")
}

func TestGateFailsBelowFloor(t *testing.T) {
	p := write(t, "")
	require.ErrorContains(t, gate(p, 50, nil), "2 tests ran, fewer than the floor of 50")
}

func TestGateFailsOnMissingOrFailedRequired(t *testing.T) {
	p := write(t, `<testcase classname="qualkit/qual" name="TestBroken"><failure message="x"></failure></testcase>`)
	err := gate(p, 1, []string{"qualkit/qual/TestBroken", "qualkit/qual/TestAbsent"})
	require.ErrorContains(t, err, "required test qualkit/qual/TestBroken did not run and pass")
	require.ErrorContains(t, err, "required test qualkit/qual/TestAbsent did not run and pass")
}

func TestGateFailsWithoutJUnit(t *testing.T) {
	require.ErrorContains(t, gate(filepath.Join(t.TempDir(), "none.xml"), 1, nil), "did gotestsum run with --junitfile?")
}

// A failure or an error anywhere fails the gate, not only in a required test.
func TestGateFailsOnAnyFailureOrError(t *testing.T) {
	p := write(t, `<testcase classname="qualkit/internal/x" name="TestA"><failure message="x"></failure></testcase>`+
		`<testcase classname="qualkit/internal/x" name="TestB"><error message="y"></error></testcase>`)
	err := gate(p, 1, []string{"qualkit/qual/TestRefEdit/refedit-v1/identity"})
	require.ErrorContains(t, err, "2 test(s) failed or errored (qualkit/internal/x/TestA, qualkit/internal/x/TestB)")
}
