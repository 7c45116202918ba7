package trtmcdouble

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// workerEnv is a session file over a 64x48 bundle, two reference images and an output dir.
type workerEnv struct {
	r                *runner
	dir, session     string
	imageA, imageB   string
	bundle, runtime  string
	defaultSessionKV map[string]any
}

func newWorkerEnv(t *testing.T) workerEnv {
	t.Helper()
	dir := t.TempDir()
	e := workerEnv{r: newRunner(t, dir), dir: dir, bundle: filepath.Join(dir, Profile+".bundle"), runtime: filepath.Join(dir, "runtime"),
		imageA: filepath.Join(dir, "a.jpeg"), imageB: filepath.Join(dir, "b.png")}
	spec := adapterSpec(t)
	spec.ImageWidth, spec.ImageHeight = 64, 48
	writeTestBundle(t, e.bundle, spec)
	writeFile(t, filepath.Join(e.runtime, libModelQwen), "lib")
	require.NoError(t, os.WriteFile(e.imageA, testPhoto(t), 0o644))
	require.NoError(t, os.WriteFile(e.imageB, fixtureImage(t, "rings-640x382.png"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "out"), 0o755))
	e.defaultSessionKV = map[string]any{"schema_version": 2, "bundle": e.bundle, "runtime_root": e.runtime, "operation": "generate_image",
		"request": map[string]any{"negative_prompt": " "}, "expected_family": "qwen_image", "expected_task": "image_edit",
		"selected_task": "image_edit", "measurement": map[string]any{"asset_loading_included": false}}
	e.session = e.writeSession(t, nil)
	return e
}

// writeSession writes the default session with changes (a nil value deletes the key).
func (e workerEnv) writeSession(t *testing.T, changes map[string]any) string {
	t.Helper()
	s := map[string]any{}
	for k, v := range e.defaultSessionKV {
		s[k] = v
	}
	for k, v := range changes {
		if v == nil {
			delete(s, k)
		} else {
			s[k] = v
		}
	}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "session.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// requestLine is one request on stdin.
func (e workerEnv) requestLine(id, image, prompt, base string) string {
	return fmt.Sprintf(`{"id":%q,"request":{"prompt":%q,"image_path":%q,"seed":42,"num_steps":20,"guidance_scale":1.0,"cfg_scale":4.0,"height":48,"width":64},"artifact_base":%q,"full_observation":false}`,
		id, prompt, image, filepath.Join(e.dir, "out", base))
}

// serve runs the worker on the given stdin lines and returns its stdout lines.
func (e workerEnv) serve(t *testing.T, r *runner, lines ...string) (result, []map[string]any) {
	t.Helper()
	c := *r
	c.stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	res := c.run("trtmc_benchmark_worker", "--serve", e.session)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return res, out
}

func (e workerEnv) artifact(t *testing.T, base string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "out", base+".image.1.0.png"))
	require.NoError(t, err)
	return b
}

func TestWorkerProtocol(t *testing.T) {
	e := newWorkerEnv(t)
	res, out := e.serve(t, e.r, e.requestLine("r1", e.imageA, "Make it autumn.", "req-1.json"), `{"id":"x","type":"shutdown"}`, e.requestLine("late", e.imageA, "p", "late"))
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 3, "ready, one reply, shutdown; nothing after shutdown")

	assert.GreaterOrEqual(t, out[0]["load_ms"], 0.0)
	delete(out[0], "load_ms")
	assert.Equal(t, map[string]any{"event": "ready", "schema_version": "trtmc.benchmark-worker-serve/v1", "operation": "generate_image",
		"task": "image_edit", "selected_task": "image_edit", "timing_scope": "public_task_call_wall", "asset_loading_included": false,
		Marker: true}, out[0])

	obs := out[1]["observation"].(map[string]any)
	assert.Equal(t, "r1", out[1]["id"])
	assert.Equal(t, true, out[1]["ok"])
	assert.GreaterOrEqual(t, obs["runtime_e2e_wall_ms"], 0.0)
	assert.Equal(t, []any{"req-1.image.1.0.png"}, obs["image_artifacts"])
	assert.Equal(t, 48.0, obs["height"])
	assert.Equal(t, 64.0, obs["width"])
	want, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: " ", Width: 64, Height: 48})
	require.NoError(t, err)
	assert.Equal(t, want, e.artifact(t, "req-1"), "the worker's image is Edit's")

	assert.Equal(t, map[string]any{"id": "x", "ok": true, "event": "shutdown"}, out[2])
	assert.NoFileExists(t, filepath.Join(e.dir, "out", "late.image.1.0.png"))
}

func TestWorkerEndOfInputExits(t *testing.T) {
	e := newWorkerEnv(t)
	res, out := e.serve(t, e.r, "", e.requestLine("r1", e.imageA, "p", "a"))
	assert.Equal(t, 0, res.code)
	assert.Len(t, out, 2)
}

func TestWorkerIsStateless(t *testing.T) {
	e := newWorkerEnv(t)
	res, out := e.serve(t, e.r,
		e.requestLine("1", e.imageA, "Make it autumn.", "first"),
		e.requestLine("2", e.imageB, "Make it night.", "second"),
		e.requestLine("3", e.imageA, "Make it autumn.", "third"))
	require.Equal(t, 0, res.code, res.stderr)
	for _, o := range out[1:] {
		require.Equal(t, true, o["ok"], o)
	}
	assert.Equal(t, e.artifact(t, "first"), e.artifact(t, "third"), "the same request gives the same bytes whatever came before")

	_, _ = e.serve(t, e.r, e.requestLine("alone", e.imageB, "Make it night.", "alone"))
	assert.Equal(t, e.artifact(t, "alone"), e.artifact(t, "second"), "a request after another is a request alone")
}

func TestWorkerLeakModeBreaksStatelessness(t *testing.T) {
	e := newWorkerEnv(t)
	res, _ := e.serve(t, e.r.with(EnvLeak, "1"),
		e.requestLine("1", e.imageA, "Make it autumn.", "first"),
		e.requestLine("2", e.imageB, "Make it night.", "second"),
		e.requestLine("3", e.imageA, "Make it autumn.", "third"))
	require.Equal(t, 0, res.code, res.stderr)
	first, third := e.artifact(t, "first"), e.artifact(t, "third")
	assert.NotEqual(t, first, third, "the faulty worker carries the previous request into the next")
	assert.Greater(t, changedFraction(t, decodeTestPNG(t, first), decodeTestPNG(t, third)), 0.10)
}

func TestWorkerRequestErrors(t *testing.T) {
	e := newWorkerEnv(t)
	lines := []string{
		`{"id":"a","request":{"image_path":"` + e.imageA + `"},"artifact_base":"` + e.dir + `/out/a"}`,
		`{"id":"b","request":{"prompt":"p"},"artifact_base":"` + e.dir + `/out/b"}`,
		`{"id":"c","request":{"prompt":"p","image_path":"` + e.imageA + `"}}`,
		`{"id":"d","request":{"prompt":"p","image_path":"` + e.imageA + `","steps":3},"artifact_base":"` + e.dir + `/out/d"}`,
		`{"id":"e","request":{"prompt":"p","image_path":"/nowhere.png"},"artifact_base":"` + e.dir + `/out/e"}`,
		`{"id":"f","request":{"prompt":"p","image_path":"` + e.session + `"},"artifact_base":"` + e.dir + `/out/f"}`,
		`{"id":"g","request":{"prompt":"p","image_path":"` + e.imageA + `","width":0},"artifact_base":"` + e.dir + `/out/g"}`,
		`{"id":"h","request":{"prompt":"p","image_path":"` + e.imageA + `"},"artifact_base":"/nowhere/dir/h"}`,
		`{"id":"i","type":"reload"}`,
		`{"id":"j","request":{},"surprise":1}`,
		`not json`,
	}
	wants := []string{"prompt is required", "image_path is required", "artifact_base is required", `unknown field "steps"`,
		"no such file", "neither PNG nor JPEG", "width and height must be", "artifact:", `unknown line type "reload"`,
		`unknown field "surprise"`, "request line:"}
	res, out := e.serve(t, e.r, lines...)
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 1+len(lines))
	for i, want := range wants {
		assert.Equal(t, false, out[i+1]["ok"], lines[i])
		assert.Contains(t, out[i+1]["error"], want, lines[i])
	}
	assert.Equal(t, "a", out[1]["id"])
}

func TestWorkerSessionFailures(t *testing.T) {
	e := newWorkerEnv(t)
	notBundle := writeFile(t, filepath.Join(t.TempDir(), "x.bundle"), "not a bundle, not at all")
	for name, tc := range map[string]struct {
		changes map[string]any
		want    string
	}{
		"no schema_version":   {map[string]any{"schema_version": nil}, "schema_version 2 is required"},
		"schema_version 1":    {map[string]any{"schema_version": 1}, "schema_version 2 is required"},
		"other operation":     {map[string]any{"operation": "generate"}, `operation "generate"`},
		"other family":        {map[string]any{"expected_family": "qwen"}, `expected_family "qwen"`},
		"other task":          {map[string]any{"expected_task": "text_to_image"}, `expected_task "text_to_image"`},
		"other selected task": {map[string]any{"selected_task": "text_to_image"}, `selected_task "text_to_image"`},
		"runtime without lib": {map[string]any{"runtime_root": t.TempDir()}, "holds no libtrtmc_model_qwen_image.so"},
		"no runtime":          {map[string]any{"runtime_root": nil}, "holds no libtrtmc_model_qwen_image.so"},
		"invalid bundle":      {map[string]any{"bundle": notBundle}, "not a valid .bundle artifact"},
		"request not object":  {map[string]any{"request": []any{}}, "request must be a JSON object"},
		"no request":          {map[string]any{"request": nil}, "request must be a JSON object"},
		"unknown request key": {map[string]any{"request": map[string]any{"strength": 0.5}}, `unknown field "strength"`},
		"unknown session key": {map[string]any{"device": "cuda:1"}, `unknown field "device"`},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.run("trtmc_benchmark_worker", "--serve", e.writeSession(t, tc.changes))
			assert.Equal(t, 1, res.code)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
			assert.Equal(t, "failed", got["event"])
			assert.Contains(t, got["error"], tc.want)
		})
	}
	res := e.r.run("trtmc_benchmark_worker", "--serve", "/nowhere/session.json")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stdout, `"event":"failed"`)
}

func TestWorkerCommandLine(t *testing.T) {
	e := newWorkerEnv(t)
	res := e.r.run("trtmc_benchmark_worker", "--help")
	assert.Equal(t, 0, res.code)
	assert.Equal(t, workerHelp+"\n", res.stdout)
	assert.Equal(t, "trtmc_benchmark_worker --request REQUEST.json --output RESULT.json\ntrtmc_benchmark_worker --serve SESSION.json   (JSONL on stdin/stdout)", workerHelp)

	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"serve with output":  {[]string{"--serve", e.session, "--output", "r.json"}, "--serve cannot be combined"},
		"serve with request": {[]string{"--serve", e.session, "--request", "q.json"}, "--serve cannot be combined"},
		"one-shot request":   {[]string{"--request", "q.json", "--output", "r.json"}, "plays only --serve"},
		"unknown flag":       {[]string{"--serve", e.session, "--device", "0"}, "Unknown flag: --device"},
		"missing value":      {[]string{"--serve"}, "Missing value for flag: --serve"},
		"positional":         {[]string{e.session}, "Unexpected argument"},
		"nothing":            {nil, "--serve SESSION.json"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.run(append([]string{"trtmc_benchmark_worker"}, tc.args...)...)
			assert.Equal(t, 2, res.code)
			assert.Contains(t, res.stderr, tc.want)
			assert.Empty(t, res.stdout)
		})
	}
}
