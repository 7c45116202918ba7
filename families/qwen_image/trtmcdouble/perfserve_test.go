package trtmcdouble

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/latents"
	"qualkit/internal/wire"
)

// perfServeEnv starts perf-serve's double on a families checkout, a 64x48 bundle and a
// runtime root whose worker is the built double, as the adapter starts it.
func perfServeEnv(t *testing.T, keep bool) (*perfServe, *httptest.Server, string) {
	t.Helper()
	bin := builtDouble(t)
	wd := shapedCheckout(t, LayoutFamilies)
	rt := t.TempDir()
	writeFile(t, filepath.Join(rt, libModelQwen), "lib")
	require.NoError(t, writeExecutable(bin, filepath.Join(rt, "trtmc_benchmark_worker")))
	spec := adapterSpec(t)
	spec.ImageWidth, spec.ImageHeight = 64, 48
	bundle := filepath.Join(t.TempDir(), Profile+".bundle")
	writeTestBundle(t, bundle, spec)
	scratch := t.TempDir()
	hf := t.TempDir()
	_, err := HFCache(hf)
	require.NoError(t, err)
	p := &proc{env: map[string]string{"HF_HOME": hf}, wd: wd, self: bin, stdout: io.Discard, stderr: io.Discard}
	c := perfServeConfig{profile: Profile, manifestRoot: "families", backend: "trtmc", bundle: bundle, runtimeRoot: rt,
		worker: filepath.Join(rt, "trtmc_benchmark_worker"), modelName: HFID, host: "127.0.0.1", records: filepath.Join(scratch, "records.jsonl"),
		scratch: filepath.Join(scratch, "s"), maxQueue: 64, keepArtifacts: keep, requestTimeout: 900}
	prof, err := resolveProfile(p, c)
	require.NoError(t, err)
	ps, err := startPerfServe(p, c, prof)
	require.NoError(t, err)
	t.Cleanup(ps.close)
	ts := httptest.NewServer(ps.handler())
	t.Cleanup(ts.Close)
	return ps, ts, c.records
}

func postTask(t *testing.T, url, path string, body []byte, id string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-ID", id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var got map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	return resp, got
}

// One edit through perf-serve's task route, in the request qualkit's wire.Task writes:
// the response (no image), the scratch layout, the record, the headers (app.py @ 3878755c).
func TestPerfServeTask(t *testing.T) {
	ps, ts, records := perfServeEnv(t, true)
	settings := map[string]string{"size": "64x48", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "}
	body, _, err := wire.Task{}.Encode("", wire.Request{Image: testPhoto(t), Prompt: "Make it autumn.", Settings: settings})
	require.NoError(t, err)
	resp, got := postTask(t, ts.URL, "/v1/tasks/generate_image", body, "rid-1")
	require.Equal(t, 200, resp.StatusCode, got)
	assert.Equal(t, "rid-1", resp.Header.Get("X-Request-ID"))
	assert.Regexp(t, `^model;dur=[0-9]+\.[0-9]{3}$`, resp.Header.Get("Server-Timing"))
	assert.Equal(t, "task.result", got["object"])
	assert.Equal(t, "generate_image", got["text"])
	assert.NotContains(t, got, "data", "the image is not in the body")

	out, err := wire.Task{}.Output(mustJSON(t, got), "rid-1", func(rel string) ([]byte, error) {
		return os.ReadFile(filepath.Join(ps.cfg.scratch, rel))
	})
	require.NoError(t, err)
	want, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 4, NegativePrompt: " ", Width: 64, Height: 48})
	require.NoError(t, err)
	assert.Equal(t, want, out, "the worker's edit, the same bytes as the native Task")
	in, err := os.ReadFile(filepath.Join(ps.cfg.scratch, "rid-1", "inputs", "input-0000.jpg")) // the photo is a JPEG
	require.NoError(t, err, "--keep-artifacts keeps the inputs too")
	assert.Equal(t, testPhoto(t), in)
	assert.FileExists(t, filepath.Join(ps.cfg.scratch, "_worker", "worker-session.json"))

	b, err := os.ReadFile(records)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(b), &rec))
	assert.Equal(t, "rid-1", rec["request_id"])
	assert.Equal(t, "/v1/tasks/generate_image", rec["route"])
	assert.Equal(t, got["trtmc_timing"], rec["timing"])
	timing := got["trtmc_timing"].(map[string]any)
	assert.GreaterOrEqual(t, timing["handler_ms"], timing["model_call_ms"])

	code, info := getJSON(t, ts.URL+"/v1/serving/info")
	assert.Equal(t, 200, code)
	assert.Equal(t, "trtmc", info["backend"])
	assert.Equal(t, "public_task_call_wall", info["timing_scope"])
	assert.Equal(t, -1.0, info["base_request"].(map[string]any)["guidance_scale"], "the profile's base request, as resolved")
	code, ready := getJSON(t, ts.URL+"/health/ready")
	assert.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"status": "ready", "operation": "generate_image"}, ready)
}

// What perf-serve refuses, in its order and words (app.py @ 3878755c § task; files.py).
func TestPerfServeRefuses(t *testing.T) {
	_, ts, _ := perfServeEnv(t, false)
	img := base64.StdEncoding.EncodeToString(testPhoto(t))
	for name, tc := range map[string]struct {
		path, body string
		status     int
		want       string
	}{
		"other operation": {"/v1/tasks/generate_text", `{"request":{}}`, 400, "this server serves 'generate_image', not 'generate_text'"},
		"not JSON":        {"/v1/tasks/generate_image", `prompt=x`, 400, "Expecting value"},
		"extra key":       {"/v1/tasks/generate_image", `{"request":{},"stream":true}`, 400, `body must be {"request": {...operation request...}}`},
		"server path":     {"/v1/tasks/generate_image", `{"request":{"prompt":"p","image_path":"/etc/passwd"}}`, 400, "send image_path inline"},
		"sibling":         {"/v1/tasks/generate_image", `{"request":{"image_path":{"$file":{"b64":"` + img + `"},"x":1}}}`, 400, "$file references cannot carry sibling fields"},
		"bad suffix":      {"/v1/tasks/generate_image", `{"request":{"image_path":{"$file":{"suffix":"../x","b64":"` + img + `"}}}}`, 400, "$file suffix must be a short file extension"},
		"bad base64":      {"/v1/tasks/generate_image", `{"request":{"image_path":{"$file":{"suffix":".png","b64":"%%%"}}}}`, 400, "$file contains invalid base64"},
		"worker refuses":  {"/v1/tasks/generate_image", `{"request":{"image_path":{"$file":{"suffix":".png","b64":"AAAA"}}}}`, 422, "cannot read image"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, got := postTask(t, ts.URL, tc.path, []byte(tc.body), "r-"+strings.ReplaceAll(name, " ", "-"))
			assert.Equal(t, tc.status, resp.StatusCode)
			e := got["error"].(map[string]any)
			assert.Contains(t, e["message"], tc.want)
			assert.Equal(t, "invalid_request_error", e["type"], "app.py § _error: the type by status")
			assert.NotContains(t, e, "param", "perf-serve's error has no param")
		})
	}
}

func TestPerfServeCommandLine(t *testing.T) {
	r := newRunner(t, t.TempDir())
	wd := filepath.Join(shapedCheckout(t, LayoutFamilies), "families")
	res := r.run("trtmc-perf-serve", "serve", "--help")
	assert.Equal(t, 0, res.code)
	for _, f := range []string{"--backend", "--profile", "--manifest-root", "--bundle", "--runtime-root", "--worker", "--records", "--scratch", "--keep-artifacts", "--request-timeout"} {
		assert.Contains(t, res.stdout, f)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"required":      {[]string{"serve", "--backend", "trtmc"}, "the following arguments are required: --profile, --records, --scratch"},
		"trtmc needs":   {[]string{"serve", "--backend", "trtmc", "--profile", Profile, "--records", "r", "--scratch", "s", "--manifest-root", wd}, "trtmc-perf-serve: the trtmc backend requires --bundle, --runtime-root, and --worker"},
		"no profile":    {[]string{"serve", "--backend", "trtmc", "--profile", "nope", "--records", "r", "--scratch", "s", "--manifest-root", wd}, "trtmc-perf-serve: unknown model 'nope' under"},
		"no root":       {[]string{"serve", "--backend", "trtmc", "--profile", Profile, "--records", "r", "--scratch", "s", "--manifest-root", "/nowhere"}, "trtmc-perf-serve: manifest root does not exist: /nowhere"},
		"bad set":       {[]string{"serve", "--backend", "trtmc", "--profile", Profile, "--records", "r", "--scratch", "s", "--manifest-root", wd, "--set", "seed=1"}, "override must be request.*, measurement.*, or telemetry.*: 'seed'"},
		"bad backend":   {[]string{"serve", "--backend", "vllm", "--profile", Profile, "--records", "r", "--scratch", "s"}, "invalid choice: 'vllm'"},
		"unknown flag":  {[]string{"serve", "--backend", "trtmc", "--profile", Profile, "--records", "r", "--scratch", "s", "--api-key", "k"}, "unrecognized arguments: --api-key"},
		"no subcommand": {[]string{"--profile", Profile}, "plays only the serve subcommand"},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.run(append([]string{"trtmc-perf-serve"}, tc.args...)...)
			assert.Equal(t, 2, res.code)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A latent_seed is replayed as perf-serve replays it (latents.py @ d3e1a549): NumPy's
// noise for the seed in the checkpoint's latent shape, kept as inputs/initial_latents.f32,
// handed to the worker as initial_latents_path, its sha256 in the observation; the
// output is that noise's edit, whatever the request's seed.
func TestPerfServeLatentReplay(t *testing.T) {
	ps, ts, records := perfServeEnv(t, true)
	settings := map[string]string{"size": "64x48", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "}
	body, _, err := wire.Task{LatentSeed: true}.Encode("", wire.Request{Image: testPhoto(t), Prompt: "Make it autumn.", Settings: settings})
	require.NoError(t, err)
	resp, got := postTask(t, ts.URL, "/v1/tasks/generate_image", body, "rid-noise")
	require.Equal(t, 200, resp.StatusCode, got)
	obs := got["trtmc_observation"].(map[string]any)
	assert.Equal(t, true, obs["latent_replay"])
	noise, err := os.ReadFile(filepath.Join(ps.cfg.scratch, "rid-noise", "inputs", "initial_latents.f32"))
	require.NoError(t, err)
	want, err := latents.Raw(42, 1, 1, 16, 6, 8)
	require.NoError(t, err)
	assert.Equal(t, want, noise)
	assert.Equal(t, fmt.Sprintf("%x", sha256.Sum256(noise)), obs["initial_latents_sha256"])
	assert.NotContains(t, obs, "runtime_e2e_wall_ms", "backends/trtmc.py § invoke pops it")
	digest := obs["media_digest"].(map[string]any)
	assert.Equal(t, map[string]any{"$array_length": 12288.0}, digest["thumbnails"].([]any)[0], "compacted: 64x64x3 values")
	b, err := os.ReadFile(records)
	require.NoError(t, err)
	// Records.write is json.dumps: Python's separators.
	assert.Contains(t, string(b), `"initial_latents_sha256": "`+fmt.Sprintf("%x", sha256.Sum256(noise)))

	resp, got = postTask(t, ts.URL, "/v1/tasks/generate_image", bytes.Replace(body, []byte(`"latent_seed":42`), []byte(`"latent_seed":"x"`), 1), "rid-bad-noise")
	assert.Equal(t, 400, resp.StatusCode)
	assert.Equal(t, "invalid literal for int() with base 10: 'x'", got["error"].(map[string]any)["message"])
}

// PIL's bilinear thumbnail of the media digest, at least on a flat image: every value.
func TestThumbnailOfAFlatImage(t *testing.T) {
	img := toNRGBA(uniform(1024, 1024, color.NRGBA{10, 200, 99, 255}))
	th := thumbnail(img, 64)
	require.Len(t, th, 64*64*3)
	for i := 0; i < len(th); i += 3 {
		require.Equal(t, []uint8{10, 200, 99}, th[i:i+3])
	}
}

// --set as cli.py @ 3878755c § _overrides and catalog.py @ 0dd9052f § apply_overrides
// read it; the messages are what python3 printed for each with the snapshot's code.
func TestPerfServeOverrides(t *testing.T) {
	base := pairs("prompt", "p", "num_steps", json.Number("20"), "guidance_scale", pyFloat(-1))
	m, err := applyOverrides(base, []string{"request.num_steps=8", "request.guidance_scale=4.50", `measurement.warmup="2"`,
		"telemetry.gpu=off", "request.note=not json", "request.num_steps=9", "measurement.iterations=2.7"})
	require.NoError(t, err)
	b, _ := marshalPlain(base)
	assert.Equal(t, `{"prompt":"p","num_steps":9,"guidance_scale":4.5,"note":"not json"}`, string(b),
		"JSON else text, spelled by Python; a field given twice keeps its place and its last value")
	b, _ = marshalPlain(m)
	assert.Equal(t, `{"warmup":2,"iterations":2,"timing_scope":"public_task_call_wall","asset_loading_included":false}`, string(b), "int() of the measurement's integers")

	for set, want := range map[string]string{
		"request":                              "--set expects FIELD=VALUE, got 'request'",
		"=1":                                   "--set expects FIELD=VALUE, got '=1'",
		"bogus.x=1":                            "override must be request.*, measurement.*, or telemetry.*: 'bogus.x'",
		"request=1":                            "override must be request.*, measurement.*, or telemetry.*: 'request'",
		"telemetry.=1":                         "override must be request.*, measurement.*, or telemetry.*: 'telemetry.'",
		"measurement.warmup=-1":                "measurement.warmup must be non-negative",
		"measurement.iterations=0":             "measurement.iterations must be positive",
		"measurement.bogus=1":                  "unknown measurement field 'bogus'",
		"telemetry.bogus=1":                    "unknown telemetry field 'bogus'",
		"telemetry.gpu=on":                     "telemetry.gpu must be 'auto' or 'off'",
		"telemetry.interval_ms=50":             "telemetry.interval_ms must be at least 100",
		"measurement.timing_scope=x":           "measurement.timing_scope must be 'public_task_call_wall'",
		"measurement.asset_loading_included=1": "measurement.asset_loading_included must be a boolean",
		"measurement.warmup=two":               "invalid literal for int() with base 10: 'two'",
	} {
		_, err := applyOverrides(newObject(), []string{set})
		assert.EqualError(t, err, want, set)
	}
}
