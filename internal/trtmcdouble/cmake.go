package trtmcdouble

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// cmakeVar is a -D option of TRTMC's documented native build (source-build.md).
type cmakeVar struct {
	typ      string
	required bool
	valid    func(string) bool
	want     string // what valid accepts, for the message
}

func oneOf(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if v == x {
				return true
			}
		}
		return false
	}
}

var cudaArch = regexp.MustCompile(`^[0-9]+[a-z]?-real$`)

// cmakeVars are the only -D options the double accepts, with the values it plays.
var cmakeVars = map[string]cmakeVar{
	"CMAKE_BUILD_TYPE":                  {"STRING", true, oneOf("Release"), "Release"},
	"CMAKE_CUDA_ARCHITECTURES":          {"STRING", true, cudaArch.MatchString, "<SM>-real, e.g. 90-real"},
	"TRTMC_BUILD_BACKEND_TRT":           {"BOOL", true, oneOf("ON"), "ON"},
	"TRTMC_BUILD_BACKEND_RTX":           {"BOOL", true, oneOf("OFF"), "OFF"},
	"TRTMC_BUILD_TESTS":                 {"BOOL", true, oneOf("ON", "OFF"), "ON or OFF"},
	"TRTMC_BUILD_BENCHMARKS":            {"BOOL", true, oneOf("ON", "OFF"), "ON or OFF"},
	"TRTMC_BUILD_EXAMPLES":              {"BOOL", false, oneOf("ON", "OFF"), "ON or OFF"},
	"TRTMC_ENABLE_LIBTORCH_MULTINOMIAL": {"BOOL", true, oneOf("OFF"), "OFF"},
}

const cmakeUsage = "the double plays only `cmake -S SRC -B BUILD -G Ninja -DKEY=VALUE...` and `cmake --build BUILD [--parallel [N]] --target T...`"

func cmakeMain(p *proc) int {
	args := p.args[1:]
	switch {
	case len(args) == 1 && args[0] == "--version":
		fmt.Fprintln(p.stdout, "cmake version 3.31.6 (qualkit contract double)")
		return exitOK
	case len(args) > 0 && args[0] == "--build":
		return cmakeBuild(p, args[1:])
	}
	return cmakeConfigure(p, args)
}

// cmakeDef is one -D option: KEY[:TYPE]=VALUE.
type cmakeDef struct{ key, typ, value string }

func parseCMakeDef(s string) (cmakeDef, error) {
	kt, v, ok := strings.Cut(s, "=")
	if !ok {
		return cmakeDef{}, fmt.Errorf("CMake Error: -D%s is not KEY=VALUE", s)
	}
	k, t, _ := strings.Cut(kt, ":")
	cv, known := cmakeVars[k]
	if !known {
		return cmakeDef{}, fmt.Errorf("CMake Error: unknown option -D%s (qualkit contract double: TRTMC's documented build sets only %s)", kt, strings.Join(cmakeVarNames(), ", "))
	}
	if !cv.valid(v) {
		return cmakeDef{}, fmt.Errorf("CMake Error: -D%s=%s: the double plays only %s", k, v, cv.want)
	}
	if t == "" {
		t = cv.typ
	}
	return cmakeDef{key: k, typ: t, value: v}, nil
}

func cmakeVarNames() []string {
	names := make([]string, 0, len(cmakeVars))
	for k := range cmakeVars {
		names = append(names, "-D"+k)
	}
	sort.Strings(names)
	return names
}

// cmakeConfigure plays `cmake -S SRC -B BUILD -G Ninja -D...`: it checks the options and
// the checkout, and writes BUILD/CMakeCache.txt.
func cmakeConfigure(p *proc, args []string) int {
	var src, build, gen string
	defs := map[string]cmakeDef{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		var next string
		if a == "-S" || a == "-B" || a == "-G" || a == "-D" {
			if i+1 == len(args) || args[i+1] == "" {
				return p.fail(exitUsage, "CMake Error: %s needs a value", a)
			}
			i++
			next = args[i]
		}
		switch {
		case a == "-S" && next != "":
			src = next
		case a == "-B" && next != "":
			build = next
		case a == "-G" && next != "":
			gen = next
		case a == "-D" && next != "", strings.HasPrefix(a, "-D") && len(a) > 2:
			if a != "-D" {
				next = a[2:]
			}
			d, err := parseCMakeDef(next)
			if err != nil {
				return p.fail(exitUsage, "%v", err)
			}
			defs[d.key] = d
		default:
			return p.fail(exitUsage, "CMake Error: Unknown argument %s (qualkit contract double: %s)", a, cmakeUsage)
		}
	}
	switch {
	case src == "" || build == "" || gen == "":
		return p.fail(exitUsage, "CMake Error: -S, -B and -G are all required by the double (%s)", cmakeUsage)
	case gen != "Ninja":
		return p.fail(exitUsage, "CMake Error: generator %q: TRTMC's documented build uses -G Ninja", gen)
	}
	var missing []string
	for _, k := range cmakeVarNames() {
		if cmakeVars[k[2:]].required && defs[k[2:]].key == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return p.fail(exitUsage, "CMake Error: the documented build sets %s; missing: %s", strings.Join(cmakeVarNames(), ", "), strings.Join(missing, ", "))
	}
	src, build = p.abs(src), p.abs(build)
	if layoutOf(src) == "" {
		return p.fail(exitFail, "CMake Error: the source directory %q is not a TRTMC checkout of either layout (qualkit contract double: no %s nor %s)", src, legacyModelTOML, familiesManifest)
	}
	if err := writeCMakeCache(src, build, defs); err != nil {
		return p.fail(exitFail, "CMake Error: %v", err)
	}
	fmt.Fprintf(p.stdout, "-- qualkit contract double of cmake: nothing is compiled\n-- Configuring done\n-- Generating done\n-- Build files have been written to: %s\n", build)
	return exitOK
}

func writeCMakeCache(src, build string, defs map[string]cmakeDef) error {
	var b strings.Builder
	b.WriteString("# This is the CMakeCache file.\n")
	b.WriteString("# Written by the qualkit contract double of cmake (qualkit_contract_double: true): not a real CMake cache, nothing was compiled.\n")
	keys := make([]string, 0, len(defs))
	for k := range defs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s:%s=%s\n", k, defs[k].typ, defs[k].value)
	}
	fmt.Fprintf(&b, "CMAKE_GENERATOR:INTERNAL=Ninja\nCMAKE_HOME_DIRECTORY:INTERNAL=%s\nQUALKIT_CONTRACT_DOUBLE:INTERNAL=ON\n", src)
	if err := os.MkdirAll(build, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(build, "CMakeCache.txt"), []byte(b.String()), 0o644)
}

// cmakeBuild plays `cmake --build BUILD [--parallel [N]] --target T...`.
func cmakeBuild(p *proc, args []string) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return p.fail(exitUsage, "Usage: cmake --build <dir> [options] [-- [native-options]] (qualkit contract double: %s)", cmakeUsage)
	}
	build := p.abs(args[0])
	var targets []string
	for i := 1; i < len(args); i++ {
		switch a := args[i]; a {
		case "--parallel":
			if i+1 < len(args) {
				if n, err := strconv.Atoi(args[i+1]); err == nil && n > 0 {
					i++
				}
			}
		case "--target":
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				targets = append(targets, args[i])
			}
		default:
			return p.fail(exitUsage, "Unknown argument %s (qualkit contract double: %s)", a, cmakeUsage)
		}
	}
	if len(targets) == 0 {
		return p.fail(exitUsage, "cmake --build: no --target: the double builds only named targets (%s)", cmakeUsage)
	}
	cache, err := readCMakeCache(build)
	if err != nil {
		return p.fail(exitFail, "Error: could not load cache (%v)", err)
	}
	layout := layoutOf(cache["CMAKE_HOME_DIRECTORY"])
	if layout == "" {
		return p.fail(exitFail, "Error: CMAKE_HOME_DIRECTORY %q of %s is no TRTMC checkout any more", cache["CMAKE_HOME_DIRECTORY"], build)
	}
	var outputs []buildOutput
	for _, t := range targets {
		outs, err := targetOutputs(t, layout, cache)
		if err != nil {
			return p.fail(exitFail, "ninja: error: %v", err)
		}
		outputs = append(outputs, outs...)
	}
	for i, o := range outputs {
		if err := o.write(p.self, build); err != nil {
			return p.fail(exitFail, "ninja: build stopped: %s: %v", o.path, err)
		}
		fmt.Fprintf(p.stdout, "[%d/%d] qualkit contract double: wrote %s\n", i+1, len(outputs), filepath.Join(build, o.path))
	}
	return exitOK
}

// buildOutput is one file a target produces: a copy of the double (program) or a marker
// text file (library).
type buildOutput struct {
	path    string // relative to the build directory
	program bool
	copyOf  string // a source file the target copies as is
}

func (o buildOutput) write(self, build string) error {
	dst := filepath.Join(build, o.path)
	if o.program {
		return writeExecutable(self, dst)
	}
	if o.copyOf != "" {
		b, err := os.ReadFile(o.copyOf)
		if err != nil {
			return err
		}
		return writeFileAtomic(dst, b, 0o644)
	}
	text := "qualkit contract double: stands for " + filepath.Base(o.path) + "; no code inside\n"
	return writeFileAtomic(dst, []byte(text), 0o755)
}

// targetOutputs is what target t produces in layout, given the configured cache.
func targetOutputs(t, layout string, cache map[string]string) ([]buildOutput, error) {
	noRule := fmt.Errorf("no rule to make target '%s'", t)
	families := layout == LayoutFamilies
	switch t {
	case "trtmc":
		outs := []buildOutput{{path: "trtmc", program: true}}
		if families {
			outs = append(outs, buildOutput{path: "libtrtmc_core.so"}, buildOutput{path: "libtrtmc_runtime.so"}, buildOutput{path: "libtrtmc_c.so"})
		}
		return outs, nil
	case "trtmc_backend_trt":
		return []buildOutput{{path: libBackendTRT}}, nil
	case "trtmc_model_qwen_image":
		if families {
			return []buildOutput{{path: libModelQwen}}, nil
		}
		return []buildOutput{{path: "models/qwen_image/" + libModelQwen}}, nil
	case "qwen_image_e2e_harness":
		if !families || !cmakeOn(cache["TRTMC_BUILD_TESTS"]) {
			return nil, noRule
		}
		return []buildOutput{{path: "families/qwen_image/qwen_image_e2e_harness", program: true}}, nil
	case "trtmc_benchmark_worker":
		gate := "TRTMC_BUILD_BENCHMARKS"
		if families {
			gate = "TRTMC_BUILD_EXAMPLES"
		}
		if !cmakeOn(cache[gate]) {
			return nil, fmt.Errorf("%w (it needs -D%s=ON)", noRule, gate)
		}
		return []buildOutput{{path: "trtmc_benchmark_worker", program: true}}, nil
	case "trtmc-server", "trtmc_server_python":
		// CMakeLists.txt @ 0f958bfb: add_executable(trtmc-server apps/server/main.cpp) under
		// TRTMC_BUILD_SERVER (default ON), and trtmc_server_python, which copies
		// apps/server/python/trtmc_server to <build>/server/python/trtmc_server.
		src := cache["CMAKE_HOME_DIRECTORY"]
		if !isFile(filepath.Join(src, "apps", "server", "main.cpp")) || cmakeOff(cache["TRTMC_BUILD_SERVER"]) {
			return nil, noRule
		}
		if t == "trtmc-server" {
			return []buildOutput{{path: "trtmc-server", program: true}}, nil
		}
		var outs []buildOutput
		pkg := filepath.Join(src, "apps", "server", "python", "trtmc_server")
		entries, err := os.ReadDir(pkg)
		if err != nil {
			return nil, fmt.Errorf("trtmc_server_python: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				outs = append(outs, buildOutput{path: filepath.Join("server", "python", "trtmc_server", e.Name()), copyOf: filepath.Join(pkg, e.Name())})
			}
		}
		return outs, nil
	}
	return nil, noRule
}

// cmakeOff is a CMake boolean set off (unset means the option's default).
func cmakeOff(v string) bool {
	switch strings.ToUpper(v) {
	case "OFF", "0", "NO", "FALSE", "N":
		return true
	}
	return false
}
