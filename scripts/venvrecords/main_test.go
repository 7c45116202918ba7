package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

// Writing one Python's and platform's digests keeps the other tags' lines, and the
// written file is what the harness then holds the venv to.
func TestWriteReplacesItsTagAlone(t *testing.T) {
	venv := t.TempDir()
	info := filepath.Join(venv, "lib", "python3.11", "site-packages", "aiperf-0.13.0.dist-info")
	require.NoError(t, os.MkdirAll(info, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(info, "METADATA"), []byte("Name: aiperf\nVersion: 0.13.0\n\n"), 0o644))
	rec := "aiperf/__init__.py,sha256=AAA,1\naiperf-0.13.0.dist-info/RECORD,,\n"
	require.NoError(t, os.WriteFile(filepath.Join(info, "RECORD"), []byte(rec), 0o644))
	tag, err := harness.VenvTag(venv)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "venv-records.txt")
	other := "py3.12-linux-arm64 aiperf==0.13.0 " + strings.Repeat("1", 64)
	require.NoError(t, os.WriteFile(out, []byte(other+"\n"+tag+" aiperf==0.12.0 "+strings.Repeat("2", 64)+"\n"), 0o644))
	require.NoError(t, write(venv, tag, out))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), other, "another tag's line is kept")
	assert.Contains(t, string(b), tag+" aiperf==0.13.0 "+harness.RecordDigest([]byte(rec)))
	assert.NotContains(t, string(b), "aiperf==0.12.0", "this tag's old lines are replaced")
}
