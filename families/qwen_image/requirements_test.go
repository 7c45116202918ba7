package qwenimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

// shapedCheckout is a TRTMC-shaped tree of the e9132e79 layout that qualkit writes
// itself (schema facts only): a checkout without build/, tests' code, Dockerfile or venv.
// TRTMC's real data is read by requirements_real_test.go (-tags trtmcdata).
const shapedCheckout = "../../internal/trtmc/testdata/e9132e79"

const repoRoot = "../.."

func row() harness.Checkpoint {
	return harness.Checkpoint{Name: "qwen-image-edit-2511", Family: "qwen_image", Model: HFID, Profile: Profile, Revision: Revision,
		Fixtures: "fixtures/qwen_image_edit/manifest.json"}
}

func rootEnv(t *testing.T) harness.Env {
	return harness.Env{Root: repoRoot, Work: t.TempDir()}
}

func whats(reqs []harness.Requirement) []string {
	out := make([]string, len(reqs))
	for i, q := range reqs {
		out[i] = q.What
	}
	return out
}

// requireFixes checks the contract every requirement keeps: it says what and how to fix it.
func requireFixes(t *testing.T, reqs []harness.Requirement) {
	t.Helper()
	for _, q := range reqs {
		assert.NotEmpty(t, q.What)
		assert.NotEmpty(t, q.Fix, "no fix for %q", q.What)
	}
}

func TestRequirementsWithNothingConfigured(t *testing.T) {
	hf := t.TempDir()
	reqs := New(Config{HFHome: hf}).Requirements(rootEnv(t), row())
	requireFixes(t, reqs)
	snap := filepath.Join(hf, "hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9")
	assert.Equal(t, []string{
		"TRTMC checkout: QUALKIT_TRTMC_DIR is not set (it provides build/trtmc, the correctness case, and the family's manifest and thresholds)",
		"python for TRTMC's correctness case (pytest) and its HF diffusers reference (--hf-python): neither QUALKIT_TRTMC_PYTHON nor QUALKIT_TRTMC_HF_PYTHON is set, and there is no TRTMC checkout to find .venv/bin/python in",
		"serving image: QUALKIT_TRTMC_IMAGE is not set and, without a TRTMC checkout, there is no Dockerfile to build it from",
		"checkpoint Qwen/Qwen-Image-Edit-2511 at revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9 is not in the Hugging Face cache " + hf + " (no " + snap + "/model_index.json)",
	}, whats(reqs))
	for _, q := range reqs {
		assert.True(t, q.Absent, "%q is a host piece", q.What)
	}
	assert.Contains(t, reqs[0].Fix, "git clone https://github.com/NVIDIA/TensorRT-Model-Connect.git trtmc")
	assert.Contains(t, reqs[3].Fix, "HF_HOME="+hf+" hf download Qwen/Qwen-Image-Edit-2511 --revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9")
	assert.Contains(t, reqs[3].Fix, "printf %s 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9 > "+hf+"/hub/models--Qwen--Qwen-Image-Edit-2511/refs/main")
}

func TestRequirementsOnAnEmptyCheckoutDir(t *testing.T) {
	dir, hf := t.TempDir(), t.TempDir()
	reqs := New(Config{Checkout: dir, HFHome: hf}).Requirements(rootEnv(t), row())
	requireFixes(t, reqs)
	got := whats(reqs)
	require.Len(t, got, 8, "%s", strings.Join(got, "\n"))
	assert.Equal(t, []string{
		"TRTMC checkout " + dir + " has no executable build/trtmc (it builds the bundle, and the correctness case runs it)",
		"TRTMC checkout " + dir + " has no tests/e2e/models/qwen_image/test_qwen_image_e2e.py (the family's correctness case)",
		"TRTMC checkout " + dir + " has no tests/e2e/models/qwen_image/MODEL.toml (the family's e2e definition)",
		"TRTMC checkout " + dir + " has no tests/e2e/models/qwen_image/manifests/qwen-image-edit-2511.json (the profile's manifest)",
		"TRTMC checkout " + dir + " has no tests/e2e/models/qwen_image/thresholds/qwen-image-edit-2511.json (the correctness case's quality gates)",
		"python for TRTMC's correctness case (pytest) and its HF diffusers reference (--hf-python) not found at " + dir + "/.venv/bin/python",
		"serving image: QUALKIT_TRTMC_IMAGE is not set and there is no Dockerfile at " + dir + "/Dockerfile to build it from",
	}, got[:7])
	assert.Contains(t, got[7], "is not in the Hugging Face cache", "one line for a checkpoint that is not there at all; its fix covers refs/main too")
}

// The shaped data-only checkout (qualkit's own tree of the e9132e79 layout) has the
// family's data and nothing to run: exactly the data items are present.
func TestRequirementsOnADataOnlyCheckout(t *testing.T) {
	dir, err := filepath.Abs(shapedCheckout)
	require.NoError(t, err)
	requireDataOnly(t, dir)
}

// requireDataOnly checks the requirements of a checkout that holds the family's data
// (MODEL.toml, manifest, thresholds, test photo) and nothing to run.
func requireDataOnly(t *testing.T, dir string) {
	t.Helper()
	hf := fakeHFCache(t)
	reqs := New(Config{Checkout: dir, HFHome: hf}).Requirements(rootEnv(t), row())
	requireFixes(t, reqs)
	assert.Equal(t, []string{
		"TRTMC checkout " + dir + " has no executable build/trtmc (it builds the bundle, and the correctness case runs it)",
		"TRTMC checkout " + dir + " has no tests/e2e/models/qwen_image/test_qwen_image_e2e.py (the family's correctness case)",
		"python for TRTMC's correctness case (pytest) and its HF diffusers reference (--hf-python) not found at " + dir + "/.venv/bin/python",
		"serving image: QUALKIT_TRTMC_IMAGE is not set and there is no Dockerfile at " + dir + "/Dockerfile to build it from",
	}, whats(reqs), "MODEL.toml, the manifest, the thresholds and the test photo are present, and the manifest agrees with the adapter")
	assert.Contains(t, reqs[1].Fix, "not a data-only copy")

	m, err := ReadManifest(dir)
	require.NoError(t, err)
	assert.Empty(t, checkManifest(m))
	tc, ok := m.Testcase()
	require.True(t, ok)
	assert.Equal(t, "data/test_img.jpeg", tc.TestImage)
	th, err := ReadThresholds(dir)
	require.NoError(t, err)
	assert.Contains(t, th, "psnr", "the gates are read from the checkout, never kept here")
}

func TestRequirementsAllPresent(t *testing.T) {
	cfg := fakeCheckout(t)
	cfg.HFHome = fakeHFCache(t)
	a := New(cfg)
	assert.Empty(t, a.Requirements(rootEnv(t), row()))

	withImage := cfg
	withImage.Image, withImage.Dockerfile = "trtmc-serve:local", "/nowhere/Dockerfile"
	assert.Empty(t, New(withImage).Requirements(rootEnv(t), row()), "a given image needs no Dockerfile")
}

func TestRequirementsReportsAConfigErrorAndARowMismatch(t *testing.T) {
	cfg := fakeCheckout(t)
	a := FromEnv(envOf(map[string]string{EnvCheckout: cfg.Checkout, EnvHFCache: fakeHFCache(t), EnvTimingSource: "header"}))
	c := row()
	c.Revision = "main"
	reqs := a.Requirements(rootEnv(t), c)
	requireFixes(t, reqs)
	require.Len(t, reqs, 2, "%v", whats(reqs))
	assert.Equal(t, `QUALKIT_TRTMC_TIMING_SOURCE="header": choose body or records`, reqs[0].What)
	assert.Contains(t, reqs[1].What, `row "qwen-image-edit-2511" names Qwen/Qwen-Image-Edit-2511 profile qwen-image-edit-2511 at revision "main"`)
	assert.False(t, reqs[0].Absent || reqs[1].Absent, "a wrong setting is never a skippable host piece")
}

func TestRequirementsManifestDisagreement(t *testing.T) {
	cfg := fakeCheckout(t)
	cfg.HFHome = fakeHFCache(t)
	path := filepath.Join(cfg.Checkout, manifestPath)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b = bytes.Replace(b, []byte(`"num_inference_steps": 20`), []byte(`"num_inference_steps": 30`), 1)
	b = bytes.Replace(b, []byte(`"max_cache_length": 256`), []byte(`"max_cache_length": 512`), 1)
	writeFile(t, path, string(b))
	reqs := New(cfg).Requirements(rootEnv(t), row())
	require.Len(t, reqs, 1)
	assert.Equal(t, "TRTMC manifest "+path+" disagrees with the bundle qualkit builds: build_args.max_cache_length is 512, the adapter builds 256; testcase num_inference_steps is 30, the adapter builds 20", reqs[0].What)
	assert.False(t, reqs[0].Absent)
}

func TestRequirementsCheckpointIncompleteOrAtAnotherRevision(t *testing.T) {
	cfg := fakeCheckout(t)
	cfg.HFHome = fakeHFCache(t)
	snap := SnapshotDir(cfg.HFHome)
	require.NoError(t, os.Remove(filepath.Join(snap, "transformer", "diffusion_pytorch_model-00002-of-00002.safetensors")))
	require.NoError(t, os.RemoveAll(filepath.Join(snap, "vae")))
	writeFile(t, filepath.Join(cfg.HFHome, "hub/models--Qwen--Qwen-Image-Edit-2511/refs/main"), "0000000000000000000000000000000000000000\n")
	reqs := New(cfg).Requirements(rootEnv(t), row())
	requireFixes(t, reqs)
	require.Len(t, reqs, 2, "%v", whats(reqs))
	assert.Equal(t, "checkpoint Qwen/Qwen-Image-Edit-2511 at revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9 is incomplete in "+snap+
		": 2 file(s) missing (transformer/diffusion_pytorch_model-00002-of-00002.safetensors, vae/)", reqs[0].What)
	assert.Contains(t, reqs[0].Fix, "finish the download (it resumes)")
	assert.Contains(t, reqs[1].What, `refs/main is "0000000000000000000000000000000000000000", not the pinned revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9`)
	assert.True(t, reqs[0].Absent && reqs[1].Absent)
}

func TestRequirementsDockerfileOutsideTheContext(t *testing.T) {
	cfg := fakeCheckout(t)
	cfg.HFHome = fakeHFCache(t)
	cfg.Dockerfile = filepath.Join(t.TempDir(), "Dockerfile")
	writeFile(t, cfg.Dockerfile, "FROM scratch\n")
	reqs := New(cfg).Requirements(rootEnv(t), row())
	require.Len(t, reqs, 1)
	assert.Contains(t, reqs[0].What, "is outside the build context, the TRTMC checkout")
}

func TestRequirementsWorkloadTheBundleCannotServe(t *testing.T) {
	cfg := fakeCheckout(t)
	cfg.HFHome = fakeHFCache(t)
	root := t.TempDir()
	writeFixtures(t, filepath.Join(root, "fx"), map[string][2]int{"a.png": {640, 382}, "b.png": {512, 512}},
		`{"size": "512x512", "seed": 1, "guidance_scale": 1.0}`)
	c := row()
	c.Fixtures = "fx/manifest.json"
	reqs := New(cfg).Requirements(harness.Env{Root: root}, c)
	requireFixes(t, reqs)
	assert.Equal(t, []string{
		"fx/manifest.json settings: setting(s) guidance_scale have no `trtmc run` flag (known: negative_prompt, true_cfg_scale, num_inference_steps, seed, size): the native Task would ignore them; drop them from the fixtures or map them in families/qwen_image/native.go",
		"fx/manifest.json settings: size 512x512, but the bundle is compiled for 1024x1024 output",
		"fx/manifest.json: reference image b.png is 512x512, but the bundle's condition image a.png is 640x382; a Qwen-Image-Edit-2511 bundle compiles a static VAE condition grid from its condition image, so it only serves reference images of that size, and qualkit does not resize them behind your back",
	}, whats(reqs))
	assert.Equal(t, "resize b.png to 640x382 yourself (and pin its new sha256, bytes and size in fx/manifest.json), or remove it from the workload", reqs[2].Fix)
}

func TestCheckConditionSize(t *testing.T) {
	fx, err := harness.LoadFixtures(filepath.Join(repoRoot, "fixtures/qwen_image_edit/manifest.json"))
	require.NoError(t, err)
	assert.Empty(t, CheckConditionSize("fixtures/qwen_image_edit/manifest.json", fx), "the shipped workload fits the bundle")
	assert.Equal(t, "photo-640x382.png", fx.Pairs[0].Image, "the condition image is TRTMC's test photo")

	dir := filepath.Join(t.TempDir(), "fx")
	writeFixtures(t, dir, map[string][2]int{"a.png": {1024, 768}, "b.png": {1024, 768}, "c.png": {640, 382}}, `{"size": "1024x1024"}`)
	fx, err = harness.LoadFixtures(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	errs := CheckConditionSize("fx/manifest.json", fx)
	require.Len(t, errs, 2)
	assert.EqualError(t, errs[0], "fx/manifest.json: the condition image a.png (the first pair's) is 1024x768, but the adapter builds for 640x382, the size of TRTMC's test photo that the correctness case edits: make the first pair use a 640x382 image")
	var cse *ConditionSizeError
	require.ErrorAs(t, errs[1], &cse)
	assert.Equal(t, ConditionSizeError{Manifest: "fx/manifest.json", File: "c.png", Width: 640, Height: 382, Condition: "a.png", CondW: 1024, CondH: 768}, *cse,
		"every image is held to the condition image's own size")
}

func TestShippedFixturesCarryThePublishedSettings(t *testing.T) {
	fx, err := harness.LoadFixtures(filepath.Join(repoRoot, "fixtures/qwen_image_edit/manifest.json"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "negative_prompt": " "}, fx.FormSettings())
	assert.GreaterOrEqual(t, len(fx.Pairs), 6)
	assert.Equal(t, "Turn the image into a watercolor illustration while preserving the main subject.", fx.Pairs[0].Instruction, "TRTMC's own instruction for the testcase")
	flags, err := NativeFlags(fx.FormSettings())
	require.NoError(t, err)
	assert.Equal(t, []string{"--negative-prompt", " ", "--cfg-scale", "4.0", "--num-inference-steps", "20", "--seed", "42", "--height", "1024", "--width", "1024"}, flags)
}

// fakeCheckout is a complete TRTMC checkout as far as preflight can tell: the shaped
// data, plus stand-ins for the binary, the e2e test, the Dockerfile and the venv.
func fakeCheckout(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	for _, rel := range []string{modelTOMLPath, manifestPath, thresholdsPath, familyDir + "/data/test_img.jpeg"} {
		b, err := os.ReadFile(filepath.Join(shapedCheckout, rel))
		require.NoError(t, err)
		writeFile(t, filepath.Join(dir, rel), string(b))
	}
	writeFile(t, filepath.Join(dir, e2eTestPath), "def test_model_e2e(case_name, request): ...\n")
	writeFile(t, filepath.Join(dir, "Dockerfile"), "FROM nvidia/cuda:13.0.0-devel-ubuntu24.04\n")
	for _, exe := range []string{binaryPath, ".venv/bin/python"} {
		writeFile(t, filepath.Join(dir, exe), "#!/bin/sh\n")
		require.NoError(t, os.Chmod(filepath.Join(dir, exe), 0o755))
	}
	return Config{Checkout: dir}
}

// fakeHFCache holds the checkpoint's snapshot layout at the revision, with refs/main on
// it: model_index.json, one folder per component, and a sharded transformer.
func fakeHFCache(t *testing.T) string {
	t.Helper()
	hf := t.TempDir()
	repo := filepath.Join(hf, "hub", "models--Qwen--Qwen-Image-Edit-2511")
	snap := filepath.Join(repo, "snapshots", Revision)
	writeFile(t, filepath.Join(repo, "refs", "main"), Revision)
	writeFile(t, filepath.Join(snap, "model_index.json"), `{
  "_class_name": "QwenImageEditPlusPipeline", "_diffusers_version": "0.36.0.dev0",
  "processor": ["transformers", "Qwen2VLProcessor"], "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
  "text_encoder": ["transformers", "Qwen2_5_VLForConditionalGeneration"], "tokenizer": ["transformers", "Qwen2Tokenizer"],
  "transformer": ["diffusers", "QwenImageTransformer2DModel"], "vae": ["diffusers", "AutoencoderKLQwenImage"],
  "unused": [null, null]
}`)
	for _, comp := range []string{"processor", "scheduler", "tokenizer"} {
		writeFile(t, filepath.Join(snap, comp, "config.json"), "{}")
	}
	// Files in a snapshot are links into blobs/, as huggingface_hub leaves them.
	blob := func(rel string) {
		b := filepath.Join(repo, "blobs", fmt.Sprintf("%x", sha256.Sum256([]byte(rel))))
		writeFile(t, b, "weights")
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(snap, rel)), 0o755))
		require.NoError(t, os.Symlink(b, filepath.Join(snap, rel)))
	}
	writeFile(t, filepath.Join(snap, "transformer", "diffusion_pytorch_model.safetensors.index.json"),
		`{"metadata": {}, "weight_map": {"a": "diffusion_pytorch_model-00001-of-00002.safetensors", "b": "diffusion_pytorch_model-00002-of-00002.safetensors", "c": "diffusion_pytorch_model-00001-of-00002.safetensors"}}`)
	blob("transformer/diffusion_pytorch_model-00001-of-00002.safetensors")
	blob("transformer/diffusion_pytorch_model-00002-of-00002.safetensors")
	blob("text_encoder/model-00001-of-00001.safetensors")
	writeFile(t, filepath.Join(snap, "text_encoder", "model.safetensors.index.json"), `{"weight_map": {"x": "model-00001-of-00001.safetensors"}}`)
	blob("vae/diffusion_pytorch_model.safetensors")
	return hf
}

// writeFixtures writes a workload of flat PNGs of the given sizes, its pairs in file order.
func writeFixtures(t *testing.T, dir string, sizes map[string][2]int, settings string) {
	t.Helper()
	var files []string
	for f := range sizes {
		files = append(files, f)
	}
	sort.Strings(files)
	var images []map[string]any
	var pairs []map[string]string
	for i, f := range files {
		wh := sizes[f]
		m := image.NewNRGBA(image.Rect(0, 0, wh[0], wh[1]))
		for p := range m.Pix {
			m.Pix[p] = byte(p * (i + 3))
		}
		m.Set(0, 0, color.NRGBA{1, 2, 3, 255})
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, m))
		writeFile(t, filepath.Join(dir, f), b.String())
		sum := sha256.Sum256(b.Bytes())
		images = append(images, map[string]any{"file": f, "sha256": hex.EncodeToString(sum[:]), "width": wh[0], "height": wh[1],
			"bytes": b.Len(), "provenance": "test", "licence": "CC0-1.0"})
		pairs = append(pairs, map[string]string{"id": "p" + f, "image": f, "instruction": "Make it blue"})
	}
	doc := map[string]any{"version": 1, "settings": json.RawMessage(settings), "images": images, "pairs": pairs,
		"influence": map[string]any{"instruction": "Make it blue", "images": files[:2]}}
	b, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	writeFile(t, filepath.Join(dir, "manifest.json"), string(b))
}
