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
	assert.Contains(t, res.stdout, "cmake, python, python3, trtmc, trtmc-server, trtmc_benchmark_worker")
	res = r.run("trtmcdouble", "--help")
	assert.Equal(t, 0, res.code)

	res = r.run("trtmcdouble", "/usr/bin/trtmc", "version")
	assert.Equal(t, 0, res.code)
	assert.Contains(t, res.stdout, "qualkit contract double")
}

func TestMainReadsTheProcess(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"/opt/venv/bin/python3", "--version"}, []string{"A=1", "broken"}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, 0, code)
	assert.Equal(t, "Python 3.12.3\n", out.String())
	assert.Equal(t, map[string]string{"A": "1", "B": "x=y"}, envMap([]string{"A=1", "B=x=y", "junk"}))
}

// TestLegacyPipeline drives every program the way qualkit's adapter does on a legacy
// checkout: native build, bundle build, correctness case, serving and the native Task,
// and checks that the served and native images are the same bytes.
func TestLegacyPipeline(t *testing.T) {
	src := shapedCheckout(t, LayoutLegacy)
	build := filepath.Join(t.TempDir(), "opt", "qualkit", "trtmc-build")
	hf := t.TempDir()
	_, err := HFCache(hf)
	require.NoError(t, err)
	r := newRunner(t, src)

	require.Equal(t, 0, r.run(configureArgs(src, build)...).code)
	res := r.run("cmake", "--build", build, "--parallel", "--target", "trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image")
	require.Equal(t, 0, res.code, res.stderr)

	engines := filepath.Join(t.TempDir(), "engines")
	bundle := filepath.Join(engines, Profile+".bundle")
	photo := filepath.Join(src, legacyModelDir, "data", "test_img.jpeg")
	res = r.with("HF_HOME", hf, "HF_HUB_OFFLINE", "1", EnvConditionImage, photo, EnvNativeBinDir, build).
		run(adapterBuild(moduleBuild, bundle)...)
	require.Equal(t, 0, res.code, res.stderr)

	artifacts := filepath.Join(t.TempDir(), "artifacts")
	junit := filepath.Join(t.TempDir(), "junit.xml")
	res = r.with("HF_HOME", hf, "HF_HUB_OFFLINE", "1").run("python3", "-m", "pytest", LegacyNodeID, "-v", "-rs",
		"--e2e-model", Profile, "--e2e-testcase", Profile, "--engine-dir", engines, "--trtmc-binary", filepath.Join(build, "trtmc"),
		"--hf-python", "/opt/venv/bin/python3", "--e2e-artifacts-dir", artifacts, "--junitxml="+junit)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.FileExists(t, filepath.Join(artifacts, Profile, "result.json"))

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
