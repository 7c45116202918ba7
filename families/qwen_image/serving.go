package qwenimage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The row serves through one of two contracts, chosen from what the checkout's source
// really has, read in preflight (never found out by trying after the build):
//
//   - ServingPerfServe: trtmc-perf-serve's task route, the server public TRTMC has for image
//     work: `python -m trtmc_perf_serving serve --backend trtmc --profile P --bundle B
//     --runtime-root R --worker R/trtmc_benchmark_worker --records F --scratch D
//     --keep-artifacts` with PYTHONPATH=apps/perf_serving:apps/benchmark:core/builder:.
//     (apps/perf_serving/README.md @ 8bd797ae; cli.py and app.py @ 3878755c), POST
//     /v1/tasks/generate_image, the PNG kept under the scratch folder (package wire,
//     wire.Task).
//   - ServingEditRoute: POST /v1/images/edits on trtmc-server, multipart, as the stage-7
//     completion report describes it. No stored TRTMC version has that route; trtmc-server
//     itself is public (apps/server/python/trtmc_server/cli.py @ a9ed5f69; the native
//     apps/server/main.cpp @ 0f958bfb): its native binary, built as the CMake target
//     trtmc-server, execs `python3 -P -m trtmc_server ARGS --worker-binary <itself>` with
//     <exe dir>/server/python on PYTHONPATH, so it is started as that binary, never as the
//     Python module (which refuses to start without --worker-binary).
const (
	ServingPerfServe = "perf-serve"
	ServingEditRoute = "edit-route"
	ServingAuto      = "auto"
)

// contractSource is where a contract's route is declared in a checkout.
type contractSource struct {
	contract string
	file     string // the route's source file, relative to the checkout
	route    string // the text that declares the route there
	also     string // another file the contract needs (the native server's source)
	what     string
}

var contractSources = []contractSource{
	{ServingEditRoute, "apps/server/python/trtmc_server/app.py", "/v1/images/edits", "apps/server/main.cpp",
		"trtmc-server's POST /v1/images/edits (the stage-7 completion report's route)"},
	{ServingPerfServe, "apps/perf_serving/trtmc_perf_serving/app.py", "/v1/tasks/", "apps/perf_serving/trtmc_perf_serving/cli.py",
		"trtmc-perf-serve's POST /v1/tasks/{operation}"},
}

// Serving is the contract a checkout supports, and why: the route found in which file.
type Serving struct {
	Contract string
	Why      string
}

// DetectServing reads the checkout's source for each contract's route. want is the
// contract the user asked for (QUALKIT_TRTMC_SERVING), "" or "auto" for the first the
// checkout has: the edit route (the seed's contract) when present, else perf-serve.
func DetectServing(checkout, want string) (Serving, error) {
	var found []Serving
	var looked []string
	for _, cs := range contractSources {
		src := filepath.Join(checkout, cs.file)
		b, err := os.ReadFile(src)
		switch {
		case err != nil:
			looked = append(looked, fmt.Sprintf("%s: no %s", cs.contract, cs.file))
			continue
		case !bytes.Contains(b, []byte(cs.route)):
			looked = append(looked, fmt.Sprintf("%s: %s declares no %s route", cs.contract, cs.file, cs.route))
			continue
		case !isFile(filepath.Join(checkout, cs.also)):
			looked = append(looked, fmt.Sprintf("%s: %s has the route but %s is missing", cs.contract, cs.file, cs.also))
			continue
		}
		found = append(found, Serving{Contract: cs.contract, Why: fmt.Sprintf("%s: the route %s in %s", cs.what, cs.route, cs.file)})
	}
	if want != "" && want != ServingAuto {
		for _, s := range found {
			if s.Contract == want {
				s.Why += " (" + EnvServing + "=" + want + ")"
				return s, nil
			}
		}
		return Serving{}, fmt.Errorf("%s=%s, but checkout %s does not support it (%s)", EnvServing, want, checkout, strings.Join(append(looked, names(found)...), "; "))
	}
	if len(found) == 0 {
		return Serving{}, fmt.Errorf("checkout %s supports neither serving contract the row drives, %s nor %s (%s)",
			checkout, ServingEditRoute, ServingPerfServe, strings.Join(looked, "; "))
	}
	return found[0], nil
}

func names(found []Serving) []string {
	var out []string
	for _, s := range found {
		out = append(out, s.Contract+": found")
	}
	return out
}

// servingCheckout is the TRTMC source that serves the row, for the fixes that name it.
const servingCheckout = "a commit whose source serves image edits: one with apps/perf_serving (trtmc-perf-serve, the server) " +
	"and apps/benchmark/native (the trtmc_benchmark_worker it drives), the families layout; not main e9132e79, which has " +
	"no HTTP server at all, and not trtmc-server (apps/server), which serves text generation only"

const servingFix = "check out " + servingCheckout + " (or a trtmc-server with the stage-7 route POST /v1/images/edits, which no public TRTMC source has)"

// serving is the checkout's contract, as configured.
func (a TRTMC) serving() (Serving, error) {
	if a.Config.Checkout == "" {
		return Serving{}, errors.New("no TRTMC checkout: " + EnvCheckout + " is not set")
	}
	return DetectServing(a.Config.Checkout, a.Config.Serving)
}

// perfServePythonPath is what perf-serve runs with (README @ 8bd797ae § Serve;
// apps/aiperf_qual/trtmc_aiperf_qual/services.py @ a9ed5f69 § _serve_env), relative to
// the checkout.
var perfServePythonPath = []string{"apps/perf_serving", "apps/benchmark", "core/builder", "."}

// serverPythonPath is where the edit route's control plane lives in the source
// (the native binary puts its build copy, <exe dir>/server/python, first).
var serverPythonPath = []string{"apps/server/python"}

// nativeServerTargets are the CMake targets of the native trtmc-server and of its
// Python control plane's copy into the build folder (CMakeLists.txt @ 0f958bfb:
// add_executable(trtmc-server apps/server/main.cpp), trtmc_server_python).
var nativeServerTargets = []string{"trtmc-server", "trtmc_server_python"}

// Found says, in preflight, which layout and serving contract the checkout has and why.
func (a TRTMC) found() []string {
	var out []string
	if l, err := a.layout(); err == nil {
		out = append(out, "TRTMC layout "+l.Name+" (manifest "+l.Manifest+")")
	}
	if s, err := a.serving(); err == nil {
		out = append(out, "serving contract "+s.Contract+": "+s.Why)
	}
	return out
}
