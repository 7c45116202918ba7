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
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/harness"
)

const repoRoot = "../.."

// shapedTrees are qualkit's own TRTMC-shaped trees (schema facts, values of our own), one
// per layout. TRTMC's real data is read by requirements_real_test.go (-tags trtmcdata).
var shapedTrees = map[string]string{
	LayoutE9132e79: "../../internal/trtmc/testdata/e9132e79",
	LayoutFamilies: "../../internal/trtmc/testdata/families",
}

func row() harness.Checkpoint {
	return harness.Checkpoint{Name: "qwen-image-edit-2511", Family: "qwen_image", Model: HFID, Profile: Profile, Revision: Revision,
		Fixtures: "fixtures/qwen_image_edit/manifest.json"}
}

func rootEnv(t *testing.T) family.Env {
	return family.Env{Root: repoRoot, Work: t.TempDir()}
}

func whats(reqs []family.Requirement) []string {
	out := make([]string, len(reqs))
	for i, q := range reqs {
		out[i] = q.What
	}
	return out
}

// requireFixes checks the contract every requirement keeps: it says what and how to fix it.
func requireFixes(t *testing.T, reqs []family.Requirement) {
	t.Helper()
	for _, q := range reqs {
		assert.NotEmpty(t, q.What)
		assert.NotEmpty(t, q.Fix, "no fix for %q", q.What)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// checkout is a git checkout of the layout's shaped tree with a dev Dockerfile, as
// preflight sees a full checkout.
// checkout is a shaped checkout of layout that serves through perf-serve, unless other
// contracts are named (checkoutNoServer: no server source at all, as at e9132e79).
func checkout(t *testing.T, layout string, serving ...string) string {
	t.Helper()
	if serving == nil {
		serving = []string{ServingPerfServe}
	}
	dir := checkoutNoServer(t, layout, serving)
	return dir
}

// servingFiles are stand-ins, at TRTMC's paths, declaring each contract's route.
var servingFiles = map[string]map[string]string{
	ServingPerfServe: {
		"apps/perf_serving/trtmc_perf_serving/app.py": "@app.post(\"/v1/tasks/{name}\")\n",
		"apps/perf_serving/trtmc_perf_serving/cli.py": "# serve\n",
	},
	ServingEditRoute: {
		"apps/server/python/trtmc_server/app.py": "# POST /v1/images/edits\n",
		"apps/server/main.cpp":                   "// native trtmc-server\n",
	},
}

func checkoutNoServer(t *testing.T, layout string, serving []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, c := range serving {
		for rel, text := range servingFiles[c] {
			writeFile(t, filepath.Join(dir, rel), text)
		}
	}
	src := shapedTrees[layout]
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		writeFile(t, filepath.Join(dir, rel), string(b))
		return nil
	}))
	for _, df := range []string{"Dockerfile.dev.x86", "Dockerfile.dev.aarch64"} {
		writeFile(t, filepath.Join(dir, df), "FROM nvcr.io/nvidia/tensorrt:26.07-py3\n")
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "shaped")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}

// gpuEnv is the row's Env once preflight chose an H200 and the image is ready.
func gpuEnv(t *testing.T, root string) family.Env {
	return family.Env{Root: root, Work: t.TempDir(), ImageID: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		GPUs: []gpu.Device{{Index: 0, Name: "NVIDIA H200", UUID: "GPU-0", ComputeCapability: "9.0"}}}
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

// writeFixtures writes a self-contained workload of PNGs of the given sizes, its pairs in
// file order.
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

// must is v, or a panic (the test fails naming err) when a builder refused.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// rowOf is what the family knows of a table row.
func rowOf(c harness.Checkpoint) family.Row { return c.Row() }

// described is f's Spec for row on env (Describe never fails for this package's families).
func described(f family.Family, env family.Env, row family.Row) family.Spec {
	return must(f.Describe(env, row))
}

// qualityOf is the family's quality criteria as its Spec reads them.
func qualityOf(f family.Family, env family.Env, row family.Row) (family.QualitySpec, error) {
	return described(f, env, row).Quality(env)
}

// requirementsOf is what the family's Spec finds missing.
func requirementsOf(f family.Family, env family.Env, row family.Row) []family.Requirement {
	return described(f, env, row).Requirements(env)
}

// identityOf is the family's identity check of a server answer.
func identityOf(f family.Family) family.IdentityCheck {
	return described(f, family.Env{}, family.Row{}).Identity
}
