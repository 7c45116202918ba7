package qwenimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/judge"
	"qualkit/internal/wire"
)

// The TRTMC row's quality criteria are the checkout's thresholds, and its pair is the
// case's own: found in the workload by the case's prompt and the pool record of the photo
// decoded from the case's test image, with the case's settings.
func TestQualityReadsTRTMCsOwnCriteriaAndPair(t *testing.T) {
	dir := checkout(t, LayoutFamilies)
	spec, err := qualityOf(New(Config{Checkout: dir}), rootEnv(t), rowOf(row()))
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "families/qwen_image/tests/thresholds/qwen-image-edit-2511.json")}, spec.Files)
	c := spec.Criteria
	assert.Equal(t, []float64{0.15, 0.85, 0.05, 12, 0.1, 0.35, 0.08},
		[]float64{*c.MeanMin, *c.MeanMax, *c.StdMin, *c.PSNRMin, *c.SSIMMin, *c.RefStdRatioMin, c.RefStdRatioWhenRefStd})
	assert.Nil(t, c.StdRatioMin, "TRTMC's ratio is to the reference image, not to the input")
	require.NotNil(t, spec.Pair)
	assert.Equal(t, "photo-640x382.png", filepath.Base(spec.Pair.Image))
	assert.Equal(t, "Turn the image into a watercolor illustration while preserving the main subject.", spec.Pair.Prompt)
	assert.Equal(t, Profile+"/reference-000.png", spec.Pair.Reference)
}

func TestQualityRefusesAWorkloadWithoutTheCasesPair(t *testing.T) {
	manifest := "families/qwen_image/tests/manifests/qwen-image-edit-2511.json"
	for name, tc := range map[string]struct {
		edit func(dir string)
		want string
	}{
		"another prompt": {func(dir string) {
			replaceIn(t, filepath.Join(dir, manifest), "Turn the image into a watercolor", "Turn the image into an oil")
		},
			"no pair of fixtures/qwen_image_edit/manifest.json is the correctness case's own"},
		"another test image": {func(dir string) {
			writeFile(t, filepath.Join(dir, "families/qwen_image/tests/data/test_img.jpeg"), "\xff\xd8 another photo")
		}, "an image whose pool record names data/test_img.jpeg sha256"},
		"another seed": {func(dir string) { replaceIn(t, filepath.Join(dir, manifest), `"seed": 42`, `"seed": 7`) },
			`settings are not the correctness case's (families/qwen_image/tests/manifests/qwen-image-edit-2511.json): seed "42", the case 7`},
		"another negative prompt": {func(dir string) {
			replaceIn(t, filepath.Join(dir, manifest), `"negative_prompt": " "`, `"negative_prompt": "blurry"`)
		},
			`negative_prompt " ", the case "blurry"`},
		"a criterion missing": {func(dir string) {
			replaceIn(t, filepath.Join(dir, "families/qwen_image/tests/thresholds/qwen-image-edit-2511.json"), `"psnr"`, `"psnr_old"`)
		}, "TRTMC thresholds families/qwen_image/tests/thresholds/qwen-image-edit-2511.json: no psnr"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := checkout(t, LayoutFamilies)
			tc.edit(dir)
			_, err := qualityOf(New(Config{Checkout: dir}), rootEnv(t), rowOf(row()))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// qualkit's e9132e79-shaped tree has a photo and prompt of its own: no pair.
	_, err := qualityOf(New(Config{Checkout: checkout(t, LayoutE9132e79)}), rootEnv(t), rowOf(row()))
	require.ErrorContains(t, err, "the reference criteria could not be applied")
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// The rules this package declares for the checker (Rules) are its layout
// table's: each layout's pair reference and formula, the diffusers case's CPU image; a
// layout it does not know has no reference and a formula no row names.
func TestPairReferenceIsTheCheckersRule(t *testing.T) {
	trtmc, ok := judge.Find(Rules, BackendTRTMC)
	require.True(t, ok)
	for _, l := range layouts {
		assert.Equal(t, l.PairReference, trtmc.PairReference(l.Name, Profile), l.Name)
		assert.Equal(t, l.PairMetric, trtmc.PairMetric(l.Name), l.Name)
	}
	assert.Empty(t, trtmc.PairReference("other", Profile))
	assert.Contains(t, trtmc.PairMetric("other"), "the metric of a TRTMC layout")
	diffusers, ok := judge.Find(Rules, BackendDiffusers)
	require.True(t, ok)
	spec, err := qualityOf(smokeAdapter(), rootEnv(t), rowOf(row()))
	require.NoError(t, err)
	require.NotNil(t, spec.Pair)
	assert.Equal(t, spec.Pair.Reference, diffusers.PairReference("", ""))
	assert.Empty(t, diffusers.PairMetric(""))
}

// On perf-serve in the families layout the pair replays the case's own noise: its
// requests carry latent_seed, and the pair names the case's noise file and where the
// records state the served noise; the edit route (no latent replay) keeps the statement
// that the noise differs.
func TestQualityPairReplaysTheCasesNoiseOnPerfServe(t *testing.T) {
	perf := New(Config{Checkout: checkout(t, LayoutFamilies)})
	assert.Equal(t, wire.Task{LatentSeed: true}, perf.protocol())
	spec, err := qualityOf(perf, rootEnv(t), rowOf(row()))
	require.NoError(t, err)
	assert.Equal(t, "basetemp/test_official_checkpoint_e2e*/initial-latents.raw", spec.Pair.CaseLatents)
	assert.Equal(t, "observation.initial_latents_sha256", spec.Pair.ServedLatents)
	assert.Contains(t, spec.Pair.Noise, "same: the request carries latent_seed 42")

	edit := New(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute)})
	assert.Equal(t, wire.OpenAI{}, edit.protocol())
	spec, err = qualityOf(edit, rootEnv(t), rowOf(row()))
	require.NoError(t, err)
	assert.Empty(t, spec.Pair.CaseLatents)
	assert.Equal(t, pairNoise, spec.Pair.Noise)
}
