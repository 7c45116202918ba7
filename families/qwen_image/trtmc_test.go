package qwenimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

var (
	_ harness.Family        = TRTMC{}
	_ harness.Requirer      = TRTMC{}
	_ harness.Containerized = TRTMC{}
)

const bundle = "/cache/bundles/0123abcd/qwen-image-edit-2511.bundle"

func testAdapter() TRTMC {
	return New(Config{Checkout: "/src/trtmc", HFHome: "/models/hf", Python: "/opt/venv/bin/python"})
}

var testEnv = harness.Env{Root: "/repo", Work: "/work/row", Python: "/repo/.venv/bin/python"}

func TestBuildArgv(t *testing.T) {
	cmd := testAdapter().Build(testEnv, harness.BuildSpec{Out: "/cache/bundles/.partial-7/qwen-image-edit-2511.bundle", Reference: "/repo/fixtures/images/photo-640x382.png"})
	assert.Equal(t, harness.Command{
		Args: []string{"/src/trtmc/build/trtmc", "build", "Qwen/Qwen-Image-Edit-2511",
			"-o", "/cache/bundles/.partial-7/qwen-image-edit-2511.bundle",
			"--precision", "bf16", "--image-height", "1024", "--image-width", "1024",
			"--num-inference-steps", "20", "--max-cache-length", "256",
			"--model-revision", "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9"},
		Env: []string{"TRTMC_QWEN_IMAGE_EDIT_CONDITION_IMAGE=/repo/fixtures/images/photo-640x382.png",
			"HF_HOME=/models/hf", "HF_HUB_OFFLINE=1"},
		Dir: "/src/trtmc",
	}, cmd)
}

func TestBuildSettingsAndBuilder(t *testing.T) {
	a := testAdapter()
	assert.Equal(t, map[string]string{
		"precision": "bf16", "image_height": "1024", "image_width": "1024", "num_inference_steps": "20",
		"max_cache_length": "256", "model_revision": "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9",
		"condition_image_size": "640x382",
	}, a.BuildSettings(), "every setting baked into the bundle keys its cache, the condition grid included")
	cmds, builder := a.Tools(testEnv)
	assert.Empty(t, cmds)
	assert.Equal(t, "/src/trtmc/build/trtmc", builder, "the binary that builds the bundle and runs the correctness case")
	assert.Equal(t, "trtmc", a.Backend())
}

func TestCorrectnessArgv(t *testing.T) {
	cc := testAdapter().Correctness(testEnv, harness.CorrectnessSpec{
		Bundle: bundle, JUnit: "/ev/row/correctness/junit.xml", Artifacts: "/ev/row/correctness/artifacts"})
	assert.Equal(t, harness.CorrectnessCase{
		Command: harness.Command{
			Args: []string{"/opt/venv/bin/python", "-m", "pytest", "tests/e2e/models/qwen_image/test_qwen_image_e2e.py", "-v", "-rs",
				"--e2e-model", "qwen-image-edit-2511", "--e2e-testcase", "qwen-image-edit-2511",
				"--engine-dir", "/cache/bundles/0123abcd",
				"--trtmc-binary", "build/trtmc",
				"--hf-python", "/opt/venv/bin/python",
				"--e2e-artifacts-dir", "/ev/row/correctness/artifacts",
				"--junitxml=/ev/row/correctness/junit.xml"},
			Env: []string{"HF_HOME=/models/hf", "HF_HUB_OFFLINE=1"},
			Dir: "/src/trtmc",
		},
		JUnit:     "/ev/row/correctness/junit.xml",
		Cases:     []string{"tests.e2e.models.qwen_image.test_qwen_image_e2e.test_model_e2e[qwen-image-edit-2511]"},
		Result:    "/ev/row/correctness/artifacts/qwen-image-edit-2511/result.json",
		TestFiles: []string{"/src/trtmc/tests/e2e/models/qwen_image/test_qwen_image_e2e.py"},
	}, cc)
}

func TestCorrectnessSeparatePythons(t *testing.T) {
	a := New(Config{Checkout: "/src/trtmc", HFHome: "/hf", Python: "/src/trtmc/.venv/bin/python", HFPython: "/opt/hf/bin/python"})
	args := a.Correctness(testEnv, harness.CorrectnessSpec{Bundle: bundle, JUnit: "/j.xml", Artifacts: "/a"}).Command.Args
	assert.Equal(t, "/src/trtmc/.venv/bin/python", args[0])
	assert.Equal(t, []string{"--hf-python", "/opt/hf/bin/python"}, args[14:16])
}

func TestCorrectnessRefusesABundleTheCaseWouldNotFind(t *testing.T) {
	cc := testAdapter().Correctness(testEnv, harness.CorrectnessSpec{Bundle: "/cache/x/other.bundle", JUnit: "/j.xml", Artifacts: "/a"})
	out, err := runCommand(t, cc.Command)
	require.Error(t, err)
	assert.Contains(t, out, "qualkit: correctness: the bundle is /cache/x/other.bundle, but TRTMC's case looks for qwen-image-edit-2511.bundle in --engine-dir")
}

func TestServeArgv(t *testing.T) {
	// The paths are those the harness mounts into the serving container.
	cmd := testAdapter().Serve(testEnv, harness.ServeSpec{Bundle: "/qualkit/bundle/qwen-image-edit-2511.bundle", Model: "Qwen/Qwen-Image-Edit-2511",
		Host: "127.0.0.1", Port: 8123, Records: "/qualkit/records/records.jsonl"})
	assert.Equal(t, harness.Command{Args: []string{"trtmc-server", "/qualkit/bundle/qwen-image-edit-2511.bundle",
		"--model-name", "Qwen/Qwen-Image-Edit-2511", "--host", "127.0.0.1", "--port", "8123",
		"--records", "/qualkit/records/records.jsonl", "--startup-timeout", "1800", "--request-timeout", "1800"}}, cmd)
}

// The published settings, as AIPerf puts them on the wire, give REFERENCE.md's argv.
func TestNativeArgvPublishedSettings(t *testing.T) {
	cmd := testAdapter().Native(testEnv, harness.NativeSpec{
		Bundle: bundle, Image: "/work/row/input-00", Prompt: "Turn the image into a watercolor illustration while preserving the main subject.",
		Settings: map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "negative_prompt": " "},
		Output:   "/ev/row/identity/00-warmup-native.png",
	})
	assert.Equal(t, harness.Command{Args: []string{"/src/trtmc/build/trtmc", "run", bundle,
		"--prompt", "Turn the image into a watercolor illustration while preserving the main subject.",
		"--image", "/work/row/input-00",
		"--negative-prompt", " ", "--cfg-scale", "4.0", "--num-inference-steps", "20", "--seed", "42",
		"--height", "1024", "--width", "1024",
		"--output", "/ev/row/identity/00-warmup-native.png"}}, cmd)
}

func TestNativeRejectsUnknownSettingsLoudly(t *testing.T) {
	cmd := testAdapter().Native(testEnv, harness.NativeSpec{Bundle: bundle, Image: "in", Prompt: "p", Output: "out",
		Settings: map[string]string{"size": "1024x1024", "guidance_scale": "1.0", "strength": "0.8"}})
	out, err := runCommand(t, cmd)
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	assert.Contains(t, out, "qualkit: native task: setting(s) guidance_scale, strength have no `trtmc run` flag")
	assert.Contains(t, out, "the native Task would ignore them")
}

func TestServeAndRunProgramsAreConfigurable(t *testing.T) {
	a := New(Config{Checkout: "/src/trtmc", HFHome: "/hf", RunProgram: "/opt/venv/bin/trtmc", ServeProgram: "/opt/venv/bin/trtmc-server"})
	assert.Equal(t, "/opt/venv/bin/trtmc-server", a.Serve(testEnv, harness.ServeSpec{Bundle: bundle, Host: "127.0.0.1", Port: 1}).Args[0])
	assert.Equal(t, "/opt/venv/bin/trtmc", a.Native(testEnv, harness.NativeSpec{Bundle: bundle}).Args[0])
}

func TestImage(t *testing.T) {
	assert.Equal(t, harness.ContainerImage{Ref: "trtmc-serve:local"},
		New(Config{Checkout: "/src/trtmc", Image: "trtmc-serve:local"}).Image(testEnv), "a given image is used as is")
	assert.Equal(t, harness.ContainerImage{Dockerfile: "/src/trtmc/Dockerfile", Context: "/src/trtmc"},
		New(Config{Checkout: "/src/trtmc"}).Image(testEnv), "else it is built from the checkout's Dockerfile")
	assert.Equal(t, harness.ContainerImage{Dockerfile: "/src/trtmc/docker/serve.Dockerfile", Context: "/src/trtmc"},
		New(Config{Checkout: "/src/trtmc", Dockerfile: "docker/serve.Dockerfile"}).Image(testEnv))
}

func runCommand(t *testing.T, c harness.Command) (string, error) {
	t.Helper()
	require.NotEmpty(t, c.Args)
	cmd := exec.CommandContext(t.Context(), c.Args[0], c.Args[1:]...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
