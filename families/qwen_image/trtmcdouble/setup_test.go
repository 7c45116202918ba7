package trtmcdouble

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHFCache(t *testing.T) {
	dir := t.TempDir()
	snap, err := HFCache(dir)
	require.NoError(t, err)
	repo := filepath.Join(dir, "hub", "models--Qwen--Qwen-Image-Edit-2511")
	assert.Equal(t, filepath.Join(repo, "snapshots", Revision), snap)
	ref, err := os.ReadFile(filepath.Join(repo, "refs", "main"))
	require.NoError(t, err)
	assert.Equal(t, Revision, string(ref))

	var index map[string]any
	b, err := os.ReadFile(filepath.Join(snap, "model_index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &index))
	assert.Equal(t, "QwenImageEditPlusPipeline", index["_class_name"])
	assert.Equal(t, true, index[Marker])
	for _, c := range []string{"transformer", "text_encoder", "vae", "scheduler", "tokenizer", "processor"} {
		pair, ok := index[c].([]any)
		require.True(t, ok, c)
		assert.Len(t, pair, 2, c)
		assert.FileExists(t, filepath.Join(snap, c, "config.json"))
	}

	var weights struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	b, err = os.ReadFile(filepath.Join(snap, "transformer", "diffusion_pytorch_model.safetensors.index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &weights))
	shards := map[string]bool{}
	for _, f := range weights.WeightMap {
		shards[f] = true
	}
	assert.Len(t, shards, 2)
	for f := range shards {
		content, err := os.ReadFile(filepath.Join(snap, "transformer", f))
		require.NoError(t, err, f)
		assert.Contains(t, string(content), "qualkit contract double")
	}

	st, err := os.Lstat(filepath.Join(snap, "model_index.json"))
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "snapshot files link into blobs/, as huggingface_hub lays them out")
	target, err := os.Readlink(filepath.Join(snap, "model_index.json"))
	require.NoError(t, err)
	assert.False(t, filepath.IsAbs(target), "relative links survive a bind mount")
	assert.True(t, strings.HasPrefix(target, "../../blobs/"), target)

	again, err := HFCache(dir)
	require.NoError(t, err, "writing the cache again is harmless")
	assert.Equal(t, snap, again)
}

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary != "" {
		_ = os.RemoveAll(filepath.Dir(builtBinary))
	}
	os.Exit(code)
}

// builtDouble builds the binary once per test run.
func builtDouble(t *testing.T) string {
	t.Helper()
	// No skips in this project: without Linux or a go command the test fails, loudly.
	require.Equal(t, "linux", runtime.GOOS, "the double is built for Linux (its image's OS)")
	_, err := exec.LookPath("go")
	require.NoError(t, err, "building the double needs the go command")
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "trtmcdouble-build")
		if err != nil {
			buildErr = err
			return
		}
		builtBinary = filepath.Join(dir, "trtmcdouble")
		buildErr = Build(context.Background(), repoRoot, builtBinary)
	})
	require.NoError(t, buildErr)
	return builtBinary
}

func TestBuiltBinaryAnswersToItsNames(t *testing.T) {
	bin := builtDouble(t)
	dir := t.TempDir()
	trtmc := filepath.Join(dir, "trtmc")
	require.NoError(t, os.Symlink(bin, trtmc))
	out, err := exec.Command(trtmc, "--version").Output()
	require.NoError(t, err)
	assert.Equal(t, "trtmc 0.1.0 (qualkit contract double)\nTRT support: yes\n", string(out))

	out, err = exec.Command(bin, "trtmc-perf-serve", "serve", "--help").Output()
	require.NoError(t, err)
	rec, err := LoadRecording(os.DirFS(RecordingDir))
	require.NoError(t, err)
	assert.Equal(t, rec.Help, string(out), "the recorded --help of TRTMC's perf-serve, from the recording the binary embeds")

	var stderr bytes.Buffer
	cmd := exec.Command(trtmc, "run", "x.bundle", "--bogus", "1")
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, stderr.String(), "Unknown flag: --bogus")

	if out, err := exec.Command("go", "version", "-m", bin).Output(); err == nil {
		assert.Contains(t, string(out), "CGO_ENABLED=0", "a static binary: it runs in any image")
		assert.Contains(t, string(out), "-trimpath=true")
	}
}

func TestCheckout(t *testing.T) {
	builtDouble(t) // one build first; Checkout's own builds then hit the cache
	dockerfile, err := DockerfileName()
	require.NoError(t, err)
	families := []string{"README.md", "conftest.py", "CMakeLists.txt", "cmake/qualkit_double.cmake", familiesManifest, familiesTestFile, familiesTestImg,
		"families/qwen_image/tests/thresholds/qwen-image-edit-2511.json", "core/builder/tensorrt_model_connect/__init__.py"}
	image := "qualkit/trtmc-double-python:test"
	for _, tc := range []struct {
		layout, serving string
		files           []string
		bin, reqs, root string // where the binary lies, the COPY source of the pins, the context root
	}{
		{LayoutFamilies, ServingPerfServe, append(families, "apps/perf_serving/trtmc_perf_serving/app.py", "apps/perf_serving/trtmc_perf_serving/__main__.py"),
			"requirements/qualkit-double/trtmcdouble", "community-ci.txt", "requirements"},
		{LayoutFamilies, ServingEditRoute, append(families, "apps/server/main.cpp", "apps/server/python/trtmc_server/app.py", "apps/server/python/trtmc_server/__main__.py"),
			"requirements/qualkit-double/trtmcdouble", "community-ci.txt", "requirements"},
		{LayoutLegacy, ServingNone, []string{"README.md", "conftest.py", "CMakeLists.txt", legacyModelTOML, legacyManifest, legacyTestFile,
			legacyModelDir + "/data/test_img.jpeg", "website/data/hf-model-metadata.json", "python/tensorrt_model_connect/__main__.py"},
			"qualkit-double/trtmcdouble", "requirements/community-ci.txt", "."},
	} {
		t.Run(tc.layout+"-"+tc.serving, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tensorrt-model-connect")
			require.NoError(t, Checkout(context.Background(), repoRoot, dir, CheckoutSpec{Layout: tc.layout, Serving: tc.serving, PythonImage: image}))
			assert.Equal(t, tc.layout, layoutOf(dir))
			for _, f := range tc.files {
				assert.FileExists(t, filepath.Join(dir, f))
			}
			st, err := os.Stat(filepath.Join(dir, tc.bin))
			require.NoError(t, err)
			assert.NotZero(t, st.Mode().Perm()&0o111)

			df, err := os.ReadFile(filepath.Join(dir, dockerfile))
			require.NoError(t, err)
			bin := strings.TrimPrefix(tc.bin, "requirements/")
			for _, line := range []string{"FROM " + image, "LABEL qualkit.contract-double=\"true\"",
				"COPY " + tc.reqs + " /tmp/trtmc-community-ci.txt",
				"COPY " + bin + " /usr/local/bin/trtmcdouble", "COPY qualkit-double/site/ /usr/local/lib/python3.11/dist-packages/",
				"WORKDIR /workspace/tensorrt-model-connect"} {
				assert.Contains(t, strings.Split(string(df), "\n"), line)
			}
			assert.Contains(t, string(df), "NOT TensorRT-Model-Connect's")
			assert.NotContains(t, string(df), "trtmc-server", "no console script: the native server is built")

			// The layout's .dockerignore drops what the Dockerfile copies from the checkout
			// root; the context staged from the COPY lines holds it.
			bc, err := serving.StageContext(filepath.Join(dir, dockerfile), []string{dir, filepath.Join(dir, "requirements")}, filepath.Join(t.TempDir(), "ctx"))
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, tc.root), filepath.Clean(bc.Root))
			var staged []string
			for _, f := range bc.Files {
				if !strings.Contains(f.Path, "/site/") {
					staged = append(staged, f.Path)
				}
			}
			assert.ElementsMatch(t, []string{tc.reqs, bin}, staged)
			assert.Contains(t, bc.Files, bc.Files[slices.IndexFunc(bc.Files, func(f schema.ContextFile) bool {
				return strings.HasSuffix(f.Path, "site/torch/__init__.py")
			})], "the stand-in modules are staged")
			ignore, err := os.ReadFile(filepath.Join(dir, ".dockerignore"))
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(strings.TrimSpace(strings.SplitN(string(ignore), "\n*\n", 2)[1]), "!python/"), "deny-all, then python/ only")

			git := func(args ...string) string {
				out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
				require.NoError(t, err, string(out))
				return strings.TrimSpace(string(out))
			}
			assert.Regexp(t, `^[0-9a-f]{40}$`, git("rev-parse", "HEAD"))
			assert.Empty(t, git("status", "--porcelain"), "everything is committed")
			assert.Contains(t, git("ls-files"), tc.bin)
		})
	}
	assert.ErrorContains(t, Checkout(context.Background(), repoRoot, t.TempDir(), CheckoutSpec{Layout: "nightly", Serving: ServingNone, PythonImage: image}), `checkout layout "nightly"`)
	assert.ErrorContains(t, Checkout(context.Background(), repoRoot, t.TempDir(), CheckoutSpec{Layout: LayoutLegacy, Serving: ServingPerfServe, PythonImage: image}), `legacy: none only`)
	assert.ErrorContains(t, Checkout(context.Background(), repoRoot, t.TempDir(), CheckoutSpec{Layout: LayoutFamilies, Serving: ServingEditRoute, PerfServe: t.TempDir(), PythonImage: image}), "a perf-serve snapshot")
	assert.ErrorContains(t, Checkout(context.Background(), repoRoot, t.TempDir(), CheckoutSpec{Layout: LayoutFamilies, Serving: ServingPerfServe, PerfServe: t.TempDir(), PythonImage: image}), "holds no snapshot of TRTMC's perf-serve")
	assert.ErrorContains(t, Checkout(context.Background(), repoRoot, t.TempDir(), CheckoutSpec{Layout: LayoutFamilies, Serving: ServingPerfServe}), "no Python image")
}
