package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"
	"qualkit/internal/runarchive"
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

func TestPassesOnACommittedRun(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := committedRun(t, "qualified")
	junit := filepath.Join("..", "..", "internal", "evidencecheck", "testdata", "junit-qualified.xml")
	require.Equal(t, 0, run([]string{"-dir", dir, "-junit", junit}, &out, &errOut), errOut.String()+out.String())
	assert.Contains(t, out.String(), ": ok: 1 row(s)")
}

// -pubkey verifies the signature; -strict refuses a run without one.
func TestSignedRun(t *testing.T) {
	dir := committedRun(t, "qualified")
	junit := filepath.Join("..", "..", "internal", "evidencecheck", "testdata", "junit-qualified.xml")
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-dir", dir, "-strict"}, &out, &errOut))
	assert.Contains(t, out.String(), "checkevidence: attestation.dsse.json: unsigned")
	assert.Contains(t, out.String(), "attestation.dsse.json: signature: evidence says a signed attestation")

	priv, pub, err := attest.GenerateKey()
	require.NoError(t, err)
	pubFile := filepath.Join(t.TempDir(), "ci.pub.pem")
	require.NoError(t, os.WriteFile(pubFile, pub, 0o644))
	// A key given is a signature required, strict or not.
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", dir, "-junit", junit, "-pubkey", pubFile}, &out, &errOut), "an unsigned run checked with a key")
	assert.Contains(t, out.String(), "a key given means a signature is required")
	_, err = attest.Sign(context.Background(), dir, junit, priv)
	require.NoError(t, err)
	out.Reset()
	require.Equal(t, 0, run([]string{"-dir", dir, "-junit", junit, "-pubkey", pubFile, "-strict"}, &out, &errOut), out.String())
	assert.Contains(t, out.String(), "attestation.dsse.json: signature verified")

	// The run's list changed after signing: the signature is valid, but not over this folder.
	f, err := os.OpenFile(filepath.Join(dir, "SHA256SUMS"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", dir, "-pubkey", pubFile}, &out, &errOut))
	assert.Contains(t, out.String(), "attestation.dsse.json: signature valid")

	// The attestation stripped after an edit: with the key given, no signature is a failure.
	require.NoError(t, os.Remove(filepath.Join(dir, attest.File)))
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", dir, "-pubkey", pubFile}, &out, &errOut))
	assert.Contains(t, out.String(), "missing (unsigned)")

	// Signed again by the forger's own key: the given key does not verify it.
	forger, _, err := attest.GenerateKey()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "SHA256SUMS"), bytes.TrimSuffix(mustRead(t, filepath.Join(dir, "SHA256SUMS")), []byte("\n")), 0o644))
	_, err = attest.Sign(context.Background(), dir, junit, forger)
	require.NoError(t, err)
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", dir, "-junit", junit, "-pubkey", pubFile}, &out, &errOut), "signed by another key")
	assert.Contains(t, out.String(), "none verifies")
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

func TestListsEveryProblemAndExits1(t *testing.T) {
	dir := committedRun(t, "drift")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "extra.txt"), nil, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "SUMMARY.md")))
	var out, errOut bytes.Buffer
	assert.Equal(t, 1, run([]string{"-dir", dir}, &out, &errOut))
	assert.Contains(t, out.String(), "extra.txt: listed in SHA256SUMS: evidence says every file of the run folder listed, file says not listed")
	assert.Contains(t, out.String(), "SUMMARY.md: exact file set: evidence says required in every run folder, file says missing")
	assert.Contains(t, errOut.String(), "FAILED")
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "-dir DIR is required")
}

// Pointed at the folder above a run, the checker checks that run and says so; above
// several, it lists them.
func TestFindsTheRunInAFolder(t *testing.T) {
	dir := committedRun(t, "qualified")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-dir", filepath.Dir(dir)}, &out, &errOut), errOut.String()+out.String())
	assert.Contains(t, out.String(), "holds one run, "+filepath.Base(dir)+": checking it")
	assert.Contains(t, out.String(), ": ok: 1 row(s)")

	require.NoError(t, os.CopyFS(filepath.Join(filepath.Dir(dir), "another"), os.DirFS(dir)))
	out.Reset()
	assert.Equal(t, 2, run([]string{"-dir", filepath.Dir(dir)}, &out, &errOut))
	assert.Contains(t, errOut.String(), "holds 2 runs; check one of them:")
	assert.Contains(t, errOut.String(), "make check-evidence DIR="+filepath.Join(filepath.Dir(dir), "another"))
}

// A run inside an archive of runs is unpacked and checked in place; an archive without
// -run, a run it does not hold, and a forged run inside it are refused.
func TestChecksARunInsideAnArchive(t *testing.T) {
	src := committedRun(t, "qualified")
	root := filepath.Dir(src)
	name := filepath.Base(src)
	archive := filepath.Join(t.TempDir(), "runs"+runarchive.Ext)
	require.NoError(t, runarchive.Pack(archive, root, name))
	junit := filepath.Join("..", "..", "internal", "evidencecheck", "testdata", "junit-qualified.xml")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-dir", archive, "-run", name, "-junit", junit}, &out, &errOut), errOut.String()+out.String())
	assert.Contains(t, out.String(), name+" from "+archive)
	assert.Contains(t, out.String(), ": ok: 1 row(s)")

	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-dir", archive}, &out, &errOut))
	assert.Contains(t, errOut.String(), "name the run inside it with -run")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-dir", archive, "-run", "20990101T000000Z-1"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "holds no run 20990101T000000Z-1")
	errOut.Reset()
	assert.Equal(t, 2, run([]string{"-dir", src, "-run", name}, &out, &errOut))
	assert.Contains(t, errOut.String(), "-run names a run inside an archive")

	// A forger edits a number inside the run and packs it again: still caught.
	res := filepath.Join(src, "refedit-v1", "results.json")
	b, err := os.ReadFile(res)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(res, bytes.Replace(b, []byte(`"measured": 5`), []byte(`"measured": 50`), 1), 0o644))
	require.NoError(t, runarchive.Pack(archive, root, name))
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", archive, "-run", name}, &out, &errOut))
}

// Outside a clone the run's commit cannot be looked up: the check says so, and -strict
// makes it a failure. Inside one (every other test), it is held to its commit.
func TestCommitNotVerifiableOutsideAClone(t *testing.T) {
	dir := committedRun(t, "qualified")
	junit, err := filepath.Abs(filepath.Join("..", "..", "internal", "evidencecheck", "testdata", "junit-qualified.xml"))
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-dir", dir, "-junit", junit}, &out, &errOut), errOut.String()+out.String())
	assert.Contains(t, out.String(), "checkevidence: not verified: commit not verifiable: the check ran outside a repository")
	out.Reset()
	assert.Equal(t, 1, run([]string{"-dir", dir, "-junit", junit, "-strict"}, &out, &errOut))
	assert.Contains(t, out.String(), "run.json: harness_commit: evidence says a commit of the repository the check runs in (strict), file says not verifiable: no repository")
}
