package trtmcdouble

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProbe(t *testing.T) {
	dir := t.TempDir()
	script := writeFile(t, filepath.Join(dir, "qualkit", "trtmc_probe.py"), "# probe\n")
	r := newRunner(t, dir)

	res := r.run("/opt/venv/bin/python3", script, "--json")
	require.Equal(t, 0, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	want := map[string]any{Marker: true, "python": "3.12.3", "modules": map[string]any{
		"tensorrt":               map[string]any{"version": "11.1.0.106"},
		"tensorrt_model_connect": map[string]any{"version": "0.1.0", "file": "/src/python/tensorrt_model_connect/__init__.py"},
		"torch":                  map[string]any{"version": "2.12.0+cu130", "cuda": true, "device_count": 0.0},
		"diffusers":              map[string]any{"version": "0.40.0"},
		"ftfy":                   map[string]any{"version": "6.3.1"},
		"pytest":                 map[string]any{"version": "8.4.2"},
		"PIL":                    map[string]any{"version": "12.2.0"},
	}}
	assert.Equal(t, want, got)

	res = r.with(EnvMissingModules, "diffusers, ftfy").run("python", "qualkit/trtmc_probe.py")
	require.Equal(t, 0, res.code, res.stderr)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	modules := got["modules"].(map[string]any)
	assert.Equal(t, map[string]any{"error": "No module named 'diffusers'"}, modules["diffusers"])
	assert.Equal(t, map[string]any{"error": "No module named 'ftfy'"}, modules["ftfy"])
	assert.Equal(t, map[string]any{"version": "8.4.2"}, modules["pytest"])
}

func TestPythonRejects(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "other.py"), "")
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no arguments":      {[]string{"python3"}, 2, "no interactive interpreter"},
		"missing probe":     {[]string{"python3", "/nowhere/trtmc_probe.py"}, 2, "can't open file '/nowhere/trtmc_probe.py'"},
		"other script":      {[]string{"python3", "other.py"}, 2, "script other.py is not played"},
		"-c":                {[]string{"python3", "-c", "print(1)"}, 2, "option -c is not played"},
		"unknown module":    {[]string{"python3", "-m", "pip", "install", "x"}, 1, "No module named pip"},
		"module inspect":    {[]string{"python3", "-m", "tensorrt_model_connect", "inspect", "x.bundle"}, 2, "only the build command is played"},
		"module no command": {[]string{"python3", "-m", "tensorrt_model_connect.__main__"}, 2, "only the build command is played"},
	} {
		t.Run(name, func(t *testing.T) {
			res := newRunner(t, dir).run(tc.args...)
			assert.Equal(t, tc.code, res.code)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
	res := newRunner(t, dir).run("python3", "--version")
	assert.Equal(t, 0, res.code)
	assert.Equal(t, "Python 3.12.3\n", res.stdout)
}

// buildEnv is a legacy checkout, an HF cache and a native build dir: what the legacy
// bundle build needs.
type buildEnv struct {
	r        *runner
	checkout string
	out      string
}

func newBuildEnv(t *testing.T, layout string) buildEnv {
	t.Helper()
	checkout := shapedCheckout(t, layout)
	hf := t.TempDir()
	_, err := HFCache(hf)
	require.NoError(t, err)
	native := t.TempDir()
	writeFile(t, filepath.Join(native, libBackendTRT), "lib")
	r := newRunner(t, checkout).with("HF_HOME", hf, "HF_HUB_OFFLINE", "1",
		EnvConditionImage, filepath.Join(checkout, legacyModelDir, "data/test_img.jpeg"), EnvNativeBinDir, native)
	if layout == LayoutFamilies {
		r = r.with(EnvConditionImage, "", EnvNativeBinDir, "")
	}
	return buildEnv{r: r, checkout: checkout, out: filepath.Join(t.TempDir(), "engines", Profile+".bundle")}
}

// adapterBuild is the build command line of qualkit's adapter.
func adapterBuild(prog []string, out string, extra ...string) []string {
	args := append(prog, "build", HFID, "-o", out, "--precision", "bf16", "--image-height", "1024", "--image-width", "1024",
		"--num-inference-steps", "20", "--max-cache-length", "256", "--model-revision", Revision)
	return append(args, extra...)
}

var moduleBuild = []string{"python3", "-m", "tensorrt_model_connect.__main__"}

func TestBuildLegacy(t *testing.T) {
	e := newBuildEnv(t, LayoutLegacy)
	timing := filepath.Join(t.TempDir(), "timing.json")
	res := e.r.run(adapterBuild(moduleBuild, e.out, "--build-timing-json", timing)...)
	require.Equal(t, 0, res.code, res.stderr)
	h, err := ReadBundle(e.out)
	require.NoError(t, err)
	assert.Equal(t, [2]int{640, 382}, [2]int{h.ConditionWidth, h.ConditionHeight})
	assert.Equal(t, [2]int{1024, 1024}, [2]int{h.ImageWidth, h.ImageHeight})
	assert.Equal(t, Revision, h.Revision)
	assert.Equal(t, "bf16", h.Precision)
	assert.Equal(t, 256, h.MaxCacheLength)
	b, err := os.ReadFile(timing)
	require.NoError(t, err)
	assert.JSONEq(t, `{"qualkit_contract_double": true, "total_s": 0.01}`, string(b))

	first, err := os.ReadFile(e.out)
	require.NoError(t, err)
	out2 := filepath.Join(t.TempDir(), "again.bundle")
	res = e.r.run(adapterBuild([]string{"python3", "-m", "tensorrt_model_connect"}, out2,
		"--method=trt", "--max-batch-size", "1", "--tp-size", "1", "--cp-size", "1", "--trust-remote-code",
		"--video-height", "1", "--video-width", "1", "--video-num-frames", "1")...)
	require.Equal(t, 0, res.code, res.stderr)
	second, err := os.ReadFile(out2)
	require.NoError(t, err)
	assert.Equal(t, first, second, "two builds of the same inputs give the same bytes")
}

func TestBuildFamiliesNeedsNoConditionImage(t *testing.T) {
	e := newBuildEnv(t, LayoutFamilies)
	res := e.r.run(adapterBuild(moduleBuild, e.out)...)
	require.Equal(t, 0, res.code, res.stderr)
	h, err := ReadBundle(e.out)
	require.NoError(t, err)
	assert.Zero(t, h.ConditionWidth)
}

func TestTRTMCBuildFindsTheBackendBesideItself(t *testing.T) {
	e := newBuildEnv(t, LayoutLegacy)
	r := e.r.with(EnvNativeBinDir, "")
	writeFile(t, filepath.Join(filepath.Dir(r.self), libBackendTRT), "lib")
	res := r.run(adapterBuild([]string{"trtmc"}, e.out)...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.FileExists(t, e.out)
}

func TestBuildRejects(t *testing.T) {
	e := newBuildEnv(t, LayoutLegacy)
	bad := writeFile(t, filepath.Join(t.TempDir(), "cond.gif"), "GIF89a")
	emptyNative := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		env  []string
		code int
		want string
	}{
		"unknown flag":     {adapterBuild(moduleBuild, e.out, "--quantize", "fp8"), nil, 2, "trtmc build: error: unrecognized arguments: --quantize"},
		"extra positional": {adapterBuild(moduleBuild, e.out, "extra"), nil, 2, "unrecognized arguments: extra"},
		"no output":        {[]string{"python3", "-m", "tensorrt_model_connect", "build", HFID}, nil, 2, "required: -o/--output"},
		"no model":         {[]string{"python3", "-m", "tensorrt_model_connect", "build", "-o", e.out}, nil, 2, "required: model"},
		"missing value":    {adapterBuild(moduleBuild, e.out, "--image-width"), nil, 2, "argument --image-width: expected one argument"},
		"bad int":          {adapterBuild(moduleBuild, e.out, "--image-height", "tall"), nil, 2, "argument --image-height: invalid int value: 'tall'"},
		"bad video int":    {adapterBuild(moduleBuild, e.out, "--video-num-frames", "x"), nil, 2, "invalid int value"},
		"bad precision":    {adapterBuild(moduleBuild, e.out, "--precision", "int8"), nil, 2, "invalid choice: 'int8'"},
		"bad method":       {adapterBuild(moduleBuild, e.out, "--method", "onnx"), nil, 2, "argument --method: invalid choice"},
		"other model":      {[]string{"python3", "-m", "tensorrt_model_connect", "build", "Qwen/Qwen-Image", "-o", e.out, "--model-revision", Revision}, nil, 1, "builds only " + HFID},
		"online":           {adapterBuild(moduleBuild, e.out), []string{"HF_HUB_OFFLINE", ""}, 1, "HF_HUB_OFFLINE=1 is required"},
		"no HF_HOME":       {adapterBuild(moduleBuild, e.out), []string{"HF_HOME", ""}, 1, "HF_HOME is not set"},
		"no revision":      {[]string{"python3", "-m", "tensorrt_model_connect", "build", HFID, "-o", e.out}, nil, 1, "--model-revision is required"},
		"other revision":   {adapterBuild(moduleBuild, e.out, "--model-revision", "0000"), nil, 1, "no snapshot of " + HFID + " at revision 0000"},
		"no condition":     {adapterBuild(moduleBuild, e.out), []string{EnvConditionImage, ""}, 1, EnvConditionImage + " is not set"},
		"absent condition": {adapterBuild(moduleBuild, e.out), []string{EnvConditionImage, "/nowhere.jpg"}, 1, "no such file"},
		"bad condition":    {adapterBuild(moduleBuild, e.out), []string{EnvConditionImage, bad}, 1, "neither PNG nor JPEG"},
		"no native dir":    {adapterBuild(moduleBuild, e.out), []string{EnvNativeBinDir, ""}, 1, EnvNativeBinDir + " is not set"},
		"no backend":       {adapterBuild(moduleBuild, e.out), []string{EnvNativeBinDir, emptyNative}, 1, "holds no libtrtmc_backend_trt.so"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.with(tc.env...).run(tc.args...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.want)
			assert.NoFileExists(t, e.out)
		})
	}
}
