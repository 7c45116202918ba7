package qwenimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/schema"
)

func TestRequirementsWithNothingConfigured(t *testing.T) {
	hf := t.TempDir()
	reqs := requirementsOf(New(Config{HFHome: hf}), rootEnv(t), rowOf(row()))
	requireFixes(t, reqs)
	snap := filepath.Join(hf, "hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9")
	assert.Equal(t, []string{
		"TRTMC checkout: QUALKIT_TRTMC_DIR is not set (it provides the dev Dockerfile, the builder, the correctness case, and the family's manifest and thresholds)",
		"image: QUALKIT_TRTMC_IMAGE is not set and, without a TRTMC checkout, there is no dev Dockerfile to build it from",
		"checkpoint Qwen/Qwen-Image-Edit-2511 at revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9 is not in the Hugging Face cache " + hf + " (no " + snap + "/model_index.json)",
	}, whats(reqs))
	for _, q := range reqs {
		assert.True(t, q.Absent, "%q is a host piece", q.What)
	}
	assert.Contains(t, reqs[0].Fix, "git clone https://github.com/NVIDIA/TensorRT-Model-Connect.git trtmc")
	// The checkout that serves the row: perf-serve and the worker it drives, never main
	// e9132e79 (no server) or trtmc-server (text generation only, registry.py @ a4ba28be).
	assert.Contains(t, reqs[0].Fix, "one with apps/perf_serving (trtmc-perf-serve, the server) and apps/benchmark/native (the trtmc_benchmark_worker it drives)")
	assert.NotContains(t, reqs[0].Fix, "a later one with trtmc-server")
	assert.Contains(t, reqs[2].Fix, "HF_HOME="+hf+" hf download Qwen/Qwen-Image-Edit-2511 --revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9")
}

func TestRequirementsOnAnEmptyCheckoutDir(t *testing.T) {
	dir := t.TempDir()
	reqs := requirementsOf(New(Config{Checkout: dir, HFHome: fakeHFCache(t)}), rootEnv(t), rowOf(row()))
	requireFixes(t, reqs)
	assert.Equal(t, []string{
		"TRTMC checkout " + dir + " has the manifest of neither known layout (tests/e2e/models/qwen_image/manifests/qwen-image-edit-2511.json, families/qwen_image/tests/manifests/qwen-image-edit-2511.json)",
		"image: QUALKIT_TRTMC_IMAGE is not set and there is no Dockerfile at " + dir + "/Dockerfile.dev.x86 to build it from",
	}, whats(reqs))
}

// A checkout of each layout with everything preflight reads passes; so does one with a
// named image instead of a Dockerfile.
func TestRequirementsAllPresent(t *testing.T) {
	for _, layout := range []string{LayoutE9132e79, LayoutFamilies} {
		t.Run(layout, func(t *testing.T) {
			cfg := Config{Checkout: checkout(t, layout), HFHome: fakeHFCache(t)}
			assert.Empty(t, whats(requirementsOf(New(cfg), rootEnv(t), rowOf(row()))))
			cfg.Image, cfg.Dockerfile = "trtmc-qual:local", "/nowhere/Dockerfile"
			assert.Empty(t, whats(requirementsOf(New(cfg), rootEnv(t), rowOf(row()))))
		})
	}
}

// A negative test per piece preflight reads from disk.
func TestRequirementsNamePiecesMissing(t *testing.T) {
	for _, tc := range []struct {
		name, layout string
		change       func(t *testing.T, cfg *Config)
		want         string
		absent       bool
	}{
		{"not a git checkout", LayoutFamilies, func(t *testing.T, cfg *Config) { require.NoError(t, os.RemoveAll(filepath.Join(cfg.Checkout, ".git"))) },
			"not a git checkout", false},
		{"no e2e test file", LayoutFamilies, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.Checkout, "families/qwen_image/tests/test_e2e.py")))
		}, "(layout families) has no families/qwen_image/tests/test_e2e.py (the family's correctness case)", true},
		{"no MODEL.toml", LayoutE9132e79, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.Checkout, "tests/e2e/models/qwen_image/MODEL.toml")))
		}, "has no tests/e2e/models/qwen_image/MODEL.toml (the family's e2e definition (build arguments))", true},
		{"no thresholds", LayoutFamilies, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.Checkout, "families/qwen_image/tests/thresholds/qwen-image-edit-2511.json")))
		}, "has no families/qwen_image/tests/thresholds/qwen-image-edit-2511.json (the correctness case's quality gates)", true},
		{"no test image", LayoutE9132e79, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.Checkout, "tests/e2e/models/qwen_image/data/test_img.jpeg")))
		}, "tests/e2e/models/qwen_image/data/test_img.jpeg (the test image the correctness case edits", true},
		{"manifest of another checkpoint", LayoutFamilies, func(t *testing.T, cfg *Config) {
			p := filepath.Join(cfg.Checkout, "families/qwen_image/tests/manifests/qwen-image-edit-2511.json")
			b, _ := os.ReadFile(p)
			writeFile(t, p, strings.NewReplacer(`"bf16"`, `"fp8"`, Revision, "0000000000000000000000000000000000000000").Replace(string(b)))
		}, "disagrees with what the row serves: precision is fp8, the row serves bf16; hf_revision is 0000000000000000000000000000000000000000", false},
		{"no Dockerfile for this architecture", LayoutFamilies, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.Remove(filepath.Join(cfg.Checkout, cfg.Dockerfile)))
		}, "is not set and there is no Dockerfile at", true},
		{"Dockerfile outside the context", LayoutFamilies, func(t *testing.T, cfg *Config) {
			cfg.Dockerfile = filepath.Join(t.TempDir(), "Dockerfile")
			writeFile(t, cfg.Dockerfile, "FROM scratch\n")
		}, "is outside the build context", false},
		{"checkpoint incomplete", LayoutFamilies, func(t *testing.T, cfg *Config) {
			require.NoError(t, os.RemoveAll(filepath.Join(SnapshotDir(cfg.HFHome), "vae")))
		}, "is incomplete in", true},
		{"refs/main elsewhere (e9132e79's reference reads it)", LayoutE9132e79, func(t *testing.T, cfg *Config) {
			writeFile(t, filepath.Join(cfg.HFHome, "hub/models--Qwen--Qwen-Image-Edit-2511/refs/main"), "0000000000000000000000000000000000000000")
		}, "not the pinned revision", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := New(Config{Checkout: checkout(t, tc.layout), HFHome: fakeHFCache(t)}).Config
			tc.change(t, &cfg)
			reqs := requirementsOf(New(cfg), rootEnv(t), rowOf(row()))
			requireFixes(t, reqs)
			require.Len(t, reqs, 1, "%s", strings.Join(whats(reqs), "\n"))
			assert.Contains(t, reqs[0].What, tc.want)
			assert.Equal(t, tc.absent, reqs[0].Absent)
		})
	}
	t.Run("refs/main does not matter in the families layout", func(t *testing.T) {
		cfg := Config{Checkout: checkout(t, LayoutFamilies), HFHome: fakeHFCache(t)}
		writeFile(t, filepath.Join(cfg.HFHome, "hub/models--Qwen--Qwen-Image-Edit-2511/refs/main"), "0000000000000000000000000000000000000000")
		assert.Empty(t, whats(requirementsOf(New(cfg), rootEnv(t), rowOf(row()))), "its case is given the snapshot folder")
	})
}

func TestRequirementsReportsAConfigErrorAndARowMismatch(t *testing.T) {
	a := FromEnv(envOf(map[string]string{EnvCheckout: "relative/trtmc", EnvServing: "grpc", "HOME": "/home/u"}))
	c := row()
	c.Profile = "qwen-image-2512"
	got := strings.Join(whats(requirementsOf(a, rootEnv(t), rowOf(c))), "\n")
	assert.Contains(t, got, "QUALKIT_TRTMC_DIR=relative/trtmc is a relative path")
	assert.Contains(t, got, `QUALKIT_TRTMC_SERVING="grpc": choose auto, perf-serve or edit-route`)
	assert.Contains(t, got, `row "qwen-image-edit-2511" names Qwen/Qwen-Image-Edit-2511 profile qwen-image-2512`)
}

func TestRequirementsWorkloadTheBundleCannotServe(t *testing.T) {
	cfg := Config{Checkout: checkout(t, LayoutFamilies), HFHome: fakeHFCache(t)}
	root := t.TempDir()
	writeFixtures(t, filepath.Join(root, "fx"), map[string][2]int{"a.png": {640, 382}, "b.png": {512, 512}},
		`{"size": "512x512", "seed": 1, "strength": 0.5}`)
	c := row()
	c.Fixtures = "fx/manifest.json"
	reqs := New(cfg).requirements(family.Env{Root: root}, rowOf(c))
	requireFixes(t, reqs)
	got := whats(reqs)
	require.Len(t, got, 3, "%s", strings.Join(got, "\n"))
	assert.Contains(t, got[0], "fx/manifest.json settings: setting(s) strength have no TRTMC CLI flag")
	assert.Equal(t, "fx/manifest.json settings: num_inference_steps, true_cfg_scale, guidance_scale, negative_prompt not stated: every generation control is sent explicitly, never left to the server's default", got[1])
	assert.Equal(t, "fx/manifest.json settings: size 512x512, but the bundle is compiled for 1024x1024 output", got[2])
}

// A reference image of another size than the build's condition image is served: TRTMC's
// runtime resizes every reference to the bundle's condition sizes (pipeline.cpp @
// d46edb11 § preprocess_edit_input_image), and its own edit suites send MagicBrush and
// square-cropped Imagenette images to one bundle (tasks.yaml @ 058cde12).
func TestRequirementsServeReferenceImagesOfAnySize(t *testing.T) {
	cfg := Config{Checkout: checkout(t, LayoutFamilies), HFHome: fakeHFCache(t)}
	root := t.TempDir()
	writeFixtures(t, filepath.Join(root, "fx"), map[string][2]int{"a.png": {640, 382}, "b.png": {512, 512}},
		`{"size": "1024x1024", "seed": 42, "num_inference_steps": 20, "true_cfg_scale": 4.0, "guidance_scale": 4.0, "negative_prompt": " "}`)
	c := row()
	c.Fixtures = "fx/manifest.json"
	assert.Empty(t, whats(New(cfg).requirements(family.Env{Root: root}, rowOf(c))))
}

func TestShippedFixturesCarryThePublishedSettings(t *testing.T) {
	fx, err := fixtures.Load(filepath.Join(repoRoot, "fixtures/qwen_image_edit/manifest.json"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "}, fx.FormSettings())
	assert.Empty(t, checkSettings("shipped", fx.FormSettings()))
	assert.GreaterOrEqual(t, len(fx.Pairs), 6)
	assert.Equal(t, "Turn the image into a watercolor illustration while preserving the main subject.", fx.Pairs[0].Instruction, "TRTMC's own instruction for the testcase")
	for _, im := range fx.Images {
		assert.Equal(t, [2]int{640, 382}, [2]int{im.Width, im.Height}, "the size of TRTMC's test photo, the build's condition image: TRTMC resizes a reference of another aspect to its grid (pipeline.cpp @ d46edb11)")
	}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig(envOf(map[string]string{
		EnvCheckout: "/src/trtmc", EnvImage: "trtmc-qual:local", EnvDockerfile: "docker/Dockerfile.qual", EnvHFCache: "/models/hf",
		EnvHFHome: "/ignored", EnvPython: "/opt/venv/bin/python", EnvHFPython: "/opt/ref/bin/python", EnvServing: ServingEditRoute,
		EnvTimingSource: "records",
	}))
	require.NoError(t, err)
	assert.Equal(t, Config{Checkout: "/src/trtmc", Image: "trtmc-qual:local", Dockerfile: "docker/Dockerfile.qual", HFHome: "/models/hf",
		Python: "/opt/venv/bin/python", HFPython: "/opt/ref/bin/python", Serving: ServingEditRoute,
		Timing: schema.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID}, timingSet: true}, cfg)
	assert.Equal(t, "/src/trtmc/docker/Dockerfile.qual", cfg.DockerfilePath())

	d := FromEnv(envOf(map[string]string{EnvCheckout: "/src/trtmc", "HOME": "/home/u"})).Config
	assert.Equal(t, "python3", d.Python)
	assert.Equal(t, "python3", d.HFPython)
	assert.Equal(t, ServingAuto, d.Serving)
	assert.Equal(t, "/home/u/.cache/huggingface", d.HFHome)
	assert.Equal(t, map[string]string{"amd64": "Dockerfile.dev.x86", "arm64": "Dockerfile.dev.aarch64", "ppc64le": ""},
		map[string]string{"amd64": devDockerfile("amd64"), "arm64": devDockerfile("arm64"), "ppc64le": devDockerfile("ppc64le")})

	_, err = ParseConfig(envOf(map[string]string{EnvTimingSource: "records", EnvTimingBody: "x", EnvServing: "whoami", "HOME": "/h"}))
	assert.ErrorContains(t, err, "QUALKIT_TRTMC_TIMING_BODY is set but QUALKIT_TRTMC_TIMING_SOURCE=records")
	assert.ErrorContains(t, err, `QUALKIT_TRTMC_SERVING="whoami"`)
	_, err = ParseConfig(envOf(map[string]string{}))
	assert.ErrorContains(t, err, "no Hugging Face cache")
}
