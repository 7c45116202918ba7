package evidencecheck

import (
	"fmt"
	"path"

	"qualkit/internal/attest"
	"qualkit/internal/merged"
)

// checkMergedVersion: merged.json is of a version this checker renders, and from version
// 2 on each shard's recorded signature state (signed or not, the key its envelope names)
// is what the shard's folder holds, so PR.md cannot call an unsigned shard signed, nor
// hide one.
func (c *checker) checkMergedVersion(m merged.Manifest) {
	c.truth(m.Version <= merged.Version, merged.ManifestFile, "version", fmt.Sprintf("at most %d (this checker's merged runs)", merged.Version), fmt.Sprint(m.Version))
	if m.Version < 2 {
		return
	}
	for _, s := range m.Shards {
		if !cleanUnder(s.Dir, merged.ShardsDir) {
			continue // checkShard reported it
		}
		got := attest.Inspect(c.path(s.Dir))
		src := path.Join(s.Dir, attest.File)
		c.same(merged.ManifestFile, "shard "+s.Name+" signed", fmt.Sprint(got.Signed), fmt.Sprint(s.Signed), src)
		c.same(merged.ManifestFile, "shard "+s.Name+" key_id", got.KeyID, s.KeyID, src)
	}
}
