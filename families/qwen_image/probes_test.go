package qwenimage

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

const goodProbe = `{"python": "3.12.3", "image_cuda": "13.0.1", "modules": {"tensorrt": {"version": "11.1.0.106"}, "tensorrt_model_connect": {"version": "0.1.0", "file": "/src/python/tensorrt_model_connect/__init__.py"}, ` +
	`"pytest": {"version": "8.4.2"}, "numpy": {"version": "2.3.4"}, "PIL": {"version": "12.2.0"}, "torch": {"version": "2.12.0+cu130", "cuda": true, "cuda_version": "13.0"}, ` +
	`"torchvision": {"version": "0.27.0+cu130"}, "transformers": {"version": "5.2.0"}, "diffusers": {"version": "0.39.0"}, "ftfy": {"version": "6.3.1"}, "accelerate": {"version": "1.14.0"}}}`

// A negative test per probe finding: what the image lacks fails preflight, in seconds.
func TestProbes(t *testing.T) {
	dir := checkout(t, LayoutFamilies)
	a := New(Config{Checkout: dir})
	probes := a.probes(gpuEnv(t, t.TempDir()))
	require.Len(t, probes, 3, "one python (build and HF are the same by default), the server, and what it imports to serve")
	py, server, imports := probes[0], probes[1], probes[2]
	assert.NoError(t, py.Check([]byte("some warning\n"+goodProbe+"\n"), nil))
	for name, tc := range map[string]struct{ from, to, want string }{
		"no diffusers": {`"diffusers": {"version": "0.39.0"}`, `"diffusers": {"error": "ModuleNotFoundError: No module named 'diffusers'"}`, "diffusers does not import"},
		"no ftfy":      {`"ftfy": {"version": "6.3.1"}`, `"ftfy": {"error": "ModuleNotFoundError"}`, "ftfy does not import"},
		// The pipeline's Qwen2VLProcessor: transformers' Qwen2-VL image processor imports
		// torchvision (a TorchvisionBackend in transformers 5.25.0).
		"no torchvision": {`"torchvision": {"version": "0.27.0+cu130"}`, `"torchvision": {"error": "ModuleNotFoundError: No module named 'torchvision'"}`,
			"torchvision does not import (ModuleNotFoundError: No module named 'torchvision')"},
		"torchvision of another torch": {`"torchvision": {"version": "0.27.0+cu130"}`, `"torchvision": {"error": "RuntimeError: operator torchvision::nms does not exist"}`,
			"torchvision does not import (RuntimeError: operator torchvision::nms does not exist)"},
		"no transformers": {`"transformers": {"version": "5.2.0"}, `, ``, "transformers does not import"},
		"no accelerate":   {`"accelerate": {"version": "1.14.0"}`, `"accelerate": {"error": "ModuleNotFoundError"}`, "accelerate does not import"},
		"no PIL":          {`"PIL": {"version": "12.2.0"}, `, ``, "PIL does not import"},
		"cpu torch":       {`"cuda": true, "cuda_version": "13.0"`, `"cuda": false, "cuda_version": "None"`, "torch 2.12.0+cu130 is a CPU-only build (the dev image's torch is)"},
		"installed tensorrt_model_connect": {`/src/python/tensorrt_model_connect`, `/opt/venv/lib/python3.12/site-packages/tensorrt_model_connect`,
			"not the mounted checkout /src"},
		"no tensorrt": {`"tensorrt": {"version": "11.1.0.106"}, `, ``, "tensorrt does not import"},
	} {
		err := py.Check([]byte(strings.Replace(goodProbe, tc.from, tc.to, 1)), nil)
		assert.ErrorContains(t, err, tc.want, name)
	}
	assert.ErrorContains(t, py.Check([]byte("python3: command not found"), errors.New("exit 127")), "the probe printed no result")
	assert.Contains(t, py.Fix, "Dockerfile.reference")

	// perf-serve (the families checkout's contract): its serve --help must show every flag.
	assert.Equal(t, []string{"python3", "-m", "trtmc_perf_serving", "serve", "--help"}, server.Cmd.Args)
	assert.Contains(t, strings.Join(server.Cmd.Env, " "), "PYTHONPATH=/src/apps/perf_serving:/src/apps/benchmark:/src/core/builder:/src")
	help := "--backend --profile --revision --manifest-root --bundle --runtime-root --worker --model-name --host --port --records --scratch --keep-artifacts --request-timeout"
	assert.NoError(t, server.Check([]byte(help), nil))
	assert.ErrorContains(t, server.Check([]byte(strings.Replace(help, "--keep-artifacts ", "", 1)), nil), "does not show --keep-artifacts")
	assert.ErrorContains(t, server.Check([]byte("ModuleNotFoundError: No module named 'fastapi'"), errors.New("exit status 1")), "the image lacks the server's dependencies")

	// --help loads none of what serve() imports (cli.py @ 3878755c): a second probe
	// imports it, with the server's PYTHONPATH.
	assert.Equal(t, []string{"python3", "-c", importProbe, "uvicorn", "fastapi", "starlette", "numpy", "PIL", "huggingface_hub", "torch",
		"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.backends.trtmc", "trtmc_perf_serving.latents"}, imports.Cmd.Args)
	assert.Equal(t, server.Cmd.Env, imports.Cmd.Env)
	assert.NoError(t, imports.Check([]byte(`{"failed": {}}`), nil))
	err := imports.Check([]byte(`{"failed": {"uvicorn": "ModuleNotFoundError: No module named 'uvicorn'"}}`), nil)
	assert.ErrorContains(t, err, "the server would not serve: python3 does not import uvicorn (ModuleNotFoundError: No module named 'uvicorn')")
	// What is missing comes from the checkout's perf-serve requirements, which the dev
	// image never installs (community-ci.txt @ 2f5f368e has no fastapi or uvicorn): the
	// fix names that file and the recipe that installs it, with its build context.
	for _, p := range []family.Probe{server, imports} {
		assert.Contains(t, p.Fix, "install the checkout's apps/perf_serving/requirements.txt into the image's python", p.Name)
		assert.Contains(t, p.Fix, "`make trtmc-image` builds it with that folder as its context", p.Name)
		assert.NotContains(t, p.Fix, "[serve] extra", "%s: trtmc-server's fix on a perf-serve checkout", p.Name)
	}
	assert.ErrorContains(t, imports.Check([]byte("Traceback"), errors.New("exit 1")), "the import probe printed no result")

	// The edit route: the control plane the native binary execs, from apps/server/python.
	edit := New(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute), HFPython: "/opt/ref/bin/python"}).probes(gpuEnv(t, t.TempDir()))
	require.Len(t, edit, 4, "separate HF python: its own probe")
	assert.NoError(t, edit[0].Check([]byte(strings.Replace(goodProbe, `"cuda": true`, `"cuda": false`, 1)), nil), "the build python needs no CUDA torch")
	assert.Equal(t, []string{"python3", "-m", "trtmc_server", "--help"}, edit[2].Cmd.Args)
	help = "usage: trtmc-server [bundle] --model-name --host --port --runtime-root --records --startup-timeout --request-timeout --max-body-bytes"
	assert.NoError(t, edit[2].Check([]byte(help), nil))
	assert.ErrorContains(t, edit[2].Check([]byte(strings.Replace(help, "--max-body-bytes", "", 1)), nil), "does not show --max-body-bytes")
	assert.Equal(t, []string{"uvicorn", "fastapi", "pydantic", "trtmc_server.app", "trtmc_server.cli"}, edit[3].Cmd.Args[3:])
	assert.Equal(t, "install trtmc-server's [serve] extra (fastapi, pydantic, uvicorn) into the image's python", edit[3].Fix)

	// No contract: no server probe (preflight's requirements name what is missing).
	assert.Len(t, New(Config{Checkout: checkoutNoServer(t, LayoutE9132e79, nil)}).probes(gpuEnv(t, t.TempDir())), 1)
}

// A torch that sees no GPU, on a driver older than the image's CUDA: the stages run under
// the image's entrypoint (its CUDA forward compatibility), and preflight names the host
// driver's CUDA (NVML, Env.CUDADriverVersion) and the image's when they disagree.
func TestProbeNamesTheDriverAndTheImagesCUDA(t *testing.T) {
	noGPU := strings.Replace(goodProbe, `"cuda": true`, `"cuda": false`, 1)
	env := gpuEnv(t, t.TempDir())
	env.CUDADriverVersion = 12080 // NVML's 12.8
	py := New(Config{Checkout: checkout(t, LayoutFamilies)}).probes(env)[0]
	assert.EqualError(t, py.Check([]byte(noGPU), nil), "python 3.12.3: torch 2.12.0+cu130 (CUDA 13.0) sees no CUDA GPU: the host driver supports CUDA 12.8 (NVML), "+
		"older than the image's CUDA_VERSION 13.0.1 and torch's 13.0; the image runs there only through its CUDA forward compatibility "+
		"(NVIDIA's images set it up in their entrypoint, under which the stages run, on data-center GPUs): install a newer driver, or use an image built for CUDA 12.8")
	env.CUDADriverVersion = 13000
	py = New(Config{Checkout: checkout(t, LayoutFamilies)}).probes(env)[0]
	assert.EqualError(t, py.Check([]byte(noGPU), nil), "python 3.12.3: torch 2.12.0+cu130 (CUDA 13.0) sees no CUDA GPU though the host driver supports CUDA 13.0 (NVML) "+
		"and the image's CUDA is 13.0.1: check that the container is given the GPU (the NVIDIA Container Toolkit)")
	assert.NoError(t, py.Check([]byte(strings.Replace(goodProbe, `"image_cuda": "13.0.1"`, `"image_cuda": "13.2"`, 1)), nil),
		"a torch that sees the GPU passes, whatever the versions say (forward compatibility at work)")
}

// The probe script reports every module the probes require (a module it never tries
// would read as "does not import ()"), and the image's CUDA_VERSION: run here with this
// host's python3, where most are absent, which is what it reports.
func TestProbeScriptReportsWhatTheProbesNeed(t *testing.T) {
	cmd := exec.Command("python3", filepath.Join("probe", "trtmc_probe.py"))
	cmd.Env = append(os.Environ(), "CUDA_VERSION=13.0.1")
	out, err := cmd.Output()
	require.NoError(t, err)
	var res probeResult
	require.NoError(t, json.Unmarshal(lastJSONLine(out), &res), "%s", out)
	assert.Equal(t, "13.0.1", res.ImageCUDA)
	for _, m := range append(slices.Clone(buildModules), hfModules...) {
		assert.Contains(t, res.Modules, m, "the probe script does not try %s", m)
	}
}
