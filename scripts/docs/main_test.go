package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

// Every example in the docs is what the current code prints for the committed run: a
// change to how a row, the checker or a picture prints fails here until make docs.
func TestDocsExamplesAreCurrent(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	stale, err := Examples(root, false)
	require.NoError(t, err)
	assert.Empty(t, stale, "examples that are no longer what the code prints: run make docs")
}

// The check can fail: an edited example is found, and -write puts it back.
func TestEditedExampleIsFound(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	tmp := t.TempDir()
	for _, f := range append(append([]string{}, Files...), "docs/refedit-contact-sheet.png", "docs/refedit-latency.png") {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(tmp, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(tmp, f), b, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(tmp, SourceDir)), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, SourceDir), filepath.Join(tmp, SourceDir)))
	require.NoError(t, os.Symlink(filepath.Join(root, Archive), filepath.Join(tmp, Archive)))
	require.NoError(t, os.WriteFile(filepath.Join(tmp, "go.mod"), []byte("module qualkit\n"), 0o644))

	readme := filepath.Join(tmp, "README.md")
	b, err := os.ReadFile(readme)
	require.NoError(t, err)
	edited := bytes.Replace(b, []byte("| qualified |"), []byte("| qualified (edited) |"), 1)
	require.NotEqual(t, b, edited)
	require.NoError(t, os.WriteFile(readme, edited, 0o644))
	require.NoError(t, os.Remove(filepath.Join(tmp, "docs/refedit-latency.png")))

	stale, err := Examples(tmp, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md: qual-table", "docs/refedit-latency.png"}, stale)
	_, err = Examples(tmp, true)
	require.NoError(t, err)
	stale, err = Examples(tmp, false)
	require.NoError(t, err)
	assert.Empty(t, stale)
	after, err := os.ReadFile(readme)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(after))
}
