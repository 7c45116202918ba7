package evidencecheck

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"
	"qualkit/internal/merged"
	"qualkit/internal/schema"
)

// testKey is a fresh ed25519 pair: the CI's key in these tests, which no forger holds.
func testKey(t *testing.T) (priv, pub []byte) {
	t.Helper()
	priv, pub, err := attest.GenerateKey()
	require.NoError(t, err)
	return priv, pub
}

// signedCopy is a committed run, signed the way `make qual SIGN_KEY=...` signs it; junit
// is its JUnit copy for the qualified run, "" for the others (they have none committed).
func signedCopy(t *testing.T, kind string, priv []byte) (dir, junit string) {
	t.Helper()
	dir = runCopy(t, kind)
	if kind == "qualified" {
		junit = junitCopy(t)
	}
	_, err := attest.Sign(context.Background(), dir, junit, priv)
	require.NoError(t, err)
	return dir, junit
}

// matrixMade is when writeMatrix's matrices were made.
var matrixMade = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// signShard signs the run of the shard folder as `make shard SIGN_KEY=...
// MATRIX_CREATED=...` does: its statement names the shard (the folder's name less
// "shard-"), the matrix entry (the run's first row) and the matrix's created time.
func signShard(t *testing.T, shardDir string, created time.Time, priv []byte) {
	t.Helper()
	in, err := merged.ReadInput(shardDir)
	require.NoError(t, err)
	var info schema.RunInfo
	readJSONFile(t, filepath.Join(in.RunDir, schema.RunFile), &info)
	_, err = attest.SignShard(context.Background(), in.RunDir, in.JUnit, priv, &attest.ShardClaim{Name: in.Name, MatrixEntry: info.Rows[0], MatrixCreated: created})
	require.NoError(t, err)
}

func verifySigned(dir, junit string, pub []byte, strict bool) *Report {
	rep := Verify(dir, junit)
	rep.VerifySignatures(context.Background(), pub, junit, strict)
	return rep
}

func TestSignedRunVerifies(t *testing.T) {
	priv, pub := testKey(t)
	dir, junit := signedCopy(t, "qualified", priv)
	rep := verifySigned(dir, junit, pub, true)
	require.NoError(t, rep.Err())
	require.Len(t, rep.Signatures, 1)
	assert.True(t, rep.Signatures[0].Result.Verified)
	assert.Equal(t, "qualified", rep.Signatures[0].Result.Predicate.Rows[0].Status)
	assert.Contains(t, rep.SignatureSummary()[0], "attestation.dsse.json: signature verified (key ")

	// Without the key the checker says it is signed and that it did not verify it.
	rep = verifySigned(dir, junit, nil, false)
	require.NoError(t, rep.Err())
	assert.Contains(t, rep.SignatureSummary()[0], "not verified (give -pubkey)")
	failsWith(t, verifySigned(dir, junit, nil, true).Err(), "attestation.dsse.json: signature: evidence says verified with the signer's public key")
}

// Every forgery of TestTamperingFails whose checksum lists were recomputed, or that
// edits the JUnit, made after the run was signed and without the key, breaks a signed
// digest (the others the checksum lists catch as before). Only the signature is checked
// here: TestTamperingFails runs the whole checker on each.
func TestSignedForgeriesFail(t *testing.T) {
	priv, pub := testKey(t)
	n := 0
	for _, tt := range tamperings {
		if !tt.resum && !tt.junit {
			continue
		}
		n++
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, junit := signedCopy(t, tt.run, priv)
			tt.edit(t, dir, junit)
			if tt.resum {
				resum(t, dir)
			}
			if !tt.junit {
				junit = ""
			}
			res := attest.Verify(context.Background(), dir, junit, pub)
			require.True(t, res.SignatureOK, "the envelope itself is untouched")
			require.False(t, res.Verified)
			var lines []string
			for _, p := range res.Problems {
				lines = append(lines, p.Claim+": evidence says "+p.Evidence+", file says "+p.Got)
			}
			want := "subject SHA256SUMS: evidence says sha256 "
			if tt.junit {
				want = "subject junit.xml: evidence says sha256 "
			}
			assert.Contains(t, strings.Join(lines, "\n"), want)
		})
	}
	require.Greater(t, n, 40, "forgeries with recomputed checksums")
}

// What only a signature catches, and what a forger without the key can try on the
// signature itself.
func TestSignatureForgeries(t *testing.T) {
	priv, pub := testKey(t)
	forgerPriv, _ := testKey(t)
	q := qualifiedRow
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want []string
	}{
		{"a log line edited, checksums fixed (no claim reads it: only the signature catches it)", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, q, "serve/server.log"), "serving model", "SERVING model")
			resum(t, dir)
		}, []string{"attestation.dsse.json: subject " + q + "/SHA256SUMS: evidence says sha256 "}},
		{"run.json's host edited, checksums fixed", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["hostname"], d["cpus"] = "h200-node-7", 128 })
			resum(t, dir)
		}, []string{"attestation.dsse.json: subject SHA256SUMS: evidence says sha256 "}},
		{"checkpoints.json's status edited, checksums fixed", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "checkpoints.json"), `"status": "implemented"`, `"status": "qualified"`)
			resum(t, dir)
		}, []string{"attestation.dsse.json: subject SHA256SUMS"}},
		{"re-signed with the forger's own key", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, q, "serve/server.log"), "serving model", "SERVING model")
			resum(t, dir)
			_, err := attest.Sign(context.Background(), dir, "", forgerPriv)
			require.NoError(t, err)
		}, []string{"attestation.dsse.json: signature: evidence says a signature by key ", "file says none verifies"}},
		{"the payload replaced by a statement over the forged files, signature kept", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, q, "serve/server.log"), "serving model", "SERVING model")
			resum(t, dir)
			old := readEnvelope(t, dir)
			_, err := attest.Sign(context.Background(), dir, "", forgerPriv)
			require.NoError(t, err)
			forged := readEnvelope(t, dir)
			forged.Signatures = old.Signatures
			writeEnvelope(t, dir, forged)
		}, []string{"attestation.dsse.json: signature: evidence says a signature by key ", "file says none verifies"}},
		{"the attestation removed", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, attest.File)))
		}, []string{"attestation.dsse.json: signature: evidence says a signed attestation", "file says missing (unsigned)"}},
		{"another run's attestation copied in", func(t *testing.T, dir string) {
			other, _ := signedCopy(t, "drift", priv)
			b, err := os.ReadFile(filepath.Join(other, attest.File))
			require.NoError(t, err)
			writeFile(t, filepath.Join(dir, attest.File), string(b))
		}, []string{"attestation.dsse.json: subject SHA256SUMS: evidence says sha256 ", "attestation.dsse.json: subject " + q + "/SHA256SUMS: evidence says a subject", "file says not signed"}},
		{"not JSON", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, attest.File), "signed, trust me\n")
		}, []string{"attestation.dsse.json: envelope: evidence says a DSSE envelope (JSON)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := signedCopy(t, "qualified", priv)
			tc.edit(t, dir)
			failsWith(t, verifySigned(dir, "", pub, true).Err(), tc.want...)
		})
	}
}

// A merged run verifies each shard's signature, and strictly refuses an unsigned shard.
func TestMergedRunVerifiesEachShardsSignature(t *testing.T) {
	priv, pub := testKey(t)
	shardA := shardCopy(t, "a", "qualified", "junit-qualified.xml")
	shardB := shardCopy(t, "b", "second", "junit-second.xml")
	for _, s := range []string{shardA, shardB} {
		runs, err := filepath.Glob(filepath.Join(s, "2*"))
		require.NoError(t, err)
		require.Len(t, runs, 1)
		signShard(t, s, matrixMade, priv)
	}
	out := filepath.Join(t.TempDir(), "merged")
	_, err := merged.Merge(out, writeMatrix(t, qualifiedRow, secondRow, besideRow), inputs(t, shardA, shardB), Check)
	require.NoError(t, err)
	rep := VerifyMerged(out)
	rep.VerifySignatures(context.Background(), pub, "", true)
	require.NoError(t, rep.Err())
	require.Len(t, rep.Signatures, 2)

	// The shard's JUnit edited inside the merged run, merged checksums fixed.
	var m merged.Manifest
	b, err := os.ReadFile(filepath.Join(out, merged.ManifestFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	replaceAllRe(t, filepath.Join(out, m.Shards[0].JUnit), `name="qualkit.http_p50_ms" value="[0-9.]+"`, `name="qualkit.http_p50_ms" value="0.001"`)
	resumMerged(t, out)
	rep = VerifyMerged(out)
	rep.VerifySignatures(context.Background(), pub, "", true)
	failsWith(t, rep.Err(), m.Shards[0].Dir+"/attestation.dsse.json: subject junit.xml: evidence says sha256 ")
}

func readEnvelope(t *testing.T, dir string) dsse.Envelope {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, attest.File))
	require.NoError(t, err)
	var env dsse.Envelope
	require.NoError(t, json.Unmarshal(b, &env))
	p, err := base64.StdEncoding.DecodeString(env.Payload)
	require.NoError(t, err)
	require.True(t, strings.Contains(string(p), attest.PredicateType))
	return env
}

func writeEnvelope(t *testing.T, dir string, env dsse.Envelope) {
	t.Helper()
	b, err := json.Marshal(env)
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, attest.File), string(b))
}

// The names a signature binds (issue 47), each forged with qualkit's own code and
// refused with the key: an old signed run copied under a new folder name; two shard
// folders of a merged run swapped, merged.json and the merged pages rewritten to match;
// and a shard replaced by another genuine signed run of the same row, signed for an
// earlier matrix (an earlier CI run's shard).
func TestSignedNamesAreBound(t *testing.T) {
	priv, pub := testKey(t)
	t.Run("an old run under a new folder name", func(t *testing.T) {
		dir, junit := signedCopy(t, "qualified", priv)
		require.NoError(t, verifySigned(dir, junit, pub, true).Err())
		renamed := filepath.Join(t.TempDir(), "20261206T040000Z-1-qualified")
		require.NoError(t, os.Rename(dir, renamed))
		failsWith(t, verifySigned(renamed, junit, pub, true).Err(),
			"attestation.dsse.json: run folder: evidence says named after the signed run id 20261203T151833Z-3754-qualified, file says 20261206T040000Z-1-qualified (a signed run under another folder name)")
	})

	signedMerge := func(t *testing.T) string {
		shardA := shardCopy(t, "a", "qualified", "junit-qualified.xml")
		shardB := shardCopy(t, "b", "second", "junit-second.xml")
		signShard(t, shardA, matrixMade, priv)
		signShard(t, shardB, matrixMade, priv)
		out := filepath.Join(t.TempDir(), "merged")
		_, err := merged.Merge(out, writeMatrix(t, qualifiedRow, secondRow, besideRow), inputs(t, shardA, shardB), Check)
		require.NoError(t, err)
		return out
	}
	checkMerged := func(dir string) error {
		rep := VerifyMerged(dir)
		rep.VerifySignatures(context.Background(), pub, "", true)
		return rep.Err()
	}
	t.Run("two shard folders swapped", func(t *testing.T) {
		out := signedMerge(t)
		require.NoError(t, checkMerged(out))
		var m merged.Manifest
		readJSONFile(t, filepath.Join(out, merged.ManifestFile), &m)
		a, b := m.Shards[0], m.Shards[1]
		tmp := filepath.Join(out, "swap")
		require.NoError(t, os.Rename(filepath.Join(out, merged.ShardsDir, a.Name), tmp))
		require.NoError(t, os.Rename(filepath.Join(out, merged.ShardsDir, b.Name), filepath.Join(out, merged.ShardsDir, a.Name)))
		require.NoError(t, os.Rename(tmp, filepath.Join(out, merged.ShardsDir, b.Name)))
		a.Name, b.Name = b.Name, a.Name
		a.Dir, a.JUnit = merged.ShardPaths(a.Name, a.RunID)
		b.Dir, b.JUnit = merged.ShardPaths(b.Name, b.RunID)
		m.Shards = []merged.Shard{b, a}
		manifest, err := json.MarshalIndent(m, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(out, merged.ManifestFile), append(manifest, '\n'), 0o644))
		rerenderMerged(t, out)
		resumMerged(t, out)
		failsWith(t, checkMerged(out),
			"shards/a/20261203T151857Z-5216-second/run.json: shard answers the matrix: evidence says a run begun after the matrix was made, signed (if signed) for this shard, entry and matrix, file says shard a holds a run signed as shard b",
			"file says shard b holds a run signed as shard a")
	})
	t.Run("a shard replaced by an earlier signed run of its row", func(t *testing.T) {
		out := signedMerge(t)
		// The row's run as an earlier CI run signed it, for its own matrix, in shard a's place.
		signShard(t, filepath.Join(out, merged.ShardsDir, "a"), matrixMade.Add(-24*time.Hour), priv)
		resumMerged(t, out)
		failsWith(t, checkMerged(out),
			"shards/a/20261203T151833Z-3754-qualified/run.json: shard answers the matrix: evidence says a run begun after the matrix was made, signed (if signed) for this shard, entry and matrix, file says shard a: its run was signed answering the matrix made 2026-11-30T00:00:00Z, this one was made 2026-12-01T00:00:00Z")
	})
}
