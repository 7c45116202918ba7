package qwenimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"qualkit/internal/family"
)

// probeResult is what probe/trtmc_probe.py prints.
type probeResult struct {
	Python    string `json:"python"`
	ImageCUDA string `json:"image_cuda"` // the image's CUDA_VERSION
	Modules   map[string]struct {
		Version     string `json:"version"`
		File        string `json:"file"`
		Error       string `json:"error"`
		CUDA        *bool  `json:"cuda"`
		CUDAVersion string `json:"cuda_version"` // torch.version.cuda; "None" for a CPU build
	} `json:"modules"`
}

const imageFix = "use an image that has them: TRTMC's dev image has a CPU-only torch and lacks torchvision, diffusers, ftfy and perf-serve's requirements; " +
	"build families/qwen_image/docker/Dockerfile.reference on top of it with `make trtmc-image` (" + EnvCheckout + " and " + EnvImage + " set: families/qwen_image/README.md)"

// buildModules are what the build and test python imports: the builder (tensorrt and
// the checkout's own tensorrt_model_connect), pytest, and numpy and PIL, which the
// correctness case imports itself (test_e2e.py @ f0a1b69f).
var buildModules = []string{"tensorrt", "tensorrt_model_connect", "pytest", "numpy", "PIL"}

// hfModules are what the HF reference of the correctness case imports: torch with CUDA,
// diffusers (DiffusionPipeline.from_pretrained, test_e2e.py @ f0a1b69f), ftfy (TRTMC's
// MODEL.toml preflight @ e9132e79 turns the case into a skip without it or diffusers),
// accelerate (families/qwen_image/requirements.txt @ 89bc7139), and what loading
// Qwen-Image-Edit-2511's Qwen2VLProcessor needs: transformers, and torchvision, which
// transformers' Qwen2-VL image processor imports (transformers 5.25.0
// models/qwen2_vl/image_processing_qwen2_vl.py: a TorchvisionBackend; 5.2.0, the dev
// image's pin, falls back to another, slower processor without it,
// models/auto/image_processing_auto.py).
var hfModules = []string{"torch", "torchvision", "transformers", "diffusers", "ftfy", "accelerate"}

// Probes check in seconds, in the image and on the row's GPU, what every long stage
// needs: the build Python imports what the builder and pytest need; the HF python what
// the correctness case's reference needs, torch with CUDA (without diffusers or ftfy
// TRTMC's MODEL.toml preflight would turn the case into a skip, hours later; without
// torchvision the case fails an hour in, after the bundle build); and the contract's
// server runs, shows every flag the row passes, and imports what it serves with.
func (a TRTMC) probes(env family.Env) []family.Probe {
	script := filepath.Join(env.Root, "families", "qwen_image", "probe", "trtmc_probe.py")
	check := func(need []string) func([]byte, error) error { return checkModules(need, env.CUDADriverVersion) }
	pythons := []family.Probe{{Name: "python", What: "the build and test python " + a.Config.Python + " in the image",
		Cmd:   family.Command{Args: []string{a.Config.Python, script}, Env: a.env(env), Dir: a.Config.Checkout},
		Check: check(append(slices.Clone(buildModules), hfModules...)), Fix: imageFix}}
	if a.Config.HFPython != a.Config.Python {
		pythons[0].Check = check(buildModules)
		pythons = append(pythons, family.Probe{Name: "hf-python", What: "the HF reference python " + a.Config.HFPython + " in the image",
			Cmd:   family.Command{Args: []string{a.Config.HFPython, script}, Env: a.env(env), Dir: a.Config.Checkout},
			Check: check(hfModules), Fix: imageFix})
	}
	if server, ok := a.serverProbe(env); ok {
		pythons = append(pythons, server, a.serverImports(env))
	}
	return pythons
}

// serverImportModules are what the contract's server imports only once it serves, which
// its --help never loads: perf-serve's serve() (cli.py @ 3878755c) imports uvicorn, its
// app (fastapi, starlette), profiles (the benchmark catalog), backends.trtmc and latents
// (numpy), and platform.fingerprint() imports torch, latents.snapshot() huggingface_hub,
// and the media digest of every image it returns PIL (digests.py @ 7d4725ab); trtmc-server's
// control plane needs its [serve] extra, fastapi, pydantic and uvicorn (pyproject.toml @
// 05348945), and its app.
var serverImportModules = map[string][]string{
	ServingPerfServe: {"uvicorn", "fastapi", "starlette", "numpy", "PIL", "huggingface_hub", "torch",
		"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.backends.trtmc", "trtmc_perf_serving.latents"},
	ServingEditRoute: {"uvicorn", "fastapi", "pydantic", "trtmc_server.app", "trtmc_server.cli"},
}

// serverFix is how to give the image what the contract's server needs: perf-serve's are
// the checkout's apps/perf_serving/requirements.txt (requirements/community-ci.txt @
// 2f5f368e, which the dev image installs, has none of fastapi, uvicorn or pydantic), which
// docker/Dockerfile.reference installs; torch and transformers come with the TRTMC runtime.
var serverFix = map[string]string{
	ServingPerfServe: "install the checkout's apps/perf_serving/requirements.txt into the image's python: families/qwen_image/docker/Dockerfile.reference " +
		"does (`make trtmc-image` builds it with that folder as its context); " +
		"torch and transformers come with the TRTMC runtime image",
	ServingEditRoute: "install trtmc-server's [serve] extra (fastapi, pydantic, uvicorn) into the image's python",
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
	return importsProbe("server-imports", "the imports the server needs to serve, in the image ("+s.Contract+")", "the server would not serve",
		family.Command{Args: []string{a.Config.Python}, Env: envs, Dir: a.Config.Checkout}, serverImportModules[s.Contract], serverFix[s.Contract])
}

// importsProbe runs importProbe with the python of py (its Env and Dir) on mods, and
// fails naming each module that does not import, and why.
func importsProbe(name, what, failure string, py family.Command, mods []string, fix string) family.Probe {
	python := py.Args[0]
	py.Args = append([]string{python, "-c", importProbe}, mods...)
	return family.Probe{Name: name, What: what, Cmd: py, Fix: fix,
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
				return fmt.Errorf("%s: %s does not import %s", failure, python, strings.Join(bad, "; "))
			}
			return nil
		}}
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
		Fix: serverFix[s.Contract] + ", or check out the TRTMC commit the row was written for"}, true
}

// checkModules judges the probe's output: every module imports, the checkout's own
// tensorrt_model_connect is the one imported, and torch sees CUDA (when it does not, why,
// as far as the versions tell: driverCUDA is NVML's, env.CUDADriverVersion).
func checkModules(need []string, driverCUDA int) func([]byte, error) error {
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
				bad = append(bad, torchWithoutCUDA(m.Version, m.CUDAVersion, res.ImageCUDA, driverCUDA))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			return fmt.Errorf("python %s: %s", res.Python, strings.Join(bad, "; "))
		}
		return nil
	}
}

// torchWithoutCUDA says why torch sees no GPU, as far as the versions tell: a CPU-only
// build, or a CUDA newer than the host driver's. NVIDIA's images run a driver older than
// their CUDA through CUDA forward compatibility, which their entrypoint sets up (the
// row's stages run under the image's entrypoint) and which data-center GPUs support.
func torchWithoutCUDA(version, torchCUDA, imageCUDA string, driverCUDA int) string {
	if torchCUDA == "" || torchCUDA == "None" {
		return "torch " + version + " is a CPU-only build (the dev image's torch is): the HF reference needs a CUDA GPU"
	}
	msg := fmt.Sprintf("torch %s (CUDA %s) sees no CUDA GPU", version, torchCUDA)
	if driverCUDA <= 0 {
		return msg
	}
	driver := fmt.Sprintf("%d.%d", driverCUDA/1000, driverCUDA%1000/10)
	var newer []string
	for _, c := range []struct{ what, v string }{{"the image's CUDA_VERSION", imageCUDA}, {"torch's", torchCUDA}} {
		if cudaNewer(c.v, driverCUDA) {
			newer = append(newer, c.what+" "+c.v)
		}
	}
	if len(newer) == 0 {
		return msg + fmt.Sprintf(" though the host driver supports CUDA %s (NVML) and the image's CUDA is %s: check that the container is given the GPU (the NVIDIA Container Toolkit)", driver, orUnset(imageCUDA))
	}
	return msg + fmt.Sprintf(": the host driver supports CUDA %s (NVML), older than %s; the image runs there only through its CUDA forward compatibility "+
		"(NVIDIA's images set it up in their entrypoint, under which the stages run, on data-center GPUs): install a newer driver, or use an image built for CUDA %s",
		driver, strings.Join(newer, " and "), driver)
}

// cudaNewer says whether a CUDA version ("13.0", "13.0.1") is newer than NVML's form
// of the driver's (1000*major + 10*minor).
func cudaNewer(v string, driver int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && major*1000+minor*10 > driver
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
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
