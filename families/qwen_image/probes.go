package qwenimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"qualkit/internal/family"
)

// probeResult is what probe/trtmc_probe.py prints.
type probeResult struct {
	Python  string `json:"python"`
	Modules map[string]struct {
		Version string `json:"version"`
		File    string `json:"file"`
		Error   string `json:"error"`
		CUDA    *bool  `json:"cuda"`
	} `json:"modules"`
}

const imageFix = "use an image that has them: TRTMC's dev image lacks diffusers and ftfy and has a CPU-only torch; build families/qwen_image/docker/Dockerfile.reference on top of it (families/qwen_image/README.md) and set " + EnvImage

// Probes check in seconds, in the image and on the row's GPU, what every long stage
// needs: the build Python imports tensorrt and the checkout's tensorrt_model_connect and
// runs pytest; the HF python has torch with CUDA, diffusers and ftfy (TRTMC's
// MODEL.toml preflight would otherwise turn the correctness case into a skip, hours
// later); and the contract's server runs and shows every flag the row passes.
func (a TRTMC) probes(env family.Env) []family.Probe {
	script := filepath.Join(env.Root, "families", "qwen_image", "probe", "trtmc_probe.py")
	build := []string{"tensorrt", "tensorrt_model_connect", "pytest"}
	hf := []string{"torch", "diffusers", "ftfy"}
	pythons := []family.Probe{{Name: "python", What: "the build and test python " + a.Config.Python + " in the image",
		Cmd:   family.Command{Args: []string{a.Config.Python, script}, Env: a.env(env), Dir: a.Config.Checkout},
		Check: a.checkModules(append(build, hf...)), Fix: imageFix}}
	if a.Config.HFPython != a.Config.Python {
		pythons[0].Check = a.checkModules(build)
		pythons = append(pythons, family.Probe{Name: "hf-python", What: "the HF reference python " + a.Config.HFPython + " in the image",
			Cmd:   family.Command{Args: []string{a.Config.HFPython, script}, Env: a.env(env), Dir: a.Config.Checkout},
			Check: a.checkModules(hf), Fix: imageFix})
	}
	if server, ok := a.serverProbe(env); ok {
		pythons = append(pythons, server, a.serverImports(env))
	}
	return pythons
}

// serverImportModules are what the contract's server imports only once it serves, which
// its --help never loads: perf-serve's serve() (cli.py @ 3878755c) imports uvicorn, its
// app (fastapi, starlette), profiles (the benchmark catalog), backends.trtmc and latents
// (numpy), and platform.fingerprint() imports torch, latents.snapshot() huggingface_hub;
// trtmc-server's control plane needs its [serve] extra, fastapi, pydantic and uvicorn
// (pyproject.toml @ 05348945), and its app.
var serverImportModules = map[string][]string{
	ServingPerfServe: {"uvicorn", "fastapi", "starlette", "numpy", "huggingface_hub", "torch",
		"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.backends.trtmc", "trtmc_perf_serving.latents"},
	ServingEditRoute: {"uvicorn", "fastapi", "pydantic", "trtmc_server.app", "trtmc_server.cli"},
}

// importProbe imports each module named on its command line and prints one JSON object
// of those that failed, with why; it never fails itself.
const importProbe = `import importlib, json, sys
bad = {}
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except BaseException as e:
        bad[m] = type(e).__name__ + ": " + str(e)
print(json.dumps({"failed": bad}))`

// serverImports imports, in the image and with the server's own PYTHONPATH, what the
// contract's server imports once it serves: a --help that runs proves none of it, and a
// server missing one would fail at serve, after the correctness case.
func (a TRTMC) serverImports(env family.Env) family.Probe {
	s, _ := a.serving()
	envs := a.envWith(env, serverPythonPath)
	if s.Contract == ServingPerfServe {
		envs = a.envWith(env, perfServePythonPath)
	}
	mods := serverImportModules[s.Contract]
	return family.Probe{Name: "server-imports", What: "the imports the server needs to serve, in the image (" + s.Contract + ")",
		Cmd: family.Command{Args: append([]string{a.Config.Python, "-c", importProbe}, mods...), Env: envs, Dir: a.Config.Checkout},
		Check: func(out []byte, runErr error) error {
			var res struct {
				Failed map[string]string `json:"failed"`
			}
			if err := json.Unmarshal(lastJSONLine(out), &res); err != nil {
				return fmt.Errorf("the import probe printed no result (%v): %s", runErr, clip(out))
			}
			var bad []string
			for _, m := range mods {
				if why, ok := res.Failed[m]; ok {
					bad = append(bad, m+" ("+why+")")
				}
			}
			if len(bad) > 0 {
				return fmt.Errorf("the server would not serve: %s does not import %s", a.Config.Python, strings.Join(bad, "; "))
			}
			return nil
		},
		Fix: "install the server's dependencies into the image's python (perf-serve: apps/perf_serving/requirements.txt and the TRTMC runtime's torch; trtmc-server: the [serve] extra)"}
}

// serverProbe runs the contract's server with --help, as the row will start it, and
// checks that it shows every flag the row passes: perf-serve's `python3 -m
// trtmc_perf_serving serve --help`; for the edit route the control plane the native
// binary execs (`python3 -m trtmc_server --help`, from apps/server/python: the native
// binary is built later, in the build stage). No contract: nothing to probe (preflight's
// requirements say so).
func (a TRTMC) serverProbe(env family.Env) (family.Probe, bool) {
	s, err := a.serving()
	if err != nil {
		return family.Probe{}, false
	}
	args := []string{a.Config.Python, "-m", "trtmc_server", "--help"}
	envs := a.envWith(env, serverPythonPath)
	flags := serveFlags(serverArgs(family.ServeSpec{}, ""))
	if s.Contract == ServingPerfServe {
		args = []string{a.Config.Python, "-m", "trtmc_perf_serving", "serve", "--help"}
		envs = a.envWith(env, perfServePythonPath)
		flags = serveFlags(PerfServeArgs(family.ServeSpec{}, ""))
	}
	name := strings.Join(args[1:3], " ")
	return family.Probe{Name: "server", What: name + " in the image (" + s.Contract + ")",
		Cmd: family.Command{Args: args, Env: envs, Dir: a.Config.Checkout},
		Check: func(out []byte, runErr error) error {
			if runErr != nil {
				return fmt.Errorf("%s --help failed (%v): the image lacks the server's dependencies (%s): %s", name, runErr, s.Why, clip(out))
			}
			var missing []string
			for _, f := range flags {
				if !bytes.Contains(out, []byte(f)) {
					missing = append(missing, f)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s --help does not show %s, which the row passes: this server is another version than the one the row was written for", name, strings.Join(missing, " "))
			}
			return nil
		},
		Fix: "install the server's dependencies into the image's python (perf-serve: apps/perf_serving/requirements.txt; trtmc-server: the [serve] extra), or check out the TRTMC commit the row was written for"}, true
}

// checkModules judges the probe's output: every module imports, the checkout's own
// tensorrt_model_connect is the one imported, and torch sees CUDA.
func (a TRTMC) checkModules(need []string) func([]byte, error) error {
	return func(out []byte, runErr error) error {
		var res probeResult
		line := lastJSONLine(out)
		if err := json.Unmarshal(line, &res); err != nil {
			return fmt.Errorf("the probe printed no result (%v): %s", runErr, clip(out))
		}
		var bad []string
		for _, name := range need {
			m, ok := res.Modules[name]
			switch {
			case !ok || m.Error != "":
				bad = append(bad, fmt.Sprintf("%s does not import (%s)", name, m.Error))
			case name == "tensorrt_model_connect" && !strings.HasPrefix(m.File, srcDir+"/"):
				bad = append(bad, fmt.Sprintf("tensorrt_model_connect comes from %s, not the mounted checkout %s: the bundle would be built by another TRTMC", m.File, srcDir))
			case name == "torch" && (m.CUDA == nil || !*m.CUDA):
				bad = append(bad, "torch "+m.Version+" sees no CUDA GPU (the dev image's torch is CPU-only): the HF reference needs one")
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			return fmt.Errorf("python %s: %s", res.Python, strings.Join(bad, "; "))
		}
		return nil
	}
}

func lastJSONLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); bytes.HasPrefix(l, []byte("{")) {
			return l
		}
	}
	return nil
}
