package evidencecheck

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"

	"qualkit/internal/attest"
	"qualkit/internal/merged"
)

// Signed is one signed folder: the run, or in a merged run each shard (and itself).
type Signed struct {
	Dir    string // relative to the checked folder; "." is the folder itself
	Result attest.Result
}

// VerifySignatures checks the attestation (attest.File) of the run, or of each shard.
// With pub every folder must carry a signature it verifies; with pub nil it only
// records which are signed, unless strict (`make check-evidence STRICT=1`).
func (r *Report) VerifySignatures(ctx context.Context, pub []byte, junit string, strict bool) {
	type target struct{ dir, junit string }
	targets := []target{{".", junit}}
	if IsMerged(r.Dir) {
		targets = nil
		var m merged.Manifest
		if b, err := os.ReadFile(filepath.Join(r.Dir, merged.ManifestFile)); err == nil && json.Unmarshal(b, &m) == nil {
			for _, s := range m.Shards {
				targets = append(targets, target{s.Dir, filepath.Join(r.Dir, filepath.FromSlash(s.JUnit))})
			}
		}
		if _, err := os.Stat(filepath.Join(r.Dir, attest.File)); err == nil {
			targets = append(targets, target{".", ""})
		}
	}
	for _, t := range targets {
		dir := filepath.Join(r.Dir, filepath.FromSlash(t.dir))
		file := path.Join(t.dir, attest.File)
		res := attest.Inspect(dir)
		if pub != nil && res.Signed {
			res = attest.Verify(ctx, dir, t.junit, pub)
		}
		r.Signatures = append(r.Signatures, Signed{Dir: t.dir, Result: res})
		for _, p := range res.Problems {
			r.Problems = append(r.Problems, Problem{File: file, Claim: p.Claim, Evidence: p.Evidence, Got: p.Got})
		}
		r.Claims++
		switch {
		case res.Verified:
		case pub != nil && !res.Signed:
			// A key given is a signature required.
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "a signed attestation that verifies with the given public key (-pubkey: a key given means a signature is required)", Got: "missing (unsigned)"})
		case !strict:
		case !res.Signed:
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "a signed attestation (strict: make qual SIGN_KEY=..., or QUALKIT_SIGNING_KEY)", Got: "missing (unsigned)"})
		case pub == nil:
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "verified with the signer's public key (strict: give -pubkey)", Got: "not verified: no key given"})
		}
	}
}

func (r *Report) SignatureSummary() []string {
	var out []string
	for _, s := range r.Signatures {
		out = append(out, path.Join(s.Dir, attest.File)+": "+s.Result.Summary())
	}
	return out
}
