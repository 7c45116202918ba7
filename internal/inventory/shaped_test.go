package inventory

import (
	"os"
	"path/filepath"
	"strings"
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

// The shaped families-layout tree: no MODEL.toml; the manifest's task names the
// workload, its hf_revision the revision, the testcase's test_image the reference image.
func TestShapedFamiliesCheckout(t *testing.T) {
	inv, err := Load("../trtmc/testdata/families")
	require.NoError(t, err)
	ps := byProfile(inv)
	p := ps["qwen-image-edit-2511"]
	assert.Equal(t, Full, p.Class, p.Reason)
	assert.Contains(t, p.Reason, `editing declared by task "image_edit" (manifest)`)
	assert.Equal(t, "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9", p.Revision, "from the manifest's hf_revision")
	assert.Equal(t, "data/test_img.jpeg", p.ReferenceImage)
	assert.Equal(t, "families/qwen_image/tests/manifests/qwen-image-edit-2511.json", p.Manifest)
	gap := ps["flux-kontext-dev"]
	assert.Equal(t, Gap, gap.Class)
	assert.Contains(t, gap.Reason, `skip "staged for the next phase" (testcase)`)
	assert.Equal(t, OutOfGroup, ps["qwen-image-l0"].Class)
	assert.Contains(t, ps["qwen-image-l0"].Reason, `task "image_generation"`)
	assert.Equal(t, OutOfGroup, ps["tiny-chat"].Class)
	assert.Equal(t, map[Class]int{Full: 1, Partial: 0, Gap: 1, Variant: 0, OutOfGroup: 2}, inv.Counts())
}

// A skip marker that carries a reason instead of true makes the profile a gap, in
// either layout; false does not.
func TestSkipMarkerWithAReasonIsAGap(t *testing.T) {
	for value, want := range map[string]Class{`"staged for the next phase"`: Gap, `true`: Gap, `"yes"`: Gap, `false`: Full, `"false"`: Full, `""`: Full} {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(shapedCheckout)))
		p := filepath.Join(dir, "tests/e2e/models/qwen_image/manifests/qwen-image-edit-2511.json")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), `"task_mode": "edit",`, `"task_mode": "edit", "skip": `+value+`,`, 1)), 0o644))
		inv, err := Load(dir)
		require.NoError(t, err)
		got := byProfile(inv)["qwen-image-edit-2511"]
		assert.Equal(t, want, got.Class, "skip %s: %s", value, got.Reason)
	}
}
