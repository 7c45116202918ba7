package qwenimage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"qualkit/internal/harness"
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
// later); and trtmc-server exists and shows every flag the row passes.
func (a TRTMC) Probes(env harness.Env) []harness.Probe {
	script := filepath.Join(env.Root, "families", "qwen_image", "probe", "trtmc_probe.py")
	build := []string{"tensorrt", "tensorrt_model_connect", "pytest"}
	hf := []string{"torch", "diffusers", "ftfy"}
	pythons := []harness.Probe{{Name: "python", What: "the build and test python " + a.Config.Python + " in the image",
		Cmd:   harness.Command{Args: []string{a.Config.Python, script}, Env: a.env(env), Dir: a.Config.Checkout},
		Check: a.checkModules(append(build, hf...)), Fix: imageFix}}
	if a.Config.HFPython != a.Config.Python {
		pythons[0].Check = a.checkModules(build)
		pythons = append(pythons, harness.Probe{Name: "hf-python", What: "the HF reference python " + a.Config.HFPython + " in the image",
			Cmd:   harness.Command{Args: []string{a.Config.HFPython, script}, Env: a.env(env), Dir: a.Config.Checkout},
			Check: a.checkModules(hf), Fix: imageFix})
	}
	server := harness.Probe{Name: "server", What: a.Config.ServeProgram + " in the image",
		Cmd: harness.Command{Args: []string{a.Config.ServeProgram, "--help"}, Env: a.env(env), Dir: a.Config.Checkout},
		Check: func(out []byte, runErr error) error {
			l, _ := a.layout()
			if runErr != nil {
				return fmt.Errorf("%s --help failed (%v): this checkout (layout %s) predates trtmc-server, or the image does not install it; TRTMC main e9132e79 has no HTTP server at all", a.Config.ServeProgram, runErr, l.Name)
			}
			var missing []string
			for _, f := range a.serveFlags() {
				if !bytes.Contains(out, []byte(f)) {
					missing = append(missing, f)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%s --help does not show %s, which the row passes: this server is another version than the one the row was written for", a.Config.ServeProgram, strings.Join(missing, " "))
			}
			return nil
		},
		Fix: "use a TRTMC checkout and image whose trtmc-server serves POST /v1/images/edits, or name the server with " + EnvServeProgram}
	return append(pythons, server)
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
