package qwenimage

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/wire"
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

// buildModules are what the builder and the case (test_e2e.py @ f0a1b69f) import.
var buildModules = []string{"tensorrt", "tensorrt_model_connect", "pytest", "numpy", "PIL"}

// hfModules are what the case's HF reference imports: torch with CUDA, diffusers
// (test_e2e.py @ f0a1b69f), ftfy (MODEL.toml preflight @ e9132e79 skips the case
// without it), accelerate (families/qwen_image/requirements.txt @ 89bc7139), and for
// the Qwen2VLProcessor transformers and torchvision (transformers 5.25.0
// models/qwen2_vl/image_processing_qwen2_vl.py).
var hfModules = []string{"torch", "torchvision", "transformers", "diffusers", "ftfy", "accelerate"}

// probes check in seconds, in the image on the row's GPU, what the long stages need:
// the pythons' imports, and the server's --help flags and imports.
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

// serverImportModules are what the server imports only once it serves: perf-serve's
// serve() (cli.py @ 3878755c; PIL for digests.py @ 7d4725ab); trtmc-server's [serve]
// extra (pyproject.toml @ 05348945).
var serverImportModules = map[string][]string{
	ServingPerfServe: {"uvicorn", "fastapi", "starlette", "numpy", "PIL", "huggingface_hub", "torch",
		"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.backends.trtmc", "trtmc_perf_serving.latents"},
	ServingEditRoute: {"uvicorn", "fastapi", "pydantic", "trtmc_server.app", "trtmc_server.cli"},
}

// serverFix: the dev image's requirements/community-ci.txt @ 2f5f368e has none of
// fastapi, uvicorn or pydantic.
var serverFix = map[string]string{
	ServingPerfServe: "install the checkout's apps/perf_serving/requirements.txt into the image's python: families/qwen_image/docker/Dockerfile.reference " +
		"does (`make trtmc-image` builds it with that folder as its context); " +
		"torch and transformers come with the TRTMC runtime image",
	ServingEditRoute: "install trtmc-server's [serve] extra (fastapi, pydantic, uvicorn) into the image's python",
}

// importProbe prints the modules named on its command line that fail to import, and why.
const importProbe = `import importlib, json, sys
bad = {}
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except BaseException as e:
        bad[m] = type(e).__name__ + ": " + str(e)
print(json.dumps({"failed": bad}))`

// serverImports imports, with the server's own PYTHONPATH, what the server imports
// once it serves (its --help proves none of it).
func (a TRTMC) serverImports(env family.Env) family.Probe {
	s, _ := a.serving()
	return importsProbe("server-imports", "the imports the server needs to serve, in the image ("+s.Contract+")", "the server would not serve",
		family.Command{Args: []string{a.Config.Python}, Env: a.serverEnv(env), Dir: a.Config.Checkout}, serverImportModules[s.Contract], serverFix[s.Contract])
}

// serverEnv is env with the contract's server's PYTHONPATH.
func (a TRTMC) serverEnv(env family.Env) []string {
	if a.perfServe() {
		return a.envWith(env, perfServePythonPath)
	}
	return a.envWith(env, serverPythonPath)
}

// importsProbe runs importProbe with py's python, Env and Dir on mods.
func importsProbe(name, what, failure string, py family.Command, mods []string, fix string) family.Probe {
	python := py.Args[0]
	py.Args = append([]string{python, "-c", importProbe}, mods...)
	return family.Probe{Name: name, What: what, Cmd: py, Fix: fix,
		Check: func(out []byte, runErr error) error {
			var res struct {
				Failed map[string]string `json:"failed"`
			}
			if err := json.Unmarshal(lastJSONLine(out), &res); err != nil {
				return fmt.Errorf("the import probe printed no result (%v): %s", runErr, wire.Clip(out, 300))
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

// serverProbe checks that the server's --help shows every flag the row passes: the edit
// route's control plane the native binary execs (built later), or perf-serve's serve.
func (a TRTMC) serverProbe(env family.Env) (family.Probe, bool) {
	s, err := a.serving()
	if err != nil {
		return family.Probe{}, false
	}
	args := []string{a.Config.Python, "-m", "trtmc_server", "--help"}
	flags := serveFlags(serverArgs(family.ServeSpec{}, ""))
	if s.Contract == ServingPerfServe {
		args = []string{a.Config.Python, "-m", "trtmc_perf_serving", "serve", "--help"}
		flags = serveFlags(PerfServeArgs(family.ServeSpec{}, ""))
	}
	name := strings.Join(args[1:3], " ")
	return family.Probe{Name: "server", What: name + " in the image (" + s.Contract + ")",
		Cmd: family.Command{Args: args, Env: a.serverEnv(env), Dir: a.Config.Checkout},
		Check: func(out []byte, runErr error) error {
			if runErr != nil {
				return fmt.Errorf("%s --help failed (%v): the image lacks the server's dependencies (%s): %s", name, runErr, s.Why, wire.Clip(out, 300))
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

// checkModules: every module imports, tensorrt_model_connect is the checkout's, and
// torch sees CUDA (else why, given NVML's driverCUDA).
func checkModules(need []string, driverCUDA int) func([]byte, error) error {
	return func(out []byte, runErr error) error {
		var res probeResult
		if err := json.Unmarshal(lastJSONLine(out), &res); err != nil {
			return fmt.Errorf("the probe printed no result (%v): %s", runErr, wire.Clip(out, 300))
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

// torchWithoutCUDA says why torch sees no GPU: a CPU-only build, or a CUDA newer than
// the driver's (which only forward compatibility, on data-center GPUs, can run).
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
		return msg + fmt.Sprintf(" though the host driver supports CUDA %s (NVML) and the image's CUDA is %s: check that the container is given the GPU (the NVIDIA Container Toolkit)", driver, cmp.Or(imageCUDA, "unset"))
	}
	return msg + fmt.Sprintf(": the host driver supports CUDA %s (NVML), older than %s; the image runs there only through its CUDA forward compatibility "+
		"(NVIDIA's images set it up in their entrypoint, under which the stages run, on data-center GPUs): install a newer driver, or use an image built for CUDA %s",
		driver, strings.Join(newer, " and "), driver)
}

// cudaNewer says whether CUDA version v ("13.0.1") is newer than NVML's driver's.
func cudaNewer(v string, driver int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && major*1000+minor*10 > driver
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
