//go:build trtmcdata

// These tests read real TRTMC data: a checkout (or its data-only copy, such as
// shared/trtmc-main-e9132e79) named by QUALKIT_TRTMC_DATA. They are built only with
// -tags trtmcdata (`make test TRTMC=DIR`); without the tag they are not compiled, so a
// clone with nothing beside it runs no test that needs what it lacks.
package inventory

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// realCheckout is the TRTMC data of main e9132e79 that QUALKIT_TRTMC_DATA names. Built
// with the tag, it is required: without it these tests fail, never skip.
func realCheckout(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QUALKIT_TRTMC_DATA")
	require.NotEmpty(t, dir, "built with -tags trtmcdata: set QUALKIT_TRTMC_DATA to TRTMC main e9132e79's data (make test TRTMC=DIR)")
	_, err := os.Stat(dir)
	require.NoError(t, err, "QUALKIT_TRTMC_DATA=%s", dir)
	return dir
}

func loadReal(t *testing.T) *Inventory {
	t.Helper()
	inv, err := Load(realCheckout(t))
	require.NoError(t, err)
	return inv
}

func TestRealCheckoutImageEditGroupIsOneFullCheckpoint(t *testing.T) {
	inv := loadReal(t)
	group := inv.Group()
	require.Len(t, group, 1, "image-edit group: %v", group)
	p := group[0]
	assert.Equal(t, "qwen-image-edit-2511", p.Profile)
	assert.Equal(t, Full, p.Class)
	assert.Equal(t, WorkloadImageEdit, p.Workload)
	assert.Equal(t, "Qwen/Qwen-Image-Edit-2511", p.HFID)
	assert.Equal(t, "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9", p.Revision)
	assert.Equal(t, "qwen_image", p.Family)
	assert.Equal(t, "bf16", p.Precision)
	assert.Equal(t, "image-to-image", p.UserContract)
	assert.Equal(t, "edit", p.TaskMode)
	assert.Equal(t, "nightly_only", p.CITier)
	assert.Equal(t, "diffusion_media_generation", p.NativeTask)
	assert.Equal(t, "data/test_img.jpeg", p.ReferenceImage)
	assert.Equal(t, []string{"image_height", "image_width", "video_num_frames", "video_height", "video_width",
		"negative_prompt", "cfg_scale", "height", "width", "num_inference_steps"}, p.Controls)
	assert.Equal(t, Planned, p.Status, "no qual row is given to Load")
	assert.Contains(t, p.Reason, `task_mode "edit"`)
	assert.Contains(t, p.Reason, `test_image "data/test_img.jpeg"`)
}

func TestRealCheckoutCountsPerClass(t *testing.T) {
	inv := loadReal(t)
	assert.Equal(t, map[Class]int{Full: 1, Partial: 0, Gap: 0, Variant: 0, OutOfGroup: 259}, inv.Counts())
	assert.Len(t, inv.Profiles, 260)
}

func TestRealCheckoutEveryProfileHasClassReasonAndStatus(t *testing.T) {
	inv := loadReal(t)
	seen := map[string]bool{}
	for _, p := range inv.Profiles {
		assert.False(t, seen[p.Profile], "profile %s listed twice", p.Profile)
		seen[p.Profile] = true
		assert.Contains(t, Classes, p.Class, p.Profile)
		assert.NotEmpty(t, p.Reason, p.Profile)
		assert.Contains(t, p.Reason, string(p.Class), "%s: the reason starts from its class", p.Profile)
		assert.NotEmpty(t, p.Workload, p.Profile)
		assert.NotEmpty(t, p.Family, p.Profile)
		assert.Contains(t, []Status{Planned, Implemented, FamilyValidated, AIPerfQualified}, p.Status, p.Profile)
	}
}

// The edit checkpoint's premerge stand-in is a text-to-image profile: it must stay out
// of the group, and say why.
func TestRealCheckoutL0StandInOfTheEditIsOutOfGroup(t *testing.T) {
	p := byProfile(loadReal(t))["qwen-image-l0"]
	assert.Equal(t, OutOfGroup, p.Class)
	assert.Equal(t, "text_to_image", p.Workload)
	assert.Contains(t, p.Reason, "named as l0_replacement by qwen-image-edit-2511")
}

func TestRealCheckoutJSONHasTheContractKeys(t *testing.T) {
	inv := loadReal(t)
	var b bytes.Buffer
	require.NoError(t, inv.WriteJSON(&b))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &rows))
	require.Len(t, rows, len(inv.Profiles))
	keys := []string{"profile", "hf_id", "family", "revision", "precision", "user_contract", "task_mode",
		"ci_tier", "native_task", "operation", "controls", "supported_controls", "workload", "class", "reason", "status"}
	for _, r := range rows {
		for _, k := range keys {
			assert.Contains(t, r, k, "profile %v", r["profile"])
		}
		assert.IsType(t, []any{}, r["controls"], "controls is a list, never null: %v", r["profile"])
		assert.Equal(t, "not declared", r["supported_controls"], "no family declares its controls yet: %v", r["profile"])
	}
}

func TestRealCheckoutMarkdownGolden(t *testing.T) {
	assertGolden(t, "trtmc-main-e9132e79.INVENTORY.md", markdown(t, loadReal(t)))
}

// The real data against today's qual/: the Qwen row does not exist yet, and the check
// must say exactly that.
func TestReconcileRealCheckoutWithoutAQwenRow(t *testing.T) {
	inv := loadReal(t)
	err := Reconcile(inv.Profiles, []QualRow{{Test: "TestRefEdit", Name: "refedit", Family: ReferenceFamily, Profile: "refedit-default"}}, ReferenceFamily)
	require.Error(t, err)
	assert.EqualError(t, err, `full profile "qwen-image-edit-2511" (Qwen/Qwen-Image-Edit-2511) has no qual row: add a row with Profile: "qwen-image-edit-2511"`)
	assert.NoError(t, Reconcile(inv.Profiles, []QualRow{{Name: "qwen", Family: "trtmc", Profile: "qwen-image-edit-2511"}}, ReferenceFamily))
}
