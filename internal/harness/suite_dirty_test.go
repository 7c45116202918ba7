package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/schema"
)

// A dirty run names what makes it dirty, the first few changes: a key or a matrix left
// in the tree is seen at once, not hunted for.
func TestDirtyReasonNamesTheChanges(t *testing.T) {
	r := dirtyReason(schema.Provenance{Commit: "abc", Dirty: true, Changes: []string{"?? ci.pem", "?? matrix.json"}})
	assert.Contains(t, r, "(abc: ?? ci.pem, ?? matrix.json)")
	r = dirtyReason(schema.Provenance{Commit: "abc", Dirty: true, Changes: []string{" M a", " M b", " M c", " M d", " M e", " M f", " M g"}})
	assert.Contains(t, r, "M e, and 2 more)")
}
