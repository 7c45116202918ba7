package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/synthetic is a made-up checkout with one profile per situation the
// classification must tell apart.
const syntheticCheckout = "testdata/synthetic"

func loadSynthetic(t *testing.T) *Inventory {
	t.Helper()
	inv, err := Load(syntheticCheckout)
	require.NoError(t, err)
	return inv
}

func TestClassifySynthetic(t *testing.T) {
	got := byProfile(loadSynthetic(t))
	tests := []struct {
		profile   string
		class     Class
		workload  string
		variantOf string
		reason    []string // substrings: the fields that decided it
	}{
		{"edit-full", Full, WorkloadImageEdit, "",
			[]string{`task_mode "edit" (testcase)`, `test_image "data/ref.png"`, "file found", "variants: edit-full-fp8, edit-full-tp2"}},
		{"edit-full-fp8", Variant, WorkloadImageEdit, "edit-full",
			[]string{"another layout of edit-full", `quantization "fp8" vs none`}},
		{"edit-full-tp2", Variant, WorkloadImageEdit, "edit-full",
			[]string{"another layout of edit-full", `parallel layout "tp2" vs one device`, `precision unset vs "bf16"`}},
		{"edit-full-l0", Partial, WorkloadImageEdit, "",
			[]string{`ci_tier "l0_only"`, `trace_id "IT-E2E-EDIT-L0-01" carries "L0"`}},
		{"edit-tiny-random", Partial, WorkloadImageEdit, "",
			[]string{`hf_id "acme/tiny-random-edit" names random weights`}},
		{"edit-no-image", Gap, WorkloadImageEdit, "",
			[]string{"no usable reference image", `no "test_image" on the testcase or manifest`}},
		{"edit-staged", Gap, WorkloadImageEdit, "",
			[]string{"staged true (testcase)"}},
		{"edit-missing-file", Gap, WorkloadImageEdit, "",
			[]string{`test_image "data/absent.png"`, "neither the model directory nor the checkout root"}},
		{"edit-unlisted", Gap, WorkloadImageEdit, "",
			[]string{"edit-unlisted.json is not listed in MODEL.toml test_manifests"}},
		{"t2i", OutOfGroup, "text_to_image", "",
			[]string{`user_contract "text-to-image" (manifest)`, "task_mode unset", "named as l0_replacement by edit-no-image"}},
		{"i2v", OutOfGroup, "image_to_video", "",
			[]string{`user_contract "diffusion_video" with image input`}},
		{"chat", OutOfGroup, "text_generation_causal", "",
			[]string{`task_strategy "text_generation_causal"`, `user_contract "chat_response" (testcase)`}},
	}
	require.Len(t, got, len(tests), "every synthetic profile is in the table")
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			p, ok := got[tt.profile]
			require.True(t, ok, "profile %s not in the inventory", tt.profile)
			assert.Equal(t, tt.class, p.Class, p.Reason)
			assert.Equal(t, tt.workload, p.Workload)
			assert.Equal(t, tt.variantOf, p.VariantOf)
			assert.Contains(t, p.Reason, string(tt.class)+":")
			for _, s := range tt.reason {
				assert.Contains(t, p.Reason, s)
			}
		})
	}
}

func TestClassifySyntheticCounts(t *testing.T) {
	inv := loadSynthetic(t)
	assert.Equal(t, map[Class]int{Full: 1, Partial: 2, Gap: 4, Variant: 2, OutOfGroup: 3}, inv.Counts())
}

func TestClassifySyntheticFieldsFromManifestAndMetadata(t *testing.T) {
	p := byProfile(loadSynthetic(t))["edit-full"]
	assert.Equal(t, "1111111111111111111111111111111111111111", p.Revision, "revision from hf-model-metadata.json")
	assert.Equal(t, "bf16", p.Precision)
	assert.Equal(t, "image-to-image", p.UserContract, "manifest user_contract when the testcase has none")
	assert.Equal(t, "nightly_only", p.CITier)
	assert.Equal(t, "diffusion_media_generation", p.NativeTask)
	assert.Equal(t, []string{"negative_prompt", "cfg_scale", "num_inference_steps"}, p.Controls,
		"video_height's default needs video_num_frames, which edit-full does not set")
	assert.Equal(t, "data/ref.png", p.ReferenceImage)

	tp := byProfile(loadSynthetic(t))["edit-tiny-random"]
	assert.Empty(t, tp.Revision, "no metadata entry: revision is empty")
}

func TestClassifySyntheticGolden(t *testing.T) {
	assertGolden(t, "synthetic.INVENTORY.md", markdown(t, loadSynthetic(t)))
}
