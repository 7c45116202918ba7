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

// Signed is what the signature check found, one entry per signed folder: the run, or
// in a merged run each shard (and the merged folder itself when it was signed).
type Signed struct {
	Dir    string // relative to the checked folder; "." is the folder itself
	Result attest.Result
}

// VerifySignatures checks the attestation (attest.File) of the run folder, or of every
// shard of a merged run, with the PEM public key pub; junit is the run's JUnit file
// ("" when not given; a merged run knows its shards'). With pub given, every folder
// must carry a signature that verifies with it: an unsigned one (or one whose
// attestation was stripped), or one signed by another key, is a problem. With pub nil
// it only records whether each folder is signed, unless strict: then an unsigned or
// unverified folder is a problem (`make check-evidence STRICT=1`).
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
			// A key given is a signature required: an unsigned folder, or one whose
			// attestation was removed after an edit, is no run that key vouches for.
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "a signed attestation that verifies with the given public key (-pubkey: a key given means a signature is required)", Got: "missing (unsigned)"})
		case !strict:
		case !res.Signed:
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "a signed attestation (strict: make qual SIGN_KEY=..., or QUALKIT_SIGNING_KEY)", Got: "missing (unsigned)"})
		case pub == nil:
			r.Problems = append(r.Problems, Problem{File: file, Claim: "signature", Evidence: "verified with the signer's public key (strict: give -pubkey)", Got: "not verified: no key given"})
		}
	}
}

// SignatureSummary is one line per signed folder, for the command's output.
func (r *Report) SignatureSummary() []string {
	var out []string
	for _, s := range r.Signatures {
		out = append(out, path.Join(s.Dir, attest.File)+": "+s.Result.Summary())
	}
	return out
}
