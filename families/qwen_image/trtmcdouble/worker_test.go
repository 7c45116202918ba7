package trtmcdouble

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/qwen_image/latents"
	"qualkit/internal/controls"
	"qualkit/internal/schema"

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
	// The session as TRTMC's perf-serve writes it (types.py § worker_request), without
	// selected_task, which the legacy image_edit path refuses. Its request is never merged
	// into a line's: its negative prompt must not reach an edit.
	e.defaultSessionKV = map[string]any{"schema_version": 2, "bundle": e.bundle, "runtime_root": e.runtime, "operation": "generate_image",
		"request": map[string]any{"negative_prompt": "from the session"}, "expected_family": "qwen_image", "expected_task": "image_edit",
		"case_name": "qwen_image_edit", "measurement": map[string]any{"warmup": 0, "iterations": 1, "timing_scope": "public_task_call_wall", "asset_loading_included": false}}
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

// workerSettings are the settings of requestLine's request: the bundle's defaults (the
// session's request is not merged in) with the line's seed, steps, guidance and size.
func workerSettings() Settings {
	return Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: DefaultNegative, Width: 64, Height: 48}
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

	assert.Equal(t, "r1", out[1]["id"])
	assert.Equal(t, true, out[1]["ok"])
	assert.NotContains(t, out[1], "error")
	obs := out[1]["observation"].(map[string]any)
	assert.GreaterOrEqual(t, obs["runtime_e2e_wall_ms"], 0.0)
	delete(obs, "runtime_e2e_wall_ms")
	assert.Equal(t, map[string]any{"generated_images": 1.0, "batch_size": 1.0, "generated_frames": 1.0, "media_count": 1.0,
		"output_elements": float64(64 * 48 * 3), "height": 48.0, "width": 64.0, "channels": 3.0, "num_frames": 1.0,
		"media_type": "image", "image_artifacts": []any{"req-1.image.1.0.png"}, Marker: true}, obs)
	want, err := Edit(testPhoto(t), "Make it autumn.", workerSettings())
	require.NoError(t, err)
	assert.Equal(t, want, e.artifact(t, "req-1"), "the worker's image is Edit's, without the session's negative prompt")

	assert.Equal(t, map[string]any{"id": "x", "ok": true, "event": "shutdown"}, out[2])
	assert.NoFileExists(t, filepath.Join(e.dir, "out", "late.image.1.0.png"))
}

func TestWorkerAssetLoadingIncluded(t *testing.T) {
	e := newWorkerEnv(t)
	e.session = e.writeSession(t, map[string]any{"measurement": map[string]any{"asset_loading_included": true}})
	res, out := e.serve(t, e.r, `{"id":"x","type":"shutdown"}`)
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 2)
	assert.Equal(t, true, out[0]["asset_loading_included"])
}

func TestWorkerEndOfInputExits(t *testing.T) {
	e := newWorkerEnv(t)
	res, out := e.serve(t, e.r, "", e.requestLine("r1", e.imageA, "p", "a"))
	assert.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 2, "ready and one reply; the blank line is skipped")
	assert.Equal(t, "ready", out[0]["event"])
	assert.Equal(t, true, out[1]["ok"], out[1])
}

func TestWorkerIsStateless(t *testing.T) {
	e := newWorkerEnv(t)
	res, out := e.serve(t, e.r,
		e.requestLine("1", e.imageA, "Make it autumn.", "first"),
		e.requestLine("2", e.imageB, "Make it night.", "second"),
		e.requestLine("3", e.imageA, "Make it autumn.", "third"))
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 4)
	for _, o := range out[1:] {
		require.Equal(t, true, o["ok"], o)
	}
	assert.Equal(t, e.artifact(t, "first"), e.artifact(t, "third"), "the same request gives the same bytes whatever came before")

	_, _ = e.serve(t, e.r, e.requestLine("alone", e.imageB, "Make it night.", "alone"))
	assert.Equal(t, e.artifact(t, "alone"), e.artifact(t, "second"), "a request after another is a request alone")
}

// latentsLine is requestLine's request with another seed and initial_latents_path.
func (e workerEnv) latentsLine(id string, seed int, latents, base string) string {
	return fmt.Sprintf(`{"id":%q,"request":{"prompt":"Make it autumn.","image_path":%q,"seed":%d,"num_steps":20,"guidance_scale":1.0,"height":48,"width":64,"initial_latents_path":%q},"artifact_base":%q}`,
		id, e.imageA, seed, latents, filepath.Join(e.dir, "out", base))
}

func TestWorkerLatentReplay(t *testing.T) {
	e := newWorkerEnv(t)
	noiseFile := func(seed uint64, shape ...int) string {
		b, err := latents.Raw(seed, shape...)
		require.NoError(t, err)
		return writeFile(t, filepath.Join(t.TempDir(), "latents.raw"), string(b))
	}
	n7, n8 := noiseFile(7, 16, 48/8, 64/8), noiseFile(8, 16, 48/8, 64/8)
	short := noiseFile(7, 16, 48/8, 64/8-1)
	odd := writeFile(t, filepath.Join(t.TempDir(), "odd.raw"), "abcde")
	empty := writeFile(t, filepath.Join(t.TempDir(), "empty.raw"), "")
	res, out := e.serve(t, e.r,
		e.latentsLine("a", 1, n7, "a"),
		e.latentsLine("b", 2, n7, "b"),
		e.latentsLine("c", 1, n8, "c"),
		e.latentsLine("short", 1, short, "short"),
		e.latentsLine("odd", 1, odd, "odd"),
		e.latentsLine("empty", 1, empty, "empty"),
		e.latentsLine("missing", 1, "/nowhere/latents.raw", "missing"),
		e.latentsLine("unnamed", 1, "", "unnamed"))
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 9)
	for _, o := range out[1:4] {
		require.Equal(t, true, o["ok"], o)
	}

	raw, err := os.ReadFile(n7)
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	st := workerSettings()
	st.Seed, st.Latents = 1, hex.EncodeToString(sum[:])
	want, err := Edit(testPhoto(t), "Make it autumn.", st)
	require.NoError(t, err)
	assert.Equal(t, want, e.artifact(t, "a"), "the supplied noise stands in the edit")
	assert.Equal(t, e.artifact(t, "a"), e.artifact(t, "b"), "supplied noise replaces the seed's")
	assert.NotEqual(t, e.artifact(t, "a"), e.artifact(t, "c"), "other noise, another image")
	seeded, err := Edit(testPhoto(t), "Make it autumn.", Settings{Seed: 1, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: DefaultNegative, Width: 64, Height: 48})
	require.NoError(t, err)
	assert.NotEqual(t, seeded, e.artifact(t, "a"), "the noise, not the seed")

	for i, want := range []string{
		fmt.Sprintf("hold %d float32 values; a 64x48 edit's noise is %d", 16*6*7, 16*6*8),
		"invalid float32 input " + odd,
		"invalid float32 input " + empty,
		"cannot read float32 input /nowhere/latents.raw",
		"initial_latents_path must name a raw float32 file",
	} {
		o := out[4+i]
		assert.Equal(t, false, o["ok"], o)
		assert.Contains(t, o["error"], want, o)
	}
	for _, base := range []string{"short", "odd", "empty", "missing", "unnamed"} {
		assert.NoFileExists(t, filepath.Join(e.dir, "out", base+".image.1.0.png"))
	}
}

func TestWorkerRequestErrors(t *testing.T) {
	e := newWorkerEnv(t)
	type line struct {
		text, id, want string
	}
	lines := []line{
		{`{"id":"a","request":{"image_path":"` + e.imageA + `"},"artifact_base":"` + e.dir + `/out/a"}`, "a", "key 'prompt' not found"},
		{`{"id":"b","request":{"prompt":"p"},"artifact_base":"` + e.dir + `/out/b"}`, "b", "image edits only (image_path)"},
		{`{"id":"c","request":{"prompt":"p","image_path":"` + e.imageA + `"}}`, "c", "key '_artifact_prefix' not found"},
		{`{"id":"e","request":{"prompt":"p","image_path":"/nowhere.png"},"artifact_base":"` + e.dir + `/out/e"}`, "e", "cannot read image /nowhere.png"},
		{`{"id":"f","request":{"prompt":"p","image_path":"` + e.session + `"},"artifact_base":"` + e.dir + `/out/f"}`, "f", "neither PNG nor JPEG"},
		{`{"id":"g","request":{"prompt":"p","image_path":"` + e.imageA + `","width":5000},"artifact_base":"` + e.dir + `/out/g"}`, "g", "width and height must be"},
		{`{"id":"h","request":{"prompt":"p","image_path":"` + e.imageA + `"},"artifact_base":"/nowhere/dir/h"}`, "h", "artifact:"},
		{`{"id":"i","type":"reload"}`, "i", "the line has no request object"},
		{`{"id":"j","request":{},"surprise":1}`, "j", "key 'prompt' not found"},
		{`{"id":"k","request":5,"artifact_base":"` + e.dir + `/out/k"}`, "k", "request:"},
		{`{"id":7,"request":{"prompt":"p","image_path":"` + e.imageA + `"},"artifact_base":"` + e.dir + `/out/l"}`, "", "request line:"},
		{`not json`, "", "request line:"},
	}
	var text []string
	for _, l := range lines {
		text = append(text, l.text)
	}
	res, out := e.serve(t, e.r, text...)
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 1+len(lines), "one reply a line, and the loop goes on")
	for i, l := range lines {
		assert.Equal(t, map[string]any{"id": l.id, "ok": false, "error": out[i+1]["error"]}, out[i+1], l.text)
		assert.Contains(t, out[i+1]["error"], l.want, l.text)
	}
	for _, base := range []string{"a", "b", "c", "e", "f", "g", "j", "k", "l"} {
		assert.NoFileExists(t, filepath.Join(e.dir, "out", base+".image.1.0.png"))
	}
}

// Steps, height and width of 0 or less, and a guidance below 0, are the bundle's, as in
// TRTMC's Qwen-Image pipeline (pipeline.cpp @ d46edb11 § resolve_generate_knobs): the
// request is served, not refused, and its edit is the one that sets none of them.
func TestWorkerUnsetKnobsAreTheBundles(t *testing.T) {
	e := newWorkerEnv(t)
	line := func(id, knobs string) string {
		return fmt.Sprintf(`{"id":%q,"request":{"prompt":"Make it autumn.","image_path":%q,"seed":42%s},"artifact_base":%q}`,
			id, e.imageA, knobs, filepath.Join(e.dir, "out", id))
	}
	res, out := e.serve(t, e.r, line("none", ""), line("zero", `,"num_steps":0,"height":0,"width":0`),
		line("negative", `,"num_steps":-1,"guidance_scale":-1.0`))
	require.Equal(t, 0, res.code, res.stderr)
	for _, o := range out[1:] {
		require.Equal(t, true, o["ok"], o)
		assert.Equal(t, map[string]any{"height": 48.0, "width": 64.0}, map[string]any{"height": o["observation"].(map[string]any)["height"], "width": o["observation"].(map[string]any)["width"]})
	}
	assert.Equal(t, e.artifact(t, "none"), e.artifact(t, "zero"))
	assert.Equal(t, e.artifact(t, "none"), e.artifact(t, "negative"))
}

func TestWorkerIgnoresUnknownFields(t *testing.T) {
	e := newWorkerEnv(t)
	// Unknown session keys, unknown keys of the session's request and no bundle identity
	// at all: TRTMC's worker reads what it knows and ignores the rest.
	e.session = e.writeSession(t, map[string]any{"device": "cuda:1", "request": map[string]any{"strength": 0.5, "prompt": "never merged"},
		"expected_family": nil, "expected_task": nil})
	// batch_size is not checked; steps (not num_steps) and strength are ignored.
	line := `{"id":"u","request":{"prompt":"Make it autumn.","image_path":"` + e.imageA + `","seed":42,"num_steps":20,"guidance_scale":1.0,"height":48,"width":64,` +
		`"steps":3,"strength":0.5,"batch_size":4},"artifact_base":"` + filepath.Join(e.dir, "out", "u") + `","surprise":true}`
	res, out := e.serve(t, e.r, line, `{"id":"np","request":{"image_path":"`+e.imageA+`"},"artifact_base":"`+filepath.Join(e.dir, "out", "np")+`"}`)
	require.Equal(t, 0, res.code, res.stderr)
	require.Len(t, out, 3)
	assert.Equal(t, "ready", out[0]["event"])
	require.Equal(t, true, out[1]["ok"], out[1])
	assert.Equal(t, 1.0, out[1]["observation"].(map[string]any)["batch_size"])
	want, err := Edit(testPhoto(t), "Make it autumn.", workerSettings())
	require.NoError(t, err)
	assert.Equal(t, want, e.artifact(t, "u"))
	assert.Equal(t, false, out[2]["ok"], "the session's prompt is not the line's")
	assert.Equal(t, "key 'prompt' not found", out[2]["error"])
}

func TestWorkerSessionFailures(t *testing.T) {
	e := newWorkerEnv(t)
	notBundle := writeFile(t, filepath.Join(t.TempDir(), "x.bundle"), "not a bundle, not at all")
	noLib := t.TempDir()
	mismatch := "bundle identity mismatch: expected family '%s' and Task '%s', found family 'qwen_image' and Task 'image_edit'; rebuild the managed cache or select a matching bundle"
	for name, tc := range map[string]struct {
		changes map[string]any
		want    string
	}{
		"no schema_version":     {map[string]any{"schema_version": nil}, "unsupported worker request schema"},
		"schema_version 1":      {map[string]any{"schema_version": 1}, "unsupported worker request schema"},
		"schema_version 3":      {map[string]any{"schema_version": 3}, "unsupported worker request schema"},
		"no bundle":             {map[string]any{"bundle": nil}, "bundle is required"},
		"other operation":       {map[string]any{"operation": "generate"}, `operation "generate"`},
		"other family":          {map[string]any{"expected_family": "qwen"}, fmt.Sprintf(mismatch, "qwen", "image_edit")},
		"other task":            {map[string]any{"expected_task": "text_to_image"}, fmt.Sprintf(mismatch, "qwen_image", "text_to_image")},
		"family without task":   {map[string]any{"expected_task": nil}, "bundle identity requires both expected_family and expected_task"},
		"task without family":   {map[string]any{"expected_family": nil}, "bundle identity requires both expected_family and expected_task"},
		"selected task":         {map[string]any{"selected_task": "image_edit"}, "selected_task requires a family migrated to the Task SDK"},
		"other selected task":   {map[string]any{"selected_task": "text_to_image"}, "selected_task requires a family migrated to the Task SDK"},
		"runtime without lib":   {map[string]any{"runtime_root": noLib}, fmt.Sprintf("runtime_root %q holds no libtrtmc_model_qwen_image.so", noLib)},
		"no runtime":            {map[string]any{"runtime_root": nil}, "runtime_root is required for an existing bundle mode"},
		"invalid bundle":        {map[string]any{"bundle": notBundle}, "not a valid .bundle artifact"},
		"request not object":    {map[string]any{"request": []any{}}, "session: request must be a JSON object"},
		"no request":            {map[string]any{"request": nil}, "session: request must be a JSON object"},
		"schema_version string": {map[string]any{"schema_version": "2"}, "cannot unmarshal"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.r.run("trtmc_benchmark_worker", "--serve", e.writeSession(t, tc.changes))
			assert.Equal(t, 1, res.code)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
			assert.Equal(t, map[string]any{"event": "failed", "error": got["error"], Marker: true}, got)
			assert.Contains(t, got["error"], tc.want)
		})
	}
	res := e.r.run("trtmc_benchmark_worker", "--serve", "/nowhere/session.json")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stdout, `"event":"failed"`)
	notObject := writeFile(t, filepath.Join(t.TempDir(), "session.json"), "[]")
	res = e.r.run("trtmc_benchmark_worker", "--serve", notObject)
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

// The controls stage's judge, on the steps probes it plans for TRTMC, holds the worker's
// Task time (runtime_e2e_wall_ms, perf-serve's model_call_ms: the edit's CPU time) to
// the steps asked: the honest worker's time grows with them, in the band; one that runs the bundle's step count whatever
// is asked (QUALKIT_DOUBLE_IGNORE_STEPS=1) fails, naming num_inference_steps.
func TestWorkerStepsControl(t *testing.T) {
	e := newWorkerEnv(t)
	decl := qwenimage.TRTMCControls(qwenimage.ServingPerfServe)
	decl.Controls = slices.DeleteFunc(decl.Controls, func(c schema.Control) bool { return c.Effect != schema.EffectSteps })
	decl.Accepted = nil
	judge := func(r *runner) controls.Verdict {
		probes := controls.Plan(decl, map[string]string{}, "Make it autumn.")
		var lines []string
		for _, p := range probes {
			lines = append(lines, fmt.Sprintf(`{"id":%q,"request":{"prompt":"Make it autumn.","image_path":%q,"seed":42,"num_steps":%s,"height":512,"width":512},"artifact_base":%q}`,
				p.Name, e.imageB, p.Value, filepath.Join(e.dir, "out", p.Name)))
		}
		res, out := e.serve(t, r, lines...)
		require.Equal(t, 0, res.code, res.stderr)
		in := controls.Input{Decl: decl, Outputs: map[string]image.Image{}}
		for i, p := range probes {
			obs, ok := out[i+1]["observation"].(map[string]any)
			require.True(t, ok, out[i+1])
			p.Status, p.TaskMS = 200, obs["runtime_e2e_wall_ms"].(float64)
			in.Outputs[p.Name] = decodeTestPNG(t, e.artifact(t, p.Name))
			in.Probes = append(in.Probes, p)
		}
		return controls.Judge(in)
	}
	honest := judge(e.r)
	require.NoError(t, honest.Err, "the edit's CPU time grows with the steps, however busy the host")
	t.Log(honest.Result.Controls[0].Figure)

	faulty := judge(e.r.with(EnvIgnoreSteps, "1"))
	require.Error(t, faulty.Err)
	assert.Contains(t, faulty.Err.Error(), "control num_inference_steps")
	assert.Contains(t, faulty.Err.Error(), "the server does not run the steps asked")
}
