package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shaped e9132e79 tree: one full edit checkpoint, its text-to-image premerge
// stand-in and a text model out of the group, each saying why.
func TestShapedCheckoutImageEditGroupIsOneFullCheckpoint(t *testing.T) {
	inv, err := Load(shapedCheckout)
	require.NoError(t, err)
	group := inv.Group()
	require.Len(t, group, 1, "image-edit group: %v", group)
	p := group[0]
	assert.Equal(t, "qwen-image-edit-2511", p.Profile)
	assert.Equal(t, Full, p.Class)
	assert.Equal(t, "Qwen/Qwen-Image-Edit-2511", p.HFID)
	assert.Equal(t, "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9", p.Revision)
	assert.Equal(t, "edit", p.TaskMode)
	assert.Equal(t, "data/test_img.jpeg", p.ReferenceImage)
	assert.Equal(t, map[Class]int{Full: 1, Partial: 0, Gap: 0, Variant: 0, OutOfGroup: 2}, inv.Counts())
	l0 := byProfile(inv)["qwen-image-l0"]
	assert.Equal(t, OutOfGroup, l0.Class)
	assert.Contains(t, l0.Reason, "named as l0_replacement by qwen-image-edit-2511")
}
