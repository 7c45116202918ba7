package trtmcdouble

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatch(t *testing.T) {
	r := newRunner(t, t.TempDir())
	res := r.run("/usr/bin/gcc", "-v")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, `no program named "gcc"`)

	res = r.run()
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "no program name")

	res = r.run("/x/trtmcdouble")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stdout, "diffusers-reference, perf-serve-recorder, qwen_image_e2e_harness, tensorrt-model-connect, trtmc, trtmc-perf-serve, trtmc-server, trtmc-server-control-plane, trtmc_benchmark_worker")
	for _, gone := range []string{"cmake", "python3", "pytest"} {
		res := r.run("/usr/bin/"+gone, "--version")
		assert.Equal(t, 2, res.code, "%s is real in the double's image, never played", gone)
	}
	res = r.run("trtmcdouble", "--help")
	assert.Equal(t, 0, res.code)

	res = r.run("trtmcdouble", "/usr/bin/trtmc", "version")
	assert.Equal(t, 0, res.code)
	assert.Contains(t, res.stdout, "qualkit contract double")
}

func TestMainReadsTheProcess(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"/build/trtmc", "version"}, []string{"A=1", "broken"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, 0, code)
	assert.Contains(t, out.String(), "trtmc 0.1.0 (qualkit contract double)")
	assert.Equal(t, map[string]string{"A": "1", "B": "x=y"}, envMap([]string{"A=1", "B=x=y", "junk"}))
}

// TestLegacyPipeline drives the double's programs the way qualkit's adapter does on a
// legacy checkout (the native build's outputs as the stand-in CMake build writes them,
// whose real CMake run the image tests hold): the bundle build, serving and the native
// Task, and checks that the served and native images are the same bytes.
func TestLegacyPipeline(t *testing.T) {
	src := shapedCheckout(t, LayoutLegacy)
	build := fakeNativeBuild(t, src, LayoutLegacy)
	hf := t.TempDir()
	_, err := HFCache(hf)
	require.NoError(t, err)
	r := newRunner(t, src)

	engines := filepath.Join(t.TempDir(), "engines")
	bundle := filepath.Join(engines, Profile+".bundle")
	photo := filepath.Join(src, legacyModelDir, "data", "test_img.jpeg")
	res := r.with("HF_HOME", hf, "HF_HUB_OFFLINE", "1", EnvConditionImage, photo, EnvNativeBinDir, build).
		run("tensorrt-model-connect", "build", HFID, "-o", bundle, "--model-revision", Revision, "--image-height", "1024",
			"--image-width", "1024", "--num-inference-steps", "20", "--precision", "bf16")
	require.Equal(t, 0, res.code, res.stderr)

	cfg, err := parseServer([]string{bundle, "--model-name", HFID, "--runtime-root", build})
	require.NoError(t, err)
	s, err := newServer(&proc{wd: src}, cfg, 0)
	require.NoError(t, err)
	defer s.close()
	srv := newTestServer(t, s)
	fields := map[string]string{"prompt": "Make it autumn.", "size": "64x64", "seed": "3", "num_inference_steps": "20", "true_cfg_scale": "4.0", "negative_prompt": " "}
	resp, got := postEdit(t, srv, fields, testPhoto(t))
	require.Equal(t, 200, resp.StatusCode, got)
	served, err := base64.StdEncoding.DecodeString(got["data"].([]any)[0].(map[string]any)["b64_json"].(string))
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "native.png")
	cli := *r
	cli.self = filepath.Join(build, "trtmc")
	res = cli.with(EnvModelPluginDir, filepath.Join(build, "models")).run("trtmc", "run", bundle, "--prompt", "Make it autumn.",
		"--image", photo, "--negative-prompt", " ", "--cfg-scale", "4.0", "--num-inference-steps", "20", "--seed", "3",
		"--height", "64", "--width", "64", "--output", out)
	require.Equal(t, 0, res.code, res.stderr)
	native, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, served, native)
}
