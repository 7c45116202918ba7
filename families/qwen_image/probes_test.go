package qwenimage

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodProbe = `{"python": "3.12.3", "modules": {"tensorrt": {"version": "11.1.0.106"}, "tensorrt_model_connect": {"version": "0.1.0", "file": "/src/python/tensorrt_model_connect/__init__.py"}, ` +
	`"pytest": {"version": "8.4.2"}, "torch": {"version": "2.12.0+cu130", "cuda": true}, "diffusers": {"version": "0.40.0"}, "ftfy": {"version": "6.3.1"}}}`

// A negative test per probe finding: what the image lacks fails preflight, in seconds.
func TestProbes(t *testing.T) {
	dir := checkout(t, LayoutFamilies)
	a := New(Config{Checkout: dir})
	probes := a.probes(gpuEnv(t, t.TempDir()))
	require.Len(t, probes, 3, "one python (build and HF are the same by default), the server, and what it imports to serve")
	py, server, imports := probes[0], probes[1], probes[2]
	assert.NoError(t, py.Check([]byte("some warning\n"+goodProbe+"\n"), nil))
	for name, tc := range map[string]struct{ from, to, want string }{
		"no diffusers": {`"diffusers": {"version": "0.40.0"}`, `"diffusers": {"error": "ModuleNotFoundError: No module named 'diffusers'"}`, "diffusers does not import"},
		"no ftfy":      {`"ftfy": {"version": "6.3.1"}`, `"ftfy": {"error": "ModuleNotFoundError"}`, "ftfy does not import"},
		"cpu torch":    {`"cuda": true`, `"cuda": false`, "sees no CUDA GPU (the dev image's torch is CPU-only)"},
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
	assert.Equal(t, []string{"python3", "-c", importProbe, "uvicorn", "fastapi", "starlette", "numpy", "huggingface_hub", "torch",
		"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.backends.trtmc", "trtmc_perf_serving.latents"}, imports.Cmd.Args)
	assert.Equal(t, server.Cmd.Env, imports.Cmd.Env)
	assert.NoError(t, imports.Check([]byte(`{"failed": {}}`), nil))
	err := imports.Check([]byte(`{"failed": {"uvicorn": "ModuleNotFoundError: No module named 'uvicorn'"}}`), nil)
	assert.ErrorContains(t, err, "the server would not serve: python3 does not import uvicorn (ModuleNotFoundError: No module named 'uvicorn')")
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

	// No contract: no server probe (preflight's requirements name what is missing).
	assert.Len(t, New(Config{Checkout: checkoutNoServer(t, LayoutE9132e79, nil)}).probes(gpuEnv(t, t.TempDir())), 1)
}
