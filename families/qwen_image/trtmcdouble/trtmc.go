package trtmcdouble

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvModelPluginDir is where `trtmc run` finds model plugins without --model-plugin-dir.
const EnvModelPluginDir = "TRTMC_MODEL_PLUGIN_DIR"

// EnvModelPluginStrict set to "1" limits the plugin search to the explicit directories.
const EnvModelPluginStrict = "TRTMC_MODEL_PLUGIN_STRICT"

const trtmcUsage = `Usage: trtmc <command> [options]   (qualkit contract double)
  trtmc version | --version
  trtmc inspect BUNDLE
  trtmc build HF_ID -o OUT [build options]
  trtmc run BUNDLE --prompt P --image IN --output OUT.png [options]        (main e9132e79)
  trtmc generate-image BUNDLE --runtime-root DIR --prompt P --image IN --output OUT.png [options]   (families layout)`

// runParser is `trtmc run`'s flags (src/cli/args.cpp at e9132e79): values as next argument.
var runParser = newOptParser(false,
	opt{"--prompt", true}, opt{"--image", true}, opt{"--negative-prompt", true},
	opt{"--cfg-scale", true}, opt{"--guidance-scale", true},
	opt{"--num-inference-steps|--num-steps", true}, opt{"--seed", true}, opt{"--height", true},
	opt{"--width", true}, opt{"--output", true}, opt{"--initial-latents-raw", true},
	opt{"--model-plugin-dir", true},
)

// generateParser is `trtmc generate-image`'s flags (apps/cli/cli.cpp, families layout).
var generateParser = newOptParser(false,
	opt{"--runtime-root", true}, opt{"--prompt", true}, opt{"--image", true},
	opt{"--output", true}, opt{"--negative-prompt", true}, opt{"--height", true},
	opt{"--width", true}, opt{"--num-steps", true}, opt{"--seed", true},
	opt{"--guidance-scale", true}, opt{"--cfg-scale", true},
)

func trtmcMain(p *proc) int {
	args := p.args[1:]
	if len(args) == 0 {
		return p.fail(exitUsage, "%s", trtmcUsage)
	}
	layout := p.cliLayout()
	switch cmd := args[0]; {
	case cmd == "version" || cmd == "--version":
		if len(args) > 1 {
			return p.fail(exitUsage, "Unknown flag: %s", args[1])
		}
		fmt.Fprintln(p.stdout, "trtmc 0.1.0 (qualkit contract double)\nTRT support: yes")
		return exitOK
	case cmd == "inspect":
		return inspectMain(p, args[1:])
	case cmd == "build":
		return buildMain(p, args[1:], filepath.Dir(p.self))
	case cmd == "run" && layout != LayoutFamilies:
		return runMain(p, args[1:])
	case cmd == "generate-image" && layout != LayoutLegacy:
		return generateMain(p, args[1:])
	}
	return p.fail(exitUsage, "Unknown command: %s\n%s", args[0], trtmcUsage)
}

// cliLayout is the layout of the checkout this CLI was built from (its CMakeCache.txt);
// "" when there is none, and both commands are played.
func (p *proc) cliLayout() string {
	cache, err := readCMakeCache(filepath.Dir(p.self))
	if err != nil {
		return ""
	}
	return layoutOf(cache["CMAKE_HOME_DIRECTORY"])
}

func inspectMain(p *proc, args []string) int {
	if len(args) == 0 {
		return p.fail(exitUsage, "Error: inspect needs a BUNDLE")
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			return p.fail(exitUsage, "Unknown flag: %s", a)
		}
	}
	if len(args) > 1 {
		return p.fail(exitUsage, "Unexpected argument: %s", args[1])
	}
	h, code := p.loadBundle(args[0])
	if code != exitOK {
		return code
	}
	for _, f := range [][2]string{
		{"Model ID", h.ModelID}, {"Model type", h.ModelType}, {"Family", h.Family},
		{"Precision", h.Precision}, {"TRT version", h.TRTVersion}, {"GPU", h.GPUName},
		{"Created", h.CreatedAt},
	} {
		fmt.Fprintf(p.stdout, "%-20s%s\n", f[0]+":", f[1])
	}
	return exitOK
}

func (p *proc) loadBundle(path string) (BundleHeader, int) {
	h, err := ReadBundle(p.abs(path))
	if err != nil {
		return h, p.fail(exitFail, "Error: not a valid .bundle artifact: %s\n  (qualkit contract double: %v)", path, err)
	}
	return h, exitOK
}

// parseCLI parses a C++ CLI command line: one positional BUNDLE, the required flags.
func parseCLI(p *proc, op optParser, args []string, required ...string) (parsedArgs, int) {
	a, err := op.parse(args)
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return a, p.fail(exitUsage, "Missing value for flag: %s", mv.flag)
	case len(a.unknown) > 0:
		return a, p.fail(exitUsage, "Unknown flag: %s", a.unknown[0])
	case len(a.pos) == 0:
		return a, p.fail(exitUsage, "Error: a BUNDLE path is required\n%s", trtmcUsage)
	case len(a.pos) > 1:
		return a, p.fail(exitUsage, "Unexpected argument: %s", a.pos[1])
	}
	for _, r := range required {
		if a.get(r) == "" {
			return a, p.fail(exitUsage, "Error: %s is required", r)
		}
	}
	return a, exitOK
}

func cliSettings(a parsedArgs, h BundleHeader, stepsFlag string) (Settings, error) {
	s := DefaultSettings(h)
	var err error
	if v := a.get("--seed"); v != "" {
		if s.Seed, err = strconv.ParseInt(v, 10, 64); err != nil {
			return s, fmt.Errorf("invalid value for --seed: %s", v)
		}
	}
	for _, f := range []struct {
		flag string
		dst  *int
	}{{stepsFlag, &s.Steps}, {"--height", &s.Height}, {"--width", &s.Width}} {
		if *f.dst, err = intArg(f.flag, a.get(f.flag), *f.dst); err != nil {
			return s, err
		}
	}
	for _, f := range []struct {
		flag string
		dst  *float64
	}{{"--cfg-scale", &s.CFGScale}, {"--guidance-scale", &s.GuidanceScale}} {
		if *f.dst, err = floatArg(f.flag, a.get(f.flag), *f.dst); err != nil {
			return s, err
		}
	}
	if a.has("--negative-prompt") {
		s.NegativePrompt = a.get("--negative-prompt")
	}
	if err := s.validate(); err != nil {
		return s, err
	}
	return s, nil
}

func cliEdit(p *proc, a parsedArgs, h BundleHeader, stepsFlag string) (Settings, error) {
	out := a.get("--output")
	if !strings.HasSuffix(strings.ToLower(out), ".png") {
		return Settings{}, fmt.Errorf("--output %s: the output must be a .png file", out)
	}
	s, err := cliSettings(a, h, stepsFlag)
	if err != nil {
		return s, err
	}
	if lat := a.get("--initial-latents-raw"); a.has("--initial-latents-raw") {
		// The CLI's latent replay (benchmark_worker.cpp @ ca938e40 § image_config: "as the
		// CLI's --initial-latents-raw"): the noise replaces the seed's.
		if !isFile(p.abs(lat)) {
			return s, fmt.Errorf("--initial-latents-raw %s: no such file", lat)
		}
		if s.Latents, err = readLatents(p.abs(lat), s.Height, s.Width); err != nil {
			return s, fmt.Errorf("--initial-latents-raw: %w", err)
		}
	}
	src, err := os.ReadFile(p.abs(a.get("--image")))
	if err != nil {
		return s, fmt.Errorf("--image: %w", err)
	}
	png, err := Edit(src, a.get("--prompt"), s)
	if err != nil {
		return s, fmt.Errorf("--image %s: %w", a.get("--image"), err)
	}
	return s, writeFileAtomic(p.abs(out), png, 0o644)
}

// runMain plays legacy `trtmc run BUNDLE ...`.
func runMain(p *proc, args []string) int {
	a, code := parseCLI(p, runParser, args, "--prompt", "--image", "--output")
	if code != exitOK {
		return code
	}
	h, code := p.loadBundle(a.pos[0])
	if code != exitOK {
		return code
	}
	if _, err := p.modelPlugin(a.get("--model-plugin-dir")); err != nil {
		return p.fail(exitFail, "Error: %v", err)
	}
	s, err := cliEdit(p, a, h, "--num-inference-steps")
	if err != nil {
		return p.fail(exitFail, "Error: %v", err)
	}
	fmt.Fprintf(p.stdout, "Saved %s (%dx%d)\n", a.get("--output"), s.Width, s.Height)
	return exitOK
}

// modelPlugin finds qwen_image/libtrtmc_model_qwen_image.so as TRTMC's plugin loader
// does: in --model-plugin-dir, then TRTMC_MODEL_PLUGIN_DIR, then (unless
// TRTMC_MODEL_PLUGIN_STRICT=1) the build tree's models/ beside the executable.
func (p *proc) modelPlugin(flagDir string) (string, error) {
	dirs := []string{flagDir, p.getenv(EnvModelPluginDir)}
	if p.getenv(EnvModelPluginStrict) != "1" {
		dirs = append(dirs, filepath.Join(filepath.Dir(p.self), "models"))
	}
	var tried []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		lib := filepath.Join(p.abs(d), "qwen_image", libModelQwen)
		if isFile(lib) {
			return lib, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("no model plugin for family qwen_image: no qwen_image/%s in %s (set --model-plugin-dir or %s)",
		libModelQwen, strings.Join(tried, ", "), EnvModelPluginDir)
}

// generateMain plays families `trtmc generate-image BUNDLE --runtime-root DIR ...`.
func generateMain(p *proc, args []string) int {
	a, code := parseCLI(p, generateParser, args, "--runtime-root", "--prompt", "--image", "--output")
	if code != exitOK {
		return code
	}
	h, code := p.loadBundle(a.pos[0])
	if code != exitOK {
		return code
	}
	if root := a.get("--runtime-root"); !isFile(filepath.Join(p.abs(root), libModelQwen)) {
		return p.fail(exitFail, "Error: --runtime-root %s holds no %s", root, libModelQwen)
	}
	s, err := cliEdit(p, a, h, "--num-steps")
	if err != nil {
		return p.fail(exitFail, "Error: %v", err)
	}
	out, _ := json.Marshal(struct {
		Output string `json:"output"`
		Height int    `json:"height"`
		Width  int    `json:"width"`
		Double bool   `json:"qualkit_contract_double"`
	}{a.get("--output"), s.Height, s.Width, true})
	fmt.Fprintln(p.stdout, string(out))
	return exitOK
}
