package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/runarchive/runstest"
)

func TestPrintsPRSummary(t *testing.T) {
	m, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-qualified"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	var out, errOut bytes.Buffer
	require.NoError(t, run([]string{"-dir", m[0], "-trtmc", filepath.Join(t.TempDir(), "none")}, &out, &errOut))
	assert.Contains(t, out.String(), "# qualkit run "+filepath.Base(m[0]))
	assert.Contains(t, out.String(), "## Versions")

	dst := filepath.Join(t.TempDir(), filepath.Base(m[0]))
	require.NoError(t, os.CopyFS(dst, os.DirFS(m[0])))
	out.Reset()
	tables := filepath.Join(t.TempDir(), "tables.json")
	require.NoError(t, os.WriteFile(tables, []byte(`[{"test": "TestRefEdit", "details": [{"row": "refedit-v1", "family": "refedit", "profile": "refedit-v1"}]}]`), 0o644))
	require.NoError(t, run([]string{"-dir", dst, "-write", "-html", "-tables", tables}, &out, &errOut))
	assert.FileExists(t, filepath.Join(dst, "PR.md"))
	assert.FileExists(t, filepath.Join(dst, "index.html"))
	assert.ErrorContains(t, run([]string{"-dir", dst, "-write", "-tables", filepath.Join(t.TempDir(), "none.json")}, &out, &errOut), "run make tables")
}

func TestNeedsDir(t *testing.T) {
	assert.ErrorContains(t, run(nil, &bytes.Buffer{}, &bytes.Buffer{}), "-dir is required")
}
