package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimesFromJUnit(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(junit, []byte(`<testsuites>
<testsuite name="qualkit/qual" tests="3" time="600.5"><testcase name="TestSlow" time="400"/><testcase name="TestSlow/sub" time="399"/><testcase name="TestFast" time="0.1"/></testsuite>
<testsuite name="qualkit/internal/x" tests="1" time="12"><testcase name="TestMid" time="11.5"/></testsuite>
<testsuite name="qualkit/empty" tests="0" time="0.01"></testsuite>
</testsuites>`), 0o644))
	var out bytes.Buffer
	require.NoError(t, run(&out, junit, 2))
	got := out.String()
	assert.Contains(t, got, "| qualkit/qual | 3 | 600.5 |\n| qualkit/internal/x | 1 | 12.0 |\n")
	assert.NotContains(t, got, "qualkit/empty", "packages under a second are left out")
	assert.Contains(t, got, "| TestSlow | qualkit/qual | 400.0 |\n| TestMid | qualkit/internal/x | 11.5 |\n")
	assert.NotContains(t, got, "TestSlow/sub")
	assert.ErrorContains(t, run(&out, filepath.Join(t.TempDir(), "none.xml"), 2), "run `make test` first")
}
