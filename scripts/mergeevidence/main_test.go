package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"
	"qualkit/internal/merged"

	"qualkit/internal/runarchive/runstest"
	"qualkit/internal/schema"
)

const testdata = "../../internal/evidencecheck/testdata"

// shard lays out a committed run as `make shard` writes one.
func shard(t *testing.T, dir, kind, junit string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-"+kind))
	require.NoError(t, err)
	require.Len(t, m, 1)
	require.NoError(t, os.CopyFS(filepath.Join(dir, filepath.Base(m[0])), os.DirFS(m[0])))
	b, err := os.ReadFile(filepath.Join(testdata, junit))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junit.xml"), b, 0o644))
	return dir
}

// The command merges two shards that cover the matrix, and checkevidence passes the
// merged folder; a matrix row without a shard is refused and nothing is written.
func TestMergeThenCheck(t *testing.T) {
	tmp := t.TempDir()
	a := shard(t, filepath.Join(tmp, "shard-refedit-v1"), "qualified", "junit-qualified.xml")
	b := shard(t, filepath.Join(tmp, "shard-second"), "second", "junit-second.xml")
	matrix := filepath.Join(tmp, "matrix.json")
	require.NoError(t, os.WriteFile(matrix, []byte(`{"created": "2026-12-01T00:00:00Z", "matrix": {"include": [{"name": "refedit-v1"}, {"name": "refedit-v1-second"}, {"name": "refedit-v1-beside"}]}}`), 0o644))
	out := filepath.Join(tmp, "merged")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 2, run([]string{"-matrix", matrix, "-out", out, a, b}, &stdout, &stderr), "neither -pubkey nor -unsigned")
	assert.Contains(t, stderr.String(), "give -pubkey FILE")

	// Signed shards merge with the signer's key; with the key, an unsigned shard is refused.
	priv, pub, err := attest.GenerateKey()
	require.NoError(t, err)
	pubFile := filepath.Join(tmp, "ci.pub.pem")
	require.NoError(t, os.WriteFile(pubFile, pub, 0o644))
	signShard(t, a, priv)
	stderr.Reset()
	require.Equal(t, 1, run([]string{"-matrix", matrix, "-pubkey", pubFile, "-out", out, a, b}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "attestation.dsse.json: signature: evidence says a signed attestation")
	assert.NoDirExists(t, out)
	// Under -unsigned the unsigned shard is admitted and named; the key still holds the
	// signed one to it.
	stdout.Reset()
	mixed := filepath.Join(tmp, "merged-mixed")
	require.Equal(t, 0, run([]string{"-matrix", matrix, "-unsigned", "-pubkey", pubFile, "-out", mixed, a, b}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "UNSIGNED shard(s): second (-unsigned; merged.json and PR.md name them)")
	pr, err := os.ReadFile(filepath.Join(mixed, "PR.md"))
	require.NoError(t, err)
	assert.Contains(t, string(pr), "UNSIGNED shards: second (merged with UNSIGNED=1)")
	other, _, err := attest.GenerateKey()
	require.NoError(t, err)
	signShard(t, a, other)
	stderr.Reset()
	forged := filepath.Join(tmp, "merged-forged")
	require.Equal(t, 1, run([]string{"-matrix", matrix, "-unsigned", "-pubkey", pubFile, "-out", forged, a, b}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "attestation.dsse.json: signature: evidence says a signature by key")
	assert.NoDirExists(t, forged)
	signShard(t, a, priv)

	signShard(t, b, priv)
	stderr.Reset()
	require.Equal(t, 0, run([]string{"-matrix", matrix, "-pubkey", pubFile, "-out", out, a, b}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "3 row(s) from 2 shard(s)")
	assert.Contains(t, stdout.String(), "every shard's signature verified")
	unsignedOut := filepath.Join(tmp, "merged-unsigned")
	require.Equal(t, 0, run([]string{"-matrix", matrix, "-unsigned", "-out", unsignedOut, a, b}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "every shard signed, no signature verified (no -pubkey)")

	// The second shard's rows are the checker's test rows, no rows of the qual tables: the
	// merged run is checked outside the clone, where its commit is not verifiable (and so
	// not -strict); the key still requires every shard's signature.
	bin := filepath.Join(tmp, "checkevidence")
	build, err := exec.Command("go", "build", "-o", bin, "../checkevidence").CombinedOutput()
	require.NoError(t, err, "%s", build)
	check := exec.Command(bin, "-dir", out, "-pubkey", pubFile)
	check.Dir = tmp
	msg, err := check.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	assert.Contains(t, string(msg), "ok: 3 row(s)")
	assert.Contains(t, string(msg), "attestation.dsse.json: signature verified")
	assert.Contains(t, string(msg), "not verified: shards/second/20261203T151857Z-5216-second: commit not verifiable")

	require.NoError(t, os.WriteFile(matrix, []byte(`{"created": "2026-12-01T00:00:00Z", "matrix": {"include": [{"name": "refedit-v1"}, {"name": "refedit-v1-second"}, {"name": "refedit-v1-beside"}, {"name": "absent"}]}}`), 0o644))
	stderr.Reset()
	again := filepath.Join(tmp, "merged-again")
	require.Equal(t, 1, run([]string{"-matrix", matrix, "-pubkey", pubFile, "-out", again, a, b}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "matrix row absent: no shard ran it (missing shard)")
	assert.NoDirExists(t, again)

	// A matrix made after the shards' runs began: they answer an earlier one.
	require.NoError(t, os.WriteFile(matrix, []byte(`{"created": "2026-12-04T00:00:00Z", "matrix": {"include": [{"name": "refedit-v1"}, {"name": "refedit-v1-second"}, {"name": "refedit-v1-beside"}]}}`), 0o644))
	stderr.Reset()
	require.Equal(t, 1, run([]string{"-matrix", matrix, "-pubkey", pubFile, "-out", again, a, b}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "began 2026-12-03T15:18:33Z, before its matrix was made (2026-12-04T00:00:00Z): a run of an earlier matrix")
	assert.NoDirExists(t, again)
}

// signShard signs the shard's run as `make shard SIGN_KEY=... MATRIX_CREATED=...` does:
// naming the shard, its first row as the matrix entry, and the matrix's created time.
func signShard(t *testing.T, shard string, priv []byte) {
	t.Helper()
	in, err := merged.ReadInput(shard)
	require.NoError(t, err)
	var info schema.RunInfo
	b, err := os.ReadFile(filepath.Join(in.RunDir, schema.RunFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &info))
	claim := &attest.ShardClaim{Name: in.Name, MatrixEntry: info.Rows[0], MatrixCreated: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	_, err = attest.SignShard(context.Background(), in.RunDir, in.JUnit, priv, claim)
	require.NoError(t, err)
}

func TestUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(nil, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-matrix FILE, -out DIR and at least one shard folder are required")
}
