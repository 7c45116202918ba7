package harness

import (
	"errors"
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
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
		// 4 of 400 pixels: 1 %, under MinInfluenceFraction.
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
		{"its result file no JSON", with(func(o *caseOutcome) { o.ResultFile, o.Result = "/r.json", []byte(`pass`) }), "correctness result /r.json: invalid character", true},
		{"its result file unreadable", with(func(o *caseOutcome) { o.ResultFile, o.ResultErr = "/r.json", errors.New("gone") }), "correctness result: gone", true},
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
	spec, err := FakeFamily{}.Describe(Env{}, Row{})
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
