package qwenimage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The row serves through one of two contracts, read from the checkout's source in
// preflight:
//
//   - ServingPerfServe: trtmc-perf-serve's POST /v1/tasks/generate_image
//     (apps/perf_serving/README.md @ 8bd797ae; cli.py and app.py @ 3878755c; wire.Task).
//   - ServingEditRoute: trtmc-server's multipart POST /v1/images/edits, as the stage-7
//     report describes it; no stored TRTMC has that route. trtmc-server is public
//     (apps/server/python/trtmc_server/cli.py @ a9ed5f69): its native binary
//     (apps/server/main.cpp @ 0f958bfb) execs `python3 -P -m trtmc_server ARGS
//     --worker-binary <itself>`, so it is started as that binary.
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

// DetectServing reads the checkout's source for each contract's route: want's
// (QUALKIT_TRTMC_SERVING), or for "" and "auto" the edit route first, else perf-serve.
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
			looked = append(looked, s.Contract+": found")
		}
		return Serving{}, fmt.Errorf("%s=%s, but checkout %s does not support it (%s)", EnvServing, want, checkout, strings.Join(looked, "; "))
	}
	if len(found) == 0 {
		return Serving{}, fmt.Errorf("checkout %s supports neither serving contract the row drives, %s nor %s (%s)",
			checkout, ServingEditRoute, ServingPerfServe, strings.Join(looked, "; "))
	}
	return found[0], nil
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
// apps/aiperf_qual/trtmc_aiperf_qual/services.py @ a9ed5f69 § _serve_env).
var perfServePythonPath = []string{"apps/perf_serving", "apps/benchmark", "core/builder", "."}

var serverPythonPath = []string{"apps/server/python"} // the edit route's control plane

// nativeServerTargets are the CMake targets of the native trtmc-server and of its
// Python control plane's copy into the build folder (CMakeLists.txt @ 0f958bfb:
// add_executable(trtmc-server apps/server/main.cpp), trtmc_server_python).
var nativeServerTargets = []string{"trtmc-server", "trtmc_server_python"}

// found says, in preflight, which layout and serving contract the checkout has and why.
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
