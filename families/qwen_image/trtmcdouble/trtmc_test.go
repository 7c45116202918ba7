package trtmcdouble

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/latents"
)

// cliEnv is a bundle, plugin dirs of both layouts, and the photo.
type cliEnv struct {
	r                      *runner
	bundle, image, outDir  string
	pluginDir, runtimeRoot string
}

func newCLIEnv(t *testing.T) cliEnv {
	t.Helper()
	dir := t.TempDir()
	e := cliEnv{r: newRunner(t, dir), bundle: filepath.Join(dir, Profile+".bundle"), image: filepath.Join(dir, "photo.jpeg"),
		outDir: filepath.Join(dir, "out"), pluginDir: filepath.Join(dir, "build", "models"), runtimeRoot: filepath.Join(dir, "runtime")}
	spec := adapterSpec(t)
	spec.ImageWidth, spec.ImageHeight = 64, 48
	writeTestBundle(t, e.bundle, spec)
	require.NoError(t, os.WriteFile(e.image, testPhoto(t), 0o644))
	writeFile(t, filepath.Join(e.pluginDir, "qwen_image", libModelQwen), "lib")
	writeFile(t, filepath.Join(e.runtimeRoot, libModelQwen), "lib")
	require.NoError(t, os.MkdirAll(e.outDir, 0o755))
	return e
}

func (e cliEnv) runArgs(extra ...string) []string {
	return append([]string{"trtmc", "run", e.bundle, "--prompt", "Make it autumn.", "--image", e.image,
		"--output", filepath.Join(e.outDir, "run.png"), "--model-plugin-dir", e.pluginDir}, extra...)
}

func (e cliEnv) generateArgs(extra ...string) []string {
	return append([]string{"trtmc", "generate-image", e.bundle, "--runtime-root", e.runtimeRoot, "--prompt", "Make it autumn.",
		"--image", e.image, "--output", filepath.Join(e.outDir, "gen.png")}, extra...)
}

func TestTRTMCVersion(t *testing.T) {
	r := newRunner(t, t.TempDir())
	for _, v := range []string{"version", "--version"} {
		res := r.run("trtmc", v)
		assert.Equal(t, 0, res.code)
		assert.Equal(t, "trtmc 0.1.0 (qualkit contract double)\nTRT support: yes\n", res.stdout)
	}
	res := r.run("trtmc", "version", "--json")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "Unknown flag: --json")
}

func TestTRTMCInspect(t *testing.T) {
	e := newCLIEnv(t)
	res := e.r.run("trtmc", "inspect", e.bundle)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, strings.Join([]string{
		"Model ID:           Qwen/Qwen-Image-Edit-2511",
		"Model type:         qwen_image_edit",
		"Family:             qwen_image",
		"Precision:          bf16",
		"TRT version:        11.1.0.106",
		"GPU:                qualkit contract double (no GPU)",
		"Created:            2000-01-01T00:00:00Z",
	}, "\n")+"\n", res.stdout)

	notBundle := writeFile(t, filepath.Join(t.TempDir(), "x.bundle"), "not a bundle at all, sorry")
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"invalid":      {[]string{"trtmc", "inspect", notBundle}, 1, "Error: not a valid .bundle artifact: " + notBundle},
		"absent":       {[]string{"trtmc", "inspect", "/nowhere.bundle"}, 1, "Error: not a valid .bundle artifact: /nowhere.bundle"},
		"no bundle":    {[]string{"trtmc", "inspect"}, 2, "inspect needs a BUNDLE"},
		"unknown flag": {[]string{"trtmc", "inspect", e.bundle, "--list-engines"}, 2, "Unknown flag: --list-engines"},
		"two bundles":  {[]string{"trtmc", "inspect", e.bundle, e.bundle}, 2, "Unexpected argument"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.run(tc.args...)
			assert.Equal(t, tc.code, res.code)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
}

func TestTRTMCRun(t *testing.T) {
	e := newCLIEnv(t)
	res := e.r.run(e.runArgs("--negative-prompt", " ", "--cfg-scale", "4.0", "--guidance-scale", "1", "--num-inference-steps", "20",
		"--seed", "42", "--height", "48", "--width", "64")...)
	require.Equal(t, 0, res.code, res.stderr)
	out := filepath.Join(e.outDir, "run.png")
	assert.Equal(t, "Saved "+out+" (64x48)\n", res.stdout)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	s := Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: " ", Width: 64, Height: 48}
	want, err := Edit(testPhoto(t), "Make it autumn.", s)
	require.NoError(t, err)
	assert.Equal(t, want, got, "trtmc run is Edit")

	res = e.r.run(e.runArgs("--negative-prompt", " ", "--cfg-scale", "9.5", "--guidance-scale", "1", "--num-inference-steps", "20",
		"--seed", "42", "--height", "48", "--width", "64")...)
	require.Equal(t, 0, res.code, res.stderr)
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, want, got, "TRTMC's Qwen-Image ignores cfg_scale: --guidance-scale is its true CFG scale")

	res = e.r.with(EnvModelPluginDir, e.pluginDir).run("trtmc", "run", e.bundle, "--prompt", "Make it autumn.", "--image", e.image,
		"--output", filepath.Join(e.outDir, "alias.png"), "--num-steps", "20", "--seed", "42")
	require.Equal(t, 0, res.code, res.stderr)
	alias, err := os.ReadFile(filepath.Join(e.outDir, "alias.png"))
	require.NoError(t, err)
	defaults, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 42, Steps: 20, CFGScale: DefaultCFGScale, GuidanceScale: DefaultGuidanceScale,
		NegativePrompt: DefaultNegative, Width: 64, Height: 48})
	require.NoError(t, err)
	assert.Equal(t, defaults, alias, "--num-steps is --num-inference-steps; the defaults are the bundle's size and the shared settings")
	assert.NotEqual(t, want, alias, "no --guidance-scale: the bundle's true CFG 4.0, not 1")
	res = e.r.run(e.runArgs("--num-steps", "20", "--seed", "42", "--guidance-scale", "4")...)
	require.Equal(t, 0, res.code, res.stderr)
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, defaults, got, "--guidance-scale 4 is the default true CFG scale")

	buildTree := *e.r // build/trtmc finds build/models without flag or variable
	buildTree.self = filepath.Join(filepath.Dir(e.pluginDir), "trtmc")
	res = buildTree.run("trtmc", "run", e.bundle, "--prompt", "p", "--image", e.image, "--output", filepath.Join(e.outDir, "tree.png"))
	require.Equal(t, 0, res.code, res.stderr)
	res = buildTree.with(EnvModelPluginStrict, "1").run("trtmc", "run", e.bundle, "--prompt", "p", "--image", e.image, "--output", filepath.Join(e.outDir, "strict.png"))
	assert.Equal(t, 1, res.code, "TRTMC_MODEL_PLUGIN_STRICT=1 searches only the explicit directories")

	// Replayed noise replaces the seed's: the same noise, whatever the seed.
	raw, err := latents.Raw(42, 16, 6, 8) // a 64x48 edit's noise
	require.NoError(t, err)
	noise := filepath.Join(t.TempDir(), "latents.raw")
	require.NoError(t, os.WriteFile(noise, raw, 0o644))
	var outs [2][]byte
	for i, seed := range []string{"1", "2"} {
		res = e.r.run(e.runArgs("--initial-latents-raw", noise, "--seed", seed, "--height", "48", "--width", "64")...)
		require.Equal(t, 0, res.code, res.stderr)
		outs[i], err = os.ReadFile(filepath.Join(e.outDir, "run.png"))
		require.NoError(t, err)
	}
	assert.Equal(t, outs[0], outs[1])
	sum := sha256.Sum256(raw)
	replayed, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 1, Steps: 20, CFGScale: DefaultCFGScale, GuidanceScale: DefaultGuidanceScale,
		NegativePrompt: DefaultNegative, Width: 64, Height: 48, Latents: hex.EncodeToString(sum[:])})
	require.NoError(t, err)
	assert.Equal(t, replayed, outs[0], "the edit of the supplied noise")
	assert.NotEqual(t, defaults, outs[0], "the noise, not the seed's")
	other, err := latents.Raw(43, 16, 6, 8)
	require.NoError(t, err)
	otherNoise := filepath.Join(t.TempDir(), "other.raw")
	require.NoError(t, os.WriteFile(otherNoise, other, 0o644))
	res = e.r.run(e.runArgs("--initial-latents-raw", otherNoise, "--seed", "1", "--height", "48", "--width", "64")...)
	require.Equal(t, 0, res.code, res.stderr)
	got, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.NotEqual(t, outs[0], got, "other noise, another image")
	short := writeFile(t, filepath.Join(t.TempDir(), "short.raw"), "1234")
	res = e.r.run(e.runArgs("--initial-latents-raw", short, "--height", "48", "--width", "64")...)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "hold 1 float32 values; a 64x48 edit's noise is 768")
	res = e.r.run(e.runArgs("--initial-latents-raw", noise, "--height", "96", "--width", "64")...)
	assert.Equal(t, 1, res.code, "the noise of another size")
	assert.Contains(t, res.stderr, "hold 768 float32 values; a 64x96 edit's noise is 1536")
	odd := writeFile(t, filepath.Join(t.TempDir(), "odd.raw"), "12345")
	res = e.r.run(e.runArgs("--initial-latents-raw", odd, "--height", "48", "--width", "64")...)
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "Error: --initial-latents-raw: invalid float32 input "+odd)
}

func TestTRTMCRunRejects(t *testing.T) {
	e := newCLIEnv(t)
	notBundle := writeFile(t, filepath.Join(t.TempDir(), "x.bundle"), "nope, not a bundle at all")
	noPlugins := t.TempDir()
	withoutFlag := func(flag string) []string {
		args := e.runArgs()
		for i, a := range args {
			if a == flag {
				return append(args[:i:i], args[i+2:]...)
			}
		}
		t.Fatalf("no %s", flag)
		return nil
	}
	for name, tc := range map[string]struct {
		args []string
		env  []string
		code int
		want string
	}{
		"unknown flag":       {e.runArgs("--scheduler", "euler"), nil, 2, "Unknown flag: --scheduler"},
		"equals form":        {e.runArgs("--seed=1"), nil, 2, "Unknown flag: --seed=1"},
		"missing value":      {e.runArgs("--seed"), nil, 2, "Missing value for flag: --seed"},
		"no bundle":          {[]string{"trtmc", "run", "--prompt", "p"}, nil, 2, "a BUNDLE path is required"},
		"two bundles":        {append(e.runArgs(), "other.bundle"), nil, 2, "Unexpected argument: other.bundle"},
		"no prompt":          {withoutFlag("--prompt"), nil, 2, "--prompt is required"},
		"no image":           {withoutFlag("--image"), nil, 2, "--image is required"},
		"no output":          {withoutFlag("--output"), nil, 2, "--output is required"},
		"invalid bundle":     {append([]string{"trtmc", "run", notBundle}, e.runArgs()[3:]...), nil, 1, "Error: not a valid .bundle artifact: " + notBundle},
		"no plugin dir":      {withoutFlag("--model-plugin-dir"), nil, 1, "no model plugin for family qwen_image"},
		"empty plugin dir":   {withoutFlag("--model-plugin-dir"), []string{EnvModelPluginDir, noPlugins}, 1, "no model plugin"},
		"empty flag dir":     {e.runArgs("--model-plugin-dir", noPlugins), []string{EnvModelPluginStrict, "1"}, 1, "no qwen_image/libtrtmc_model_qwen_image.so in " + noPlugins},
		"output not png":     {append(withoutFlag("--output"), "--output", filepath.Join(e.outDir, "x.jpg")), nil, 1, "must be a .png file"},
		"bad seed":           {e.runArgs("--seed", "x"), nil, 1, "invalid value for --seed"},
		"bad steps":          {e.runArgs("--num-inference-steps", "x"), nil, 1, "invalid int value"},
		"zero steps":         {e.runArgs("--num-steps", "0"), nil, 1, "must be at least 1"},
		"bad cfg":            {e.runArgs("--cfg-scale", "x"), nil, 1, "invalid float value"},
		"bad size":           {e.runArgs("--width", "0"), nil, 1, "width and height must be"},
		"absent image":       {append(withoutFlag("--image"), "--image", "/nowhere.png"), nil, 1, "--image"},
		"not an image":       {append(withoutFlag("--image"), "--image", notBundle), nil, 1, "neither PNG nor JPEG"},
		"absent latents":     {e.runArgs("--initial-latents-raw", "/nowhere.raw"), nil, 1, "--initial-latents-raw /nowhere.raw: no such file"},
		"runtime-root flag":  {e.runArgs("--runtime-root", e.runtimeRoot), nil, 2, "Unknown flag: --runtime-root"},
		"unknown command":    {[]string{"trtmc", "serve", e.bundle}, nil, 2, "Unknown command: serve"},
		"no command":         {[]string{"trtmc"}, nil, 2, "Usage: trtmc"},
		"generate, no root":  {[]string{"trtmc", "generate-image", e.bundle, "--prompt", "p", "--image", e.image, "--output", "o.png"}, nil, 2, "--runtime-root is required"},
		"generate, bad root": {append(e.generateArgs()[:3], append([]string{"--runtime-root", noPlugins}, e.generateArgs()[5:]...)...), nil, 1, "holds no libtrtmc_model_qwen_image.so"},
		"generate, run flag": {e.generateArgs("--num-inference-steps", "20"), nil, 2, "Unknown flag: --num-inference-steps"},
		"generate, plugins":  {e.generateArgs("--model-plugin-dir", e.pluginDir), nil, 2, "Unknown flag: --model-plugin-dir"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.with(tc.env...).run(tc.args...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.want)
			assert.NoFileExists(t, filepath.Join(e.outDir, "run.png"))
		})
	}
}

func TestTRTMCGenerateImage(t *testing.T) {
	e := newCLIEnv(t)
	res := e.r.run(e.generateArgs("--negative-prompt", " ", "--height", "48", "--width", "64", "--num-steps", "20",
		"--seed", "42", "--guidance-scale", "1", "--cfg-scale", "4")...)
	require.Equal(t, 0, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	out := filepath.Join(e.outDir, "gen.png")
	assert.Equal(t, map[string]any{"output": out, "height": 48.0, "width": 64.0, Marker: true}, got)

	res = e.r.run(e.runArgs("--negative-prompt", " ", "--height", "48", "--width", "64", "--num-inference-steps", "20",
		"--seed", "42", "--guidance-scale", "1", "--cfg-scale", "4")...)
	require.Equal(t, 0, res.code, res.stderr)
	gen, err := os.ReadFile(out)
	require.NoError(t, err)
	run, err := os.ReadFile(filepath.Join(e.outDir, "run.png"))
	require.NoError(t, err)
	assert.Equal(t, run, gen, "run and generate-image give the same bytes for the same inputs")
	want, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: " ", Width: 64, Height: 48})
	require.NoError(t, err)
	assert.Equal(t, want, gen, "generate-image is Edit")
}

func TestTRTMCPlaysItsLayoutsCommand(t *testing.T) {
	e := newCLIEnv(t)
	for layout, refused := range map[string][]string{
		LayoutFamilies: e.runArgs(),
		LayoutLegacy:   e.generateArgs(),
	} {
		t.Run(layout, func(t *testing.T) {
			build := fakeNativeBuild(t, shapedCheckout(t, layout), layout)
			c := *e.r
			c.self = filepath.Join(build, "trtmc") // the CLI the stand-in CMake build copied
			res := c.run(refused...)
			assert.Equal(t, 2, res.code)
			assert.Contains(t, res.stderr, "Unknown command: "+refused[1])
		})
	}
}
