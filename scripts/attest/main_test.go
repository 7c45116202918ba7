package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"

	"qualkit/internal/runarchive/runstest"
)

func committedRun(t *testing.T, kind string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-"+kind))
	require.NoError(t, err)
	require.Len(t, m, 1)
	dst := filepath.Join(t.TempDir(), filepath.Base(m[0]))
	require.NoError(t, os.CopyFS(dst, os.DirFS(m[0])))
	return dst
}

func TestKeygenThenSign(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "ci")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"keygen", "-out", prefix}, &out, &errOut), errOut.String())
	st, err := os.Stat(prefix + ".pem")
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the private key is the owner's alone")
	assert.Equal(t, 1, run([]string{"keygen", "-out", prefix}, &out, &errOut), "a key is never overwritten")
	assert.Contains(t, errOut.String(), "exists")

	dir := committedRun(t, "qualified")
	out.Reset()
	require.Equal(t, 0, run([]string{"sign", "-dir", dir, "-key", prefix + ".pem"}, &out, &errOut), errOut.String())
	assert.FileExists(t, filepath.Join(dir, attest.File))

	// The key through the environment, as CI holds it.
	dir = committedRun(t, "qualified")
	t.Setenv(attest.KeyEnv, prefix+".pem")
	require.Equal(t, 0, run([]string{"sign", "-dir", dir}, &out, &errOut), errOut.String())
	assert.FileExists(t, filepath.Join(dir, attest.File))
}

// Evidence the checker refuses is not signed.
func TestSignRefusesAFailingRun(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "ci")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"keygen", "-out", prefix}, &out, &errOut))
	dir := committedRun(t, "qualified")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("trust me\n"), 0o644))
	assert.Equal(t, 1, run([]string{"sign", "-dir", dir, "-key", prefix + ".pem"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "does not check, so it is not signed")
	assert.NoFileExists(t, filepath.Join(dir, attest.File))
}

func TestSignWithoutKey(t *testing.T) {
	t.Setenv(attest.KeyEnv, "")
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"sign", "-dir", committedRun(t, "qualified")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "no key: give -key FILE or set QUALKIT_SIGNING_KEY")
	assert.Equal(t, 2, run(nil, &out, &errOut))
}

// Without -out the key goes to the user's qualkit config folder; a private key is never
// written inside a git work tree, where it is one `git add` from being published and
// makes every run of the tree dirty.
func TestKeygenStaysOutOfWorkTrees(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"keygen"}, &out, &errOut), errOut.String())
	assert.FileExists(t, filepath.Join(config, "qualkit", "ci.pem"))
	assert.FileExists(t, filepath.Join(config, "qualkit", "ci.pub.pem"))

	tree := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", tree).Run())
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"keygen", "-out", filepath.Join(tree, "ci")}, &out, &errOut))
	assert.Contains(t, errOut.String(), "inside the git work tree")
	assert.NoFileExists(t, filepath.Join(tree, "ci.pem"))
}
