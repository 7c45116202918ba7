package evidencecheck

import (
	"fmt"
	"path"

	"qualkit/internal/attest"
	"qualkit/internal/merged"
)

// checkMergedVersion: from version 2 each shard's recorded signature state is what its
// folder holds, so PR.md can neither call an unsigned shard signed nor hide one.
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
