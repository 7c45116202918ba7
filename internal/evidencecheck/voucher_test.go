package evidencecheck_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/junitfix"
	"qualkit/internal/report"
	"qualkit/internal/runarchive/runstest"
	"qualkit/internal/schema"
)

// A bundle another run built is reused only when that run vouches for it
// (report.Evidence.Vouch, what the harness's Reporter does before a reuse): the real
// checker, with the anchor make qual keeps beside the run and its signature by the
// configured key. With no key configured no run vouches, not even a genuine one: a
// planter on the machine rewrites the JUnit beside a forged run as easily as the run
// (below, the forgery that passes every unsigned check). A voucher forged with qualkit's
// own code (the bundle's sha256 edited everywhere, every derived file and list
// regenerated) checks without the anchor, and vouches for nothing with the key.
func TestAForgedVoucherVouchesForNothing(t *testing.T) {
	const row = "refedit-v1"
	run := voucherRun(t)
	junit := report.JUnitBeside(run)
	fixed := anchoredJUnit(t, run, false)
	require.NoError(t, os.WriteFile(junit, anchoredJUnit(t, run, true), 0o644))
	require.NoError(t, evidencecheck.VerifyWith(run, evidencecheck.Options{JUnit: junit, RequireRunAnchor: true}).Err(), "the run as make qual left it checks with its anchor")
	require.ErrorContains(t, report.Evidence{}.Vouch(run), "no signing key is configured (QUALKIT_SIGNING_KEY)", "no key: no run vouches")

	priv, pub, err := attest.GenerateKey()
	require.NoError(t, err)
	signed := report.Evidence{Key: pub}
	require.NoError(t, os.Remove(junit))
	require.ErrorContains(t, signed.Vouch(run), "its JUnit file, which anchors it, is not beside it")
	require.NoError(t, os.WriteFile(junit, fixed, 0o644))
	require.ErrorContains(t, signed.Vouch(run), "qualkit.run_sha256sums: evidence says", "a JUnit that does not anchor the run")
	require.NoError(t, os.WriteFile(junit, anchoredJUnit(t, run, true), 0o644))
	require.ErrorContains(t, signed.Vouch(run), "a key given means a signature is required", "unsigned, with a key configured")
	_, err = attest.Sign(context.Background(), run, junit, priv)
	require.NoError(t, err)
	require.NoError(t, signed.Vouch(run), "signed by the configured key")

	// The planted bundle's sha256, in every file of the run that states it.
	const builtSHA = "8be1439b9a1df0890a399e2f69c4d1451af8de690fd05a81dabefc04ddcb0eb8"
	const planted = "0badc0de0badc0de0badc0de0badc0de0badc0de0badc0de0badc0de0badc0d"
	editJSON(t, filepath.Join(run, row, "build/bundle.json"), func(d map[string]any) { d["sha256"] = planted })
	editJSON(t, filepath.Join(run, row, "correctness/artifacts/result.json"), func(d map[string]any) {
		b := d["bundle"].(map[string]any)
		b["sha256_before"], b["sha256_after"] = planted, planted
	})
	result, err := os.ReadFile(filepath.Join(run, row, "correctness/artifacts/result.json"))
	require.NoError(t, err)
	editJSON(t, filepath.Join(run, row, schema.ResultsFile), func(d map[string]any) {
		d["bundle"].(map[string]any)["sha256"] = planted
		for _, a := range d["correctness"].(map[string]any)["artifacts"].([]any) {
			if m := a.(map[string]any); m["path"] == "correctness/artifacts/result.json" {
				m["sha256"] = sha(result)
			}
		}
	})
	evidencecheck.Forge(t, run)
	require.NoError(t, evidencecheck.Check(run, ""), "without its anchor the forged voucher checks")
	err = signed.Vouch(run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "SHA256SUMS: sha256 of the run's checksum list: evidence says ")
	assert.Contains(t, err.Error(), "qualkit.run_sha256sums)")

	// The planter rewrites the JUnit beside it too (it lies on the same machine): the
	// anchors then agree with the forgery, and only the signature is left to catch it.
	forged := strings.NewReplacer(rowListSHA(t, voucherRun(t), row), rowListSHA(t, run, row), builtSHA, planted).Replace(string(anchoredJUnit(t, run, true)))
	require.NoError(t, os.WriteFile(junit, []byte(forged), 0o644))
	require.NoError(t, evidencecheck.VerifyWith(run, evidencecheck.Options{JUnit: junit, RequireRunAnchor: true}).Err(),
		"a JUnit rewritten on the same machine anchors the forgery: why no key means no voucher")
	require.ErrorContains(t, report.Evidence{}.Vouch(run), "no signing key is configured", "the forged voucher, no key configured")
	err = signed.Vouch(run)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "attestation.dsse.json")
}

// voucherRun is a copy of the committed qualified run in a folder of its own, as a
// finished run of another process lies beside the next one's.
func voucherRun(t *testing.T) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-qualified"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	dst := filepath.Join(t.TempDir(), filepath.Base(m[0]))
	require.NoError(t, os.CopyFS(dst, os.DirFS(m[0])))
	return dst
}

// anchoredJUnit is the run's JUnit as make qual keeps it: fixed by junitfix and, with
// anchor, carrying the run's anchor (the sha256 of its SHA256SUMS as it is now).
func anchoredJUnit(t *testing.T, run string, anchor bool) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "junit-qualified.xml"))
	require.NoError(t, err)
	fixed, err := junitfix.Fix(raw)
	require.NoError(t, err)
	if !anchor {
		return fixed
	}
	sums, err := os.ReadFile(filepath.Join(run, schema.ChecksumFile))
	require.NoError(t, err)
	var info schema.RunInfo
	b, err := os.ReadFile(filepath.Join(run, schema.RunFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &info))
	out, err := junitfix.AnchorRun(fixed, info.RunID, sha(sums))
	require.NoError(t, err)
	return out
}

// rowListSHA is the sha256 of a row's SHA256SUMS: its report case's qualkit.sha256sums.
func rowListSHA(t *testing.T, run, row string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, row, schema.ChecksumFile))
	require.NoError(t, err)
	return sha(b)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	edit(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(out, '\n'), 0o644))
}
