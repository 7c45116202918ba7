package evidencerepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWorkTreeAndUntracked(t *testing.T) {
	top := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", top).Run())
	require.NoError(t, os.WriteFile(filepath.Join(top, ".gitignore"), []byte("/evidence/\n"), 0o644))
	top, err := filepath.EvalSymlinks(top)
	require.NoError(t, err)
	outside := t.TempDir()

	assert.Equal(t, top, WorkTree(filepath.Join(top, "ci")))
	assert.Equal(t, top, WorkTree(filepath.Join(top, "no", "such", "dir", "ci")), "a folder still to be made")
	assert.Equal(t, top, WorkTree(filepath.Join(top, "evidence", "ci")), "ignored, still in the tree")
	assert.Empty(t, WorkTree(filepath.Join(outside, "ci")))

	assert.Equal(t, top, Untracked(filepath.Join(top, "matrix.json")))
	assert.Empty(t, Untracked(filepath.Join(top, "evidence", "matrix.json")), "ignored: the tree stays clean")
	assert.Empty(t, Untracked(filepath.Join(outside, "matrix.json")))
}
