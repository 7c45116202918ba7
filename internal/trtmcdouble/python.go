package trtmcdouble

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// PythonVersion is the interpreter version the double reports.
const PythonVersion = "3.12.3"

// EnvMissingModules lists modules (comma-separated) the probe and the legacy correctness
// case report as not importable, for negative tests.
const EnvMissingModules = "QUALKIT_DOUBLE_MISSING_MODULES"

const pythonUsage = "the double plays only `python3 .../trtmc_probe.py`, `python3 -m tensorrt_model_connect build ...`, `python3 -m pytest NODEID ...`, `python3 -m trtmc_server ...` and `python3 -m trtmc_perf_serving serve ...`"

// pythonMain plays the image's interpreter for the three calls qualkit makes.
func pythonMain(p *proc) int {
	args := p.args[1:]
	switch {
	case len(args) == 0:
		return p.fail(exitUsage, "python3 (qualkit contract double): no interactive interpreter; %s", pythonUsage)
	case len(args) == 1 && (args[0] == "--version" || args[0] == "-V"):
		fmt.Fprintln(p.stdout, "Python "+PythonVersion)
		return exitOK
	case args[0] == "-m" && len(args) >= 2:
		return pythonModule(p, args[1], args[2:])
	case strings.HasPrefix(args[0], "-"):
		return p.fail(exitUsage, "python3 (qualkit contract double): option %s is not played; %s", args[0], pythonUsage)
	case filepath.Base(args[0]) == "trtmc_probe.py":
		return probe(p, args[0])
	}
	return p.fail(exitUsage, "python3 (qualkit contract double): script %s is not played; %s", args[0], pythonUsage)
}

func pythonModule(p *proc, module string, args []string) int {
	switch module {
	case "pytest":
		return pytestMain(p, args)
	case "trtmc_server":
		return serverMain(p, args)
	case "trtmc_perf_serving":
		return perfServeMain(p, args)
	case "tensorrt_model_connect", "tensorrt_model_connect.__main__":
		if len(args) == 0 || args[0] != "build" {
			return p.fail(exitUsage, "python3 -m %s (qualkit contract double): only the build command is played, as `-m %s build HF_ID -o OUT ...`", module, module)
		}
		return buildMain(p, args[1:], "")
	}
	return p.fail(exitFail, "%s: No module named %s (qualkit contract double: %s)", p.args[0], module, pythonUsage)
}

// probeModules is what the probe reports for each module when it is importable.
var probeModules = map[string]map[string]any{
	"tensorrt":               {"version": TRTVersion},
	"tensorrt_model_connect": {"version": "0.1.0", "file": "/src/python/tensorrt_model_connect/__init__.py"},
	"torch":                  {"version": "2.12.0+cu130", "cuda": true, "device_count": 0},
	"diffusers":              {"version": "0.40.0"},
	"ftfy":                   {"version": "6.3.1"},
	"pytest":                 {"version": "8.4.2"},
	"PIL":                    {"version": "12.2.0"},
}

// missingModules is the set named by QUALKIT_DOUBLE_MISSING_MODULES.
func (p *proc) missingModules() []string {
	var out []string
	for m := range strings.SplitSeq(p.getenv(EnvMissingModules), ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// probe plays qualkit's environment probe: one JSON object on stdout.
func probe(p *proc, script string) int {
	if !isFile(p.abs(script)) {
		return p.fail(exitUsage, "%s: can't open file '%s': [Errno 2] No such file or directory", p.args[0], script)
	}
	missing := p.missingModules()
	modules := map[string]any{}
	for name, info := range probeModules {
		if slices.Contains(missing, name) {
			modules[name] = map[string]string{"error": fmt.Sprintf("No module named '%s'", name)}
			continue
		}
		modules[name] = info
	}
	out, _ := json.Marshal(map[string]any{Marker: true, "python": PythonVersion, "modules": modules})
	fmt.Fprintln(p.stdout, string(out))
	return exitOK
}
