//go:build trtmcdata

package qwenimage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/trtmc"
)

// TRTMC main e9132e79's real data (QUALKIT_TRTMC_DATA, e.g. shared/trtmc-main-e9132e79,
// a data-only copy): its layout is detected, its manifest agrees with the row, and the
// build the adapter derives from its own manifest and MODEL.toml is the one TRTMC's e2e
// orchestrator runs for the profile. Built only with -tags trtmcdata (`make test
// TRTMC=DIR`); then the data is required, never skipped.
func TestTheRealE9132e79Data(t *testing.T) {
	data := os.Getenv("QUALKIT_TRTMC_DATA")
	require.NotEmpty(t, data, "built with -tags trtmcdata: set QUALKIT_TRTMC_DATA (make test TRTMC=DIR)")
	dir, err := filepath.Abs(data)
	require.NoError(t, err)
	l, err := DetectLayout(dir)
	require.NoError(t, err)
	assert.Equal(t, LayoutE9132e79, l.Name)
	m, err := ReadManifest(dir, l)
	require.NoError(t, err)
	assert.Empty(t, checkManifest(m, l, trtmc.ReadTasks(dir)))
	args, env, err := buildArgs(dir, l, m, "/e/qwen-image-edit-2511.bundle", "/a/build_timing.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "tensorrt_model_connect.__main__", "build", HFID, "-o", "/e/qwen-image-edit-2511.bundle",
		"--max-cache-length", "256", "--model-revision", Revision,
		"--image-height", "1024", "--image-width", "1024", "--video-height", "480", "--video-width", "832", "--video-num-frames", "1",
		"--num-inference-steps", "20", "--precision", "bf16", "--build-timing-json", "/a/build_timing.json"}, args)
	assert.Equal(t, []string{conditionEnv + "=" + filepath.Join(dir, "tests/e2e/models/qwen_image/data/test_img.jpeg")}, env)
	img, err := m.conditionImage(dir, l)
	require.NoError(t, err)
	w, h, err := imageSize(img)
	require.NoError(t, err)
	assert.Equal(t, [2]int{640, 382}, [2]int{w, h}, "TRTMC's test photo fixes the condition grid the workload is pinned to")
	th, err := ReadThresholds(dir, l)
	require.NoError(t, err)
	assert.Equal(t, 12.0, th["psnr"], "the gates are read from the checkout, never kept here")

	// The quality stage's pair: the workload's first pair is the case's own (its prompt,
	// the photo decoded from this very JPEG, its settings), held against hf_frames.
	spec, err := qualityOf(New(Config{Checkout: dir}), family.Env{Root: repoRoot}, rowOf(row()))
	require.NoError(t, err)
	require.NotNil(t, spec.Pair)
	assert.Equal(t, "photo-640x382.png", filepath.Base(spec.Pair.Image))
	assert.Equal(t, Profile+"/hf_frames/frame_0000.png", spec.Pair.Reference)
}
