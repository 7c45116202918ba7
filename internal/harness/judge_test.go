package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// The judges are the stages' decisions apart from their commands and files: each runs
// here on values alone (no process, no container, no file), under -short, and `make
// check` runs them (-run Judge).

// solid is a w x h image of one colour.
func solid(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	return img
}

// withSquare is img with a side x side square at the top left in colour c.
func withSquare(img *image.RGBA, side int, c color.RGBA) *image.RGBA {
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	for y := range side {
		for x := range side {
			out.Set(x, y, c)
		}
	}
	return out
}

// wantErr checks err against want: "" means none, else a part of its message.
func wantErr(t *testing.T, want string, err error) {
	t.Helper()
	if want == "" {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
}

func TestJudgeInfluence(t *testing.T) {
	a := gradient(20, 20)
	black, white := color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}
	for _, tc := range []struct {
		name     string
		outs     [3]image.Image
		want     string
		repeatOK bool
	}{
		{"the image matters", [3]image.Image{a, a, solid(20, 20, black)}, "", true},
		{"the repeat differs: not deterministic", [3]image.Image{a, withSquare(a, 1, white), solid(20, 20, black)},
			"the same request twice gave different outputs (1 pixels differ", false},
		{"the other image changes nothing", [3]image.Image{a, a, a},
			"capability gap: two different reference images (x.png, y.png) gave pixel-identical outputs", true},
		// 4 of 400 pixels: 1 %, under judge.MinInfluenceFraction.
		{"the other image barely changes it", [3]image.Image{a, a, withSquare(a, 2, white)},
			"gave outputs that barely differ (4 pixels differ", true},
		// Outputs of two sizes are no comparison: none of the pixels counts as changed.
		{"the other output another size", [3]image.Image{a, a, gradient(10, 10)}, "barely differ (sizes differ; 0.00 % of the pixels)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeInfluence(influenceInput{Instruction: "invert", Images: [2]string{"x.png", "y.png"}, Outputs: tc.outs})
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, "invert", v.Result.Instruction)
			assert.Equal(t, [2]string{"x.png", "y.png"}, v.Result.Images)
			assert.Equal(t, tc.repeatOK, v.Result.Repeat.Identical())
		})
	}
}

func TestJudgeCaseDeclaration(t *testing.T) {
	row := "/ev/run/row"
	for _, tc := range []struct {
		name   string
		d      caseDeclaration
		want   string
		record bool
		result string
	}{
		{"a case on the built bundle", caseDeclaration{Cases: []string{"a.test"}}, "", false, ""},
		{"a case that builds the bundle", caseDeclaration{BuildByCase: true, Bundle: "/w/*.bundle", Cases: []string{"a.test"}}, "", false, ""},
		{"its result file in its artifacts", caseDeclaration{Cases: []string{"a.test"}, Result: row + "/correctness/artifacts/out/result.json"}, "", false, "correctness/artifacts/out/result.json"},
		{"the build left the bundle to a case that builds none", caseDeclaration{BuildByCase: true, Cases: []string{"a.test"}},
			`disagree on who builds the bundle (build command empty: true, case names a bundle: "")`, false, ""},
		{"a case that builds a bundle the build built", caseDeclaration{Bundle: "/w/*.bundle", Cases: []string{"a.test"}},
			`(build command empty: false, case names a bundle: "/w/*.bundle")`, false, ""},
		{"no case declared", caseDeclaration{}, "declares no test case id", true, ""},
		{"its result file elsewhere", caseDeclaration{Cases: []string{"a.test"}, Result: row + "/correctness/result.json", Artifacts: row + "/correctness/artifacts"},
			"the family's correctness result file /ev/run/row/correctness/result.json is not under the case's artifacts folder /ev/run/row/correctness/artifacts", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.d.RowDir = row
			v := judgeCaseDeclaration(tc.d)
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, tc.record, v.Record)
			assert.Equal(t, tc.result, v.ResultFile)
		})
	}
}

func TestJudgeCase(t *testing.T) {
	passed := schema.CaseCounts{Total: 1, Executed: 1, Cases: []string{"a.test"}}
	skipped := schema.CaseCounts{Total: 1, Skipped: 1, Reasons: []string{"test: no GPU"}}
	good := caseOutcome{Declared: []string{"a.test"}, BundleBefore: "aa", BundleAfter: "aa", Counts: passed}
	with := func(f func(*caseOutcome)) caseOutcome { o := good; f(&o); return o }
	for _, tc := range []struct {
		name    string
		o       caseOutcome
		want    string
		counted bool
	}{
		{"passed", good, "", true},
		{"passed, its result file says pass", with(func(o *caseOutcome) { o.ResultFile, o.Result = "/r.json", []byte(`{"status": "pass"}`) }), "", true},
		{"a case that built the bundle: no bundle to compare", with(func(o *caseOutcome) { o.BuildByCase, o.BundleAfter = true, "" }), "", true},
		{"the bundle changed", with(func(o *caseOutcome) { o.BundleAfter = "bb" }), "bundle changed while the correctness case ran: sha256 aa before, bb after", false},
		{"the bundle gone", with(func(o *caseOutcome) { o.BundleErr = errors.New("no such file") }), "bundle after correctness: no such file", false},
		{"no JUnit", with(func(o *caseOutcome) { o.JUnitErr = errors.New("correctness JUnit: missing") }), "correctness JUnit: missing", false},
		{"no JUnit, the command failed", with(func(o *caseOutcome) { o.JUnitErr, o.RunErr = errors.New("missing"), errors.New("exit 1") }),
			"exit 1 (and the case wrote no readable JUnit: missing)", false},
		{"a skipped case", with(func(o *caseOutcome) { o.Counts = skipped }), "1 skipped (test: no GPU): a skipped case proves nothing", true},
		{"another case than declared", with(func(o *caseOutcome) { o.Declared = []string{"b.test"} }), "declared but not executed: b.test", true},
		{"every case passed, the command failed", with(func(o *caseOutcome) { o.RunErr = errors.New("exit 2") }), "every case passed but the command failed: exit 2", true},
		{"its result file says fail", with(func(o *caseOutcome) { o.ResultFile, o.Result = "/r.json", []byte(`{"status": "fail"}`) }),
			`correctness result /r.json: status "fail", want "pass"`, true},
		{"its result file says the family's pass word", with(func(o *caseOutcome) {
			o.ResultFile, o.Result, o.ResultPass = "/evidence.json", []byte(`{"status": "passed"}`), "passed"
		}), "", true},
		{"its result file says pass, the family's word is passed", with(func(o *caseOutcome) {
			o.ResultFile, o.Result, o.ResultPass = "/evidence.json", []byte(`{"status": "pass"}`), "passed"
		}), `correctness result /evidence.json: status "pass", want "passed"`, true},
		{"its result file no JSON", with(func(o *caseOutcome) { o.ResultFile, o.Result = "/r.json", []byte(`pass`) }), "correctness result /r.json: invalid character", true},
		{"its result file unreadable", with(func(o *caseOutcome) { o.ResultFile, o.ResultErr = "/r.json", errors.New("gone") }), "correctness result: gone", true},
		{"a result file its family does not name", with(func(o *caseOutcome) {
			o.Artifacts = []schema.FileHash{{Path: "correctness/artifacts/case/result.json"}}
		}), "the correctness case wrote correctness/artifacts/case/result.json, but the family names no result file (CorrectnessCase.Result)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeCase(tc.o)
			wantErr(t, tc.want, v.Err)
			if assert.Equal(t, tc.counted, v.Counts != nil, "counts stated") && tc.counted {
				assert.Equal(t, tc.o.Counts, *v.Counts)
			}
		})
	}
}

func TestJudgeServerIdentity(t *testing.T) {
	spec, err := FakeFamily{}.Describe(family.Env{}, family.Row{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
		served string
	}{
		{"the row's checkpoint", 200, `{"data": [{"id": "m", "checkpoint": "acme/edit-v1"}]}`, "", "acme/edit-v1"},
		{"another checkpoint", 200, `{"data": [{"id": "m", "checkpoint": "acme/edit-v2"}]}`,
			`server identity (GET /v1/models): the server serves checkpoint "acme/edit-v2", the row is for "acme/edit-v1"`, "acme/edit-v2"},
		{"an answer the family refuses", 200, `{"data": []}`, "server identity (GET /v1/models): want one model in", ""},
		{"not found", 404, `no such route`, "server identity: GET /v1/models answered 404: no such route", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeServerIdentity(serverIdentity{Check: spec.Identity, Status: tc.status, Body: []byte(tc.body), Model: "acme/edit-v1"})
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, tc.served, v.Served)
		})
	}
}

func TestJudgeIdentity(t *testing.T) {
	input := encodePNG(t, gradient(8, 8))
	out := gradient(16, 16)
	httpPNG := encodePNG(t, out)
	var fast bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&fast, out))
	samePixels := fast.Bytes() // another encoding of the same pixels
	require.NotEqual(t, httpPNG, samePixels)
	fixtures := map[string]bool{bytesSHA256(input): true}
	replayed := func(id, phase string, native []byte) identityCase {
		return identityCase{Req: schema.IdentityRequest{RequestID: id, Phase: phase, Prompt: "invert", NativeFile: "identity/00-" + phase + "-native.png"},
			Input: input, HTTP: httpPNG, Native: native}
	}
	good := []identityCase{replayed("w0", schema.PhaseWarmup, httpPNG), replayed("p0", schema.PhaseProfiling, samePixels)}
	with := func(f func(c *identityCase)) []identityCase {
		cs := []identityCase{good[0], good[1]}
		f(&cs[1])
		return cs
	}
	for _, tc := range []struct {
		name               string
		in                 identityInput
		want               string
		matches, identical int
	}{
		{"every request pixel-equal", identityInput{Requests: good}, "", 2, 1},
		{"a request without an HTTP output", identityInput{Requests: with(func(c *identityCase) { c.HTTP = nil })},
			"1/2 native-HTTP pixel matches:\n  - request p0: no valid HTTP output to compare", 1, 1},
		{"an input that is no fixture", identityInput{Requests: with(func(c *identityCase) { c.Input = []byte("re-encoded") })},
			"request p0: AIPerf sent an image (sha256 ", 2, 1},
		{"its native Task failed", identityInput{Requests: with(func(c *identityCase) { c.Err = errors.New("exit 1") })},
			"request p0: native task: exit 1", 1, 1},
		{"its native Task wrote nothing", identityInput{Requests: with(func(c *identityCase) { c.Native, c.NativeErr = nil, errors.New("no such file") })},
			"request p0: the native Task wrote no identity/00-profiling-native.png: no such file", 1, 1},
		{"its native Task states another sha256", identityInput{Requests: with(func(c *identityCase) { c.Stated = strings.Repeat("0", 64) })},
			"request p0: the native Task says it wrote sha256 " + strings.Repeat("0", 64), 2, 1},
		{"its native output no PNG", identityInput{Requests: with(func(c *identityCase) { c.Native = []byte("GIF89a") })},
			"request p0: native ", 1, 1},
		{"its native output differs", identityInput{Requests: with(func(c *identityCase) { c.Native = encodePNG(t, withSquare(out, 1, color.RGBA{255, 255, 255, 255})) })},
			`request p0 (profiling, "invert"): native and HTTP outputs differ: 1 pixels differ`, 1, 1},
		{"fewer requests than the row asks", identityInput{Requests: good[:1], Want: 2}, "1 requests to compare, expected 2", 1, 1},
		{"the native run failed as a whole", identityInput{Requests: with(func(c *identityCase) { c.Err = errors.New("interrupted") }), NativeErr: errors.New("interrupted")},
			"1/2 native-HTTP pixel matches: interrupted", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Fixtures, tc.in.Replayed = fixtures, true
			if tc.in.Want == 0 {
				tc.in.Want = 2
			}
			v := judgeIdentity(tc.in)
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, len(tc.in.Requests), v.Summary.Total)
			assert.Len(t, v.Summary.Requests, len(tc.in.Requests), "every request listed")
			assert.Equal(t, tc.matches, v.Summary.PixelMatches)
			assert.Equal(t, tc.identical, v.Summary.ByteIdentical)
		})
	}

	// Stopped before the replays: the requests gone through are counted, nothing judged.
	v := judgeIdentity(identityInput{Requests: with(func(c *identityCase) { c.HTTP = nil }), Fixtures: fixtures, Want: 2})
	assert.NoError(t, v.Err)
	assert.Equal(t, 2, v.Summary.Total)
	require.Len(t, v.Summary.Requests, 1, "the request without an HTTP output")
	assert.Equal(t, "p0", v.Summary.Requests[0].RequestID)
}

// invert is img with every colour channel inverted: an edit of it.
func invert(img *image.RGBA) *image.RGBA {
	out := image.NewRGBA(img.Rect)
	for i := range out.Pix {
		out.Pix[i] = 255 - img.Pix[i]
		if i%4 == 3 {
			out.Pix[i] = 255
		}
	}
	return out
}

func TestJudgeQuality(t *testing.T) {
	in := gradient(16, 16)
	edited := invert(in)
	bound := func(v float64) *float64 { return &v }
	pair := &family.QualityPair{Image: "/fixtures/a.png", Prompt: "invert", Reference: "reference/a-invert.png"}
	req := func(id, phase string, i int, out image.Image) qualityCase {
		return qualityCase{RequestID: id, Phase: phase, Prompt: "invert", Index: i, Out: out, In: in}
	}
	good := []qualityCase{req("w0", schema.PhaseWarmup, 0, edited), req("p0", schema.PhaseProfiling, 1, edited)}
	pairCase := &qualityPairCase{RequestID: "p0", Reference: "correctness/artifacts/reference/a-invert.png", Ref: edited, Out: edited}
	noise := strings.Repeat("a", 64)
	latents := func(served string) *qualityPairCase {
		pc := *pairCase
		pc.Latents = &pairLatents{Field: "initial_latents_sha256", File: "/w/latents.raw", CaseSHA256: noise, Served: served}
		return &pc
	}
	for _, tc := range []struct {
		name     string
		in       qualityInput
		want     string
		failures int
	}{
		{"edits within the criteria, the pair equal to its reference",
			qualityInput{Criteria: schema.QualityCriteria{MeanMin: bound(0.05), MeanMax: bound(0.95), PSNRMin: bound(40)}, Requests: good, Pair: pair, PairCase: pairCase}, "", 0},
		{"no criteria, no pair", qualityInput{Requests: good}, "", 0},
		{"a constant output", qualityInput{Requests: []qualityCase{good[0], req("p0", schema.PhaseProfiling, 1, solid(16, 16, color.RGBA{9, 9, 9, 255}))}},
			"1 criterion(s) missed:\n  - request p0 (profiling, \"invert\"): output is a constant image", 1},
		{"the input sent back", qualityInput{Requests: []qualityCase{good[0], req("p0", schema.PhaseProfiling, 1, in)}},
			"request p0 (profiling, \"invert\"): output is the input image unchanged or only resized: 0.0 % of its pixels differ", 1},
		{"a mean bound missed", qualityInput{Criteria: schema.QualityCriteria{MeanMax: bound(0.1)}, Requests: good},
			"2 criterion(s) missed:\n  - request w0 (warmup, \"invert\"): pixel mean", 2},
		{"the pair's PSNR missed", qualityInput{Criteria: schema.QualityCriteria{PSNRMin: bound(1000)}, Requests: good, Pair: pair, PairCase: pairCase},
			"request p0, the pair the correctness case ran (correctness/artifacts/reference/a-invert.png): psnr 999.00 dB < 1000", 1},
		{"the pair never sent", qualityInput{Requests: good, Pair: pair},
			`no request sent the pair the correctness case ran (a.png with "invert"): the reference criteria were not applied`, 0},
		{"the pair on the case's noise", qualityInput{Requests: good, Pair: pair, PairCase: latents(noise)}, "", 0},
		{"the pair on another noise", qualityInput{Requests: good, Pair: pair, PairCase: latents(strings.Repeat("b", 64))},
			"the served pair did not start from the case's own noise: the server replayed latents sha256 bbbb", 1},
		{"the pair's noise not stated", qualityInput{Requests: good, Pair: pair, PairCase: latents("")},
			"the server's records state no initial_latents_sha256 for request p0: it did not replay the case's noise", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Size = "16x16"
			v := judgeQuality(tc.in)
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, tc.failures, v.Summary.Failures)
			require.Len(t, v.Summary.Requests, len(tc.in.Requests), "every output")
			assert.Equal(t, "identity/01-profiling-http.png", v.Summary.Requests[1].File)
			assert.Equal(t, tc.in.PairCase != nil, v.Summary.Pair != nil)
		})
	}

	// Stopped before every output was gathered: what was measured is stated, its
	// failures uncounted, and the stage's own error stands.
	v := judgeQuality(qualityInput{Size: "16x16", Requests: []qualityCase{req("w0", schema.PhaseWarmup, 0, in)}, Pair: pair, Stopped: true})
	assert.NoError(t, v.Err)
	require.Len(t, v.Summary.Requests, 1)
	assert.NotEmpty(t, v.Summary.Requests[0].Failures)
	assert.Zero(t, v.Summary.Failures)
}

func TestJudgeLatents(t *testing.T) {
	noise := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		l    pairLatents
		want string
	}{
		{"the case's noise", pairLatents{CaseSHA256: noise, Served: noise}, ""},
		{"no noise file", pairLatents{CaseErr: errors.New("0 paths match")}, "the noise the correctness case drew: 0 paths match"},
		{"no records", pairLatents{CaseSHA256: noise, RecordsErr: errors.New("server records: open: no such file")}, "the server's records: server records: open"},
		{"none stated", pairLatents{Field: "obs.sha", CaseSHA256: noise}, "the server's records state no obs.sha for request r1"},
		{"another noise", pairLatents{File: "/w/q0/latents.raw", CaseSHA256: noise, Served: "bb"},
			"the server replayed latents sha256 bb, the case drew " + noise + " (latents.raw)"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.want, judgeLatents(tc.l, "r1")) })
	}
}

// benchmarkCase is a benchmark of 1 warmup and 2 measured requests, each answered with a
// 16x16 PNG whose body states a Task time of 10 ms, AIPerf's latency 12 ms.
func benchmarkCase(t *testing.T) benchmarkInput {
	t.Helper()
	sent := encodePNG(t, gradient(8, 8))
	out := encodePNG(t, invert(gradient(16, 16)))
	var ex Export
	for i, r := range []struct{ id, phase string }{{"w0", schema.PhaseWarmup}, {"p0", schema.PhaseProfiling}, {"p1", schema.PhaseProfiling}} {
		var rec schema.RawRecord
		require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(`{"metadata": {"x_request_id": %q, "benchmark_phase": %q, "request_start_ns": %d, "request_end_ns": %d},
			"status": 200, "responses": [{"text": "{\"timing\": {\"task_ms\": 10}}"}]}`, r.id, r.phase, int64(i)*2e9, int64(i)*2e9+1.5e9)), &rec))
		var p schema.ProfileRecord
		require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(`{"metadata": {"x_request_id": %q, "benchmark_phase": %q},
			"metrics": {"request_latency": {"value": 12, "unit": "ms"}}}`, r.id, r.phase)), &p))
		ex.Raw, ex.Profile = append(ex.Raw, rec), append(ex.Profile, p)
	}
	in := benchmarkInput{Export: &ex, Measured: 2, Warmup: 1, Size: "16x16", Timing: schema.TimingSource{Body: "timing.task_ms"}}
	for range ex.Raw {
		in.Responses = append(in.Responses, benchmarkResponse{Sent: wire.Request{Image: sent, Prompt: "invert"}, PNG: out})
	}
	return in
}

func TestJudgeBenchmark(t *testing.T) {
	records := schema.TimingSource{Records: "task_ms", RecordID: "request_id"}
	both := schema.TimingSource{Body: "timing.task_ms", Records: "task_ms", RecordID: "request_id"}
	tasks := map[string]float64{"w0": 10, "p0": 10, "p1": 10}
	ids := map[string]bool{"w0": true, "p0": true, "p1": true}
	for _, tc := range []struct {
		name     string
		edit     func(in *benchmarkInput)
		want     string
		outputs  int
		timed    bool // the headline timing stated
		clientEr int
	}{
		{"every request answered and timed", func(*benchmarkInput) {}, "", 3, true, 0},
		{"Task times from the records", func(in *benchmarkInput) { in.Timing, in.RecordTasks = records, tasks }, "", 3, true, 0},
		{"body and records agree", func(in *benchmarkInput) { in.Timing, in.RecordTasks, in.RecordIDs = both, tasks, ids }, "", 3, true, 0},
		{"other request counts", func(in *benchmarkInput) { in.Measured = 3 }, "AIPerf recorded 2 measured + 1 warmup requests, the row asks for 3 + 1", 3, true, 0},
		{"a failed request", func(in *benchmarkInput) {
			in.Export.Raw[2].Status, in.Export.Raw[2].Error = 500, &schema.RecordError{Type: "HTTPError", Message: "boom"}
		}, "request p1 (profiling) failed: status 500 HTTPError: boom", 2, true, 1},
		{"the input sent back", func(in *benchmarkInput) { in.Responses[1].PNG = in.Responses[1].Sent.Image },
			"request p0 (profiling): output is the input image unchanged (same bytes)", 2, true, 0},
		{"another size", func(in *benchmarkInput) { in.Responses[1].PNG = encodePNG(t, gradient(8, 9)) },
			"request p0 (profiling): output is 8x9, the request asked for size 16x16", 2, true, 0},
		{"no PNG", func(in *benchmarkInput) { in.Responses[0].PNG = []byte("GIF89a") }, "request w0 (warmup): ", 2, true, 0},
		{"no output", func(in *benchmarkInput) { in.Responses[0].OutputErr = errors.New("no data[0].b64_json") },
			`request w0 (warmup): "invert": no data[0].b64_json`, 2, true, 0},
		{"a payload that does not decode", func(in *benchmarkInput) { in.Responses[0].SentErr = errors.New("request w0: not multipart") },
			"request w0 (warmup): request w0: not multipart", 2, true, 0},
		{"no client latency", func(in *benchmarkInput) { delete(in.Export.Profile[1].Metrics, "request_latency") },
			"request p0: AIPerf recorded no request_latency", 3, false, 0},
		{"no Task time in the body", func(in *benchmarkInput) { in.Export.Raw[1].Responses[0].Text = `{}` },
			`request p0: server Task time missing from response body timing.task_ms: field "timing.task_ms" is absent`, 3, false, 0},
		{"no records line", func(in *benchmarkInput) { in.Timing, in.RecordTasks = records, map[string]float64{"p1": 10} },
			"request p0: server Task time missing from records file task_ms joined on request_id: no records line with request id p0 (does the server honour X-Request-ID?)", 3, false, 0},
		{"the records unreadable", func(in *benchmarkInput) {
			in.Timing, in.RecordTasksErr = records, errors.New("server records: open: no such file")
		},
			"1 problem(s):\n  - server records: open: no such file", 3, false, 0},
		{"body and records disagree", func(in *benchmarkInput) {
			in.Timing, in.RecordTasks, in.RecordIDs = both, map[string]float64{"w0": 10, "p0": 11, "p1": 10}, ids
		}, "request p0: the response body says timing.task_ms = 10 ms, its records line task_ms = 11 ms", 3, false, 0},
		{"a request the records miss", func(in *benchmarkInput) {
			in.Timing, in.RecordTasks, in.RecordIDs = both, tasks, map[string]bool{"p0": true}
		}, "request p1: no records line with that request id: does the server honour X-Request-ID?", 3, false, 0},
		{"AIPerf failed, its export whole", func(in *benchmarkInput) { in.RunErr = errors.New("exit status 1") }, "1 problem(s):\n  - aiperf failed: exit status 1", 3, true, 0},
		{"a torn summary", func(in *benchmarkInput) { in.ExportErr = errors.New("aiperf summary: unexpected end of JSON input") },
			"aiperf summary: unexpected end of JSON input", 3, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := benchmarkCase(t)
			tc.edit(&in)
			v := judgeBenchmark(in)
			wantErr(t, tc.want, v.Err)
			assert.Len(t, v.Outputs, tc.outputs, "valid outputs")
			assert.Equal(t, tc.clientEr, v.ClientErrors)
			if !assert.Equal(t, tc.timed, v.Timing != nil && v.Timing.HTTP != nil, "headline timing") || !tc.timed {
				return
			}
			assert.Equal(t, 12.0, v.Timing.HTTP.P50)
			assert.Equal(t, 10.0, v.Timing.Task.P50)
			assert.Equal(t, 2, v.Timing.Task.Count, "the measured requests")
			assert.InDelta(t, 2/3.5, v.Timing.ImagesPerS, 1e-9, "2 images from the first start to the last end")
		})
	}

	// No export: AIPerf's own error, or why the export could not be read.
	assert.EqualError(t, judgeBenchmark(benchmarkInput{RunErr: errors.New("exit status 2")}).Err, "aiperf: exit status 2")
	assert.EqualError(t, judgeBenchmark(benchmarkInput{ExportErr: errors.New("no raw export")}).Err, "no raw export")
}
