package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"qualkit/families/refedit/edit"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFault(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Fault
	}{
		{"", Fault{}},
		{"jpeg", Fault{Name: FaultJPEG}},
		{"ignore-request-id", Fault{Name: FaultIgnoreRequestID}},
		{"status-500", Fault{Name: FaultStatus500, K: 1}},
		{"status-500:3", Fault{Name: FaultStatus500, K: 3}},
		{"crash:12", Fault{Name: FaultCrash, K: 12}},
		{"slow", Fault{Name: FaultSlow, K: 1, Delay: DefaultFaultDelay}},
		{"slow:2", Fault{Name: FaultSlow, K: 2, Delay: DefaultFaultDelay}},
	} {
		got, err := ParseFault(tc.spec)
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.want, got, tc.spec)
		assert.NoError(t, got.Check(), tc.spec)
	}
}

func TestParseFaultRejects(t *testing.T) {
	for spec, msg := range map[string]string{
		"nope":           `unknown fault "nope": want one of ignore-reference, `,
		"JPEG":           `unknown fault "JPEG"`,
		" jpeg":          `unknown fault " jpeg"`,
		"jpeg:2":         "jpeg takes no :K (only status-500, slow, crash do)",
		"crash:0":        "K must be an edit request number >= 1",
		"crash:-1":       "K must be an edit request number >= 1",
		"crash:x":        `got "x"`,
		"status-500:":    `got ""`,
		"status-500:1:2": `got "1:2"`,
	} {
		_, err := ParseFault(spec)
		assert.ErrorContains(t, err, msg, spec)
	}
}

func TestFaultNamesRoundTrip(t *testing.T) {
	task := map[string]bool{}
	for _, name := range FaultNames() {
		f, err := ParseFault(name)
		require.NoError(t, err)
		back, err := ParseFault(f.String())
		require.NoError(t, err)
		assert.Equal(t, f, back, name)
		assert.NotEmpty(t, f.Describe(), name)
		task[name] = f.Task()
	}
	assert.Equal(t, map[string]bool{
		FaultIgnoreReference: true, FaultNondeterministic: true, FaultDrift: true, FaultWrongSize: true,
		FaultJPEG: true, FaultConstant: true, FaultUnchanged: true, FaultResizeOnly: true, FaultOtherEdit: true, FaultRotate90: true, FaultWeakReference: true,
		FaultStatus500: false, FaultErrorJSON: false, FaultSlow: false, FaultCrash: false,
		FaultNoTiming: false, FaultIgnoreRequestID: false, FaultNeverReady: false,
		FaultIgnoreSteps: true, FaultPinSize: true, FaultDropGuidance: true, FaultAcceptUnknown: false,
	}, task)
	assert.False(t, Fault{}.On())
	assert.Contains(t, Fault{Name: FaultSlow, K: 1, Delay: 3 * time.Second}.Describe(), "sleeps 3s")
}

func TestNewRejectsAFaultParseFaultWouldNotMake(t *testing.T) {
	for _, f := range []Fault{
		{Name: "nope"},
		{Name: FaultCrash},
		{Name: FaultJPEG, K: 2},
		{Name: FaultSlow, K: 1},
		{Name: FaultJPEG, Delay: time.Second},
	} {
		_, err := New(Config{ModelName: testModel, Fault: f})
		assert.Error(t, err, "%+v", f)
	}
}

// faultServer is a loaded test server with fault spec on; crash exits go to exits.
func faultServer(t *testing.T, spec string, exits *[]int) (*Server, *syncBuffer) {
	t.Helper()
	f, err := ParseFault(spec)
	require.NoError(t, err)
	return newTestServer(t, func(c *Config) {
		c.Fault = f
		c.Exit = func(code int) { *exits = append(*exits, code) }
	})
}

// faultEdit posts one invert edit of img and returns the recorder and the decoded body.
func faultEdit(t *testing.T, s *Server, id string, img []byte) (*httptest.ResponseRecorder, map[string]json.RawMessage) {
	t.Helper()
	rr := postEdit(t, s, id, standardParts(img, "invert", part{name: "size", value: "16x8"})...)
	var body map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &body), rr.Body.String())
	return rr, body
}

// faultOutput is the image bytes of a successful edit body.
func faultOutput(t *testing.T, body map[string]json.RawMessage) []byte {
	t.Helper()
	var data []imageData
	require.NoError(t, json.Unmarshal(body["data"], &data))
	require.Len(t, data, 1)
	out, err := base64.StdEncoding.DecodeString(data[0].B64JSON)
	require.NoError(t, err)
	return out
}

func faultDecode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	return img
}

func TestNoFaultByDefault(t *testing.T) {
	s, _ := newTestServer(t, nil)
	rr, body := faultEdit(t, s, "plain", testPNG(t, 16, 8))
	assert.Equal(t, http.StatusOK, rr.Code)
	assert.NotContains(t, body, "fault")
	assert.Empty(t, rr.Header().Get(FaultHeader))
}

func TestFaultIsNamedInEveryResponse(t *testing.T) {
	var exits []int
	s, _ := faultServer(t, "status-500:2", &exits)
	for _, path := range []string{"/health/live", "/health/ready", "/v1/models"} {
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		assert.Equal(t, "status-500:2", rr.Header().Get(FaultHeader), path)
		assert.True(t, strings.HasPrefix(rr.Body.String(), `{"fault":"status-500:2",`), "%s: %s", path, rr.Body.String())
		assert.True(t, json.Valid(rr.Body.Bytes()), path)
	}
	img := testPNG(t, 16, 8)
	for _, want := range []int{http.StatusOK, http.StatusInternalServerError, http.StatusOK} {
		rr, body := faultEdit(t, s, "", img)
		assert.Equal(t, want, rr.Code, rr.Body.String())
		assert.JSONEq(t, `"status-500:2"`, string(body["fault"]))
	}
	rr := postEdit(t, s, "", standardParts(img, "")...)
	assert.Equal(t, http.StatusBadRequest, rr.Code)
	assert.True(t, strings.HasPrefix(rr.Body.String(), `{"fault":"status-500:2",`), rr.Body.String())
}

func TestTaskFaults(t *testing.T) {
	img, other := testPNG(t, 16, 8), testPNGShifted(t, 16, 8)
	clean, _ := newTestServer(t, nil)
	_, body := faultEdit(t, clean, "", img)
	want := faultOutput(t, body)

	var exits []int
	t.Run(FaultIgnoreReference, func(t *testing.T) {
		s, _ := faultServer(t, FaultIgnoreReference, &exits)
		_, a := faultEdit(t, s, "", img)
		_, b := faultEdit(t, s, "", other)
		assert.Equal(t, faultOutput(t, a), faultOutput(t, b), "two inputs, one output")
		assert.NotEqual(t, want, faultOutput(t, a))
	})
	t.Run(FaultWeakReference, func(t *testing.T) {
		s, _ := faultServer(t, FaultWeakReference, &exits)
		_, a := faultEdit(t, s, "", img)
		_, b := faultEdit(t, s, "", other)
		outA, outB := faultDecode(t, faultOutput(t, a)), faultDecode(t, faultOutput(t, b))
		differ := 0
		for y := range 8 {
			for x := range 16 {
				if outA.At(x, y) != outB.At(x, y) {
					differ++
				}
			}
		}
		assert.Equal(t, 1, differ, "two inputs, outputs one pixel apart")
	})
	t.Run(FaultResizeOnly, func(t *testing.T) {
		s, _ := faultServer(t, FaultResizeOnly, &exits)
		_, a := faultEdit(t, s, "", img)
		out := faultDecode(t, faultOutput(t, a))
		assert.Equal(t, image.Rect(0, 0, 16, 8), out.Bounds(), "the requested size")
		in := faultDecode(t, img)
		sx, sy := in.Bounds().Dx()/16, in.Bounds().Dy()/8
		for y := range 8 {
			for x := range 16 {
				r1, g1, b1, _ := out.At(x, y).RGBA()
				r2, g2, b2, _ := in.At(x*sx+sx/2, y*sy+sy/2).RGBA()
				assert.Equal(t, [3]uint32{r2 >> 8, g2 >> 8, b2 >> 8}, [3]uint32{r1 >> 8, g1 >> 8, b1 >> 8}, "(%d,%d) is the input's nearest pixel", x, y)
			}
		}
	})
	t.Run(FaultNondeterministic, func(t *testing.T) {
		s, _ := faultServer(t, FaultNondeterministic, &exits)
		_, a := faultEdit(t, s, "", img)
		_, b := faultEdit(t, s, "", img)
		assert.NotEqual(t, faultOutput(t, a), faultOutput(t, b))
	})
	t.Run(FaultDrift, func(t *testing.T) {
		s, _ := faultServer(t, FaultDrift, &exits)
		_, a := faultEdit(t, s, "", img)
		got, ref := faultDecode(t, faultOutput(t, a)), faultDecode(t, want)
		differ := 0
		for y := range 8 {
			for x := range 16 {
				if got.At(x, y) != ref.At(x, y) {
					differ++
				}
			}
		}
		assert.Equal(t, 1, differ)
	})
	t.Run(FaultWrongSize, func(t *testing.T) {
		s, _ := faultServer(t, FaultWrongSize, &exits)
		_, a := faultEdit(t, s, "", img)
		assert.Equal(t, image.Rect(0, 0, 17, 8), faultDecode(t, faultOutput(t, a)).Bounds())
	})
	t.Run(FaultJPEG, func(t *testing.T) {
		s, _ := faultServer(t, FaultJPEG, &exits)
		_, a := faultEdit(t, s, "", img)
		assert.True(t, bytes.HasPrefix(faultOutput(t, a), []byte{0xff, 0xd8, 0xff}))
	})
	t.Run(FaultConstant, func(t *testing.T) {
		s, _ := faultServer(t, FaultConstant, &exits)
		_, a := faultEdit(t, s, "", img)
		out := faultDecode(t, faultOutput(t, a))
		assert.Equal(t, image.Rect(0, 0, 16, 8), out.Bounds())
		for y := range 8 {
			for x := range 16 {
				assert.Equal(t, out.At(0, 0), out.At(x, y))
			}
		}
	})
	t.Run(FaultUnchanged, func(t *testing.T) {
		s, recs := faultServer(t, FaultUnchanged, &exits)
		_, a := faultEdit(t, s, "", img)
		assert.Equal(t, img, faultOutput(t, a))
		lines := recs.lines(t)
		require.Len(t, lines, 1)
		assert.Equal(t, *lines[0].InputSHA256, *lines[0].OutputSHA256)
	})
	assert.Empty(t, exits)
}

// testPNGShifted is testPNG's gradient moved by one level: same size, other pixels.
func testPNGShifted(t *testing.T, w, h int) []byte {
	t.Helper()
	src := faultDecode(t, testPNG(t, w, h)).(*image.RGBA)
	for i := range src.Pix {
		if i%4 != 3 {
			src.Pix[i] += 7
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, src))
	return buf.Bytes()
}

func TestErrorJSONFault(t *testing.T) {
	var exits []int
	s, recs := faultServer(t, FaultErrorJSON, &exits)
	rr, body := faultEdit(t, s, "e-1", testPNG(t, 16, 8))
	assert.Equal(t, http.StatusOK, rr.Code)
	assert.NotContains(t, body, "data")
	assert.Contains(t, string(body["error"]), "fault error-json")
	lines := recs.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, http.StatusOK, lines[0].Status)
	require.NotNil(t, lines[0].Error)
}

func TestNoTimingFault(t *testing.T) {
	var exits []int
	s, recs := faultServer(t, FaultNoTiming, &exits)
	rr, body := faultEdit(t, s, "", testPNG(t, 16, 8))
	assert.Equal(t, http.StatusOK, rr.Code)
	assert.NotContains(t, body, "timing")
	assert.Contains(t, body, "data")
	assert.NotEmpty(t, rr.Header().Get("Server-Timing"))
	assert.Greater(t, recs.lines(t)[0].Timing.TaskMS, 0.0, "the record keeps the timing")
}

func TestIgnoreRequestIDFault(t *testing.T) {
	var exits []int
	s, recs := faultServer(t, FaultIgnoreRequestID, &exits)
	rr, body := faultEdit(t, s, "sent-id", testPNG(t, 16, 8))
	assert.Equal(t, http.StatusOK, rr.Code)
	id := rr.Header().Get(RequestIDHeader)
	assert.NotEqual(t, "sent-id", id)
	assert.JSONEq(t, `"`+id+`"`, string(body["request_id"]))
	assert.Equal(t, id, recs.lines(t)[0].RequestID)
}

func TestNeverReadyFault(t *testing.T) {
	var exits []int
	s, _ := faultServer(t, FaultNeverReady, &exits)
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/health/ready", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rr.Code)
}

// The slow fault sleeps on the K-th request only, until its client leaves (recorded as
// 499). The sleep is an hour, so the test waits on events, not on a clock: a request that
// slept would not come back within its generous deadline, and one that did not sleep
// would answer before its client leaves.
func TestSlowFault(t *testing.T) {
	var exits []int
	s, recs := newTestServer(t, func(c *Config) {
		c.Fault = Fault{Name: FaultSlow, K: 2, Delay: time.Hour}
		c.Exit = func(code int) { exits = append(exits, code) }
	})
	img := testPNG(t, 16, 8)
	edit := func(deadline time.Duration) *httptest.ResponseRecorder {
		body, ct := multipartBody(t, standardParts(img, "invert", part{name: "size", value: "16x8"})...)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		req := httptest.NewRequest(http.MethodPost, EditRoute, body).WithContext(ctx)
		req.Header.Set("Content-Type", ct)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		return rr
	}
	assert.Equal(t, http.StatusOK, edit(time.Minute).Code, "the first request does not sleep")
	edit(50 * time.Millisecond) // the second sleeps until its client leaves
	lines := recs.lines(t)
	require.Len(t, lines, 2)
	assert.Equal(t, http.StatusOK, lines[0].Status)
	assert.Equal(t, statusClientClosed, lines[1].Status, "only the K-th request sleeps, until its client leaves")
	assert.Equal(t, http.StatusOK, edit(time.Minute).Code, "the request after it does not sleep")
	assert.Empty(t, exits)
}

func TestCrashFault(t *testing.T) {
	var exits []int
	s, _ := faultServer(t, "crash:2", &exits)
	img := testPNG(t, 16, 8)
	rr, _ := faultEdit(t, s, "", img)
	assert.Equal(t, http.StatusOK, rr.Code)
	assert.Empty(t, exits)
	faultEdit(t, s, "", img)
	assert.Equal(t, []int{crashExitCode}, exits)
}

// The setting faults run the edit as if the setting were not sent (two values give the
// same pixels) while the result, and so the records, state the value asked.
func TestSettingFaultsIgnoreTheSettingAndEchoIt(t *testing.T) {
	p := testProgram(t)
	img := testPNG(t, 48, 32)
	for _, tc := range []struct {
		fault, prompt string
		field         string
		a, b          string
	}{
		{FaultIgnoreSteps, "blur", "num_inference_steps", "10", "20"},
		{FaultDropGuidance, "grayscale", "guidance_scale", "1.0", "2.0"},
		{FaultPinSize, "grayscale", "size", "64x64", "48x32"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			e, err := p.Match(tc.prompt)
			require.NoError(t, err)
			run := func(f Fault, v string) edit.Result {
				s, err := p.ParseSettings(map[string]string{tc.field: v})
				require.NoError(t, err)
				res, err := f.Apply(p, img, e, s)
				require.NoError(t, err)
				return res
			}
			f := Fault{Name: tc.fault}
			ra, rb := run(f, tc.a), run(f, tc.b)
			assert.Equal(t, ra.OutputSHA256, rb.OutputSHA256, "%s=%s and %s give the same pixels", tc.field, tc.a, tc.b)
			assert.NotEqual(t, run(Fault{}, tc.a).OutputSHA256, run(Fault{}, tc.b).OutputSHA256, "unfaulted, they differ")
			want, _ := p.ParseSettings(map[string]string{tc.field: tc.b})
			assert.Equal(t, want.NumInferenceSteps, rb.Settings.NumInferenceSteps)
			assert.Equal(t, want.GuidanceScale, rb.Settings.GuidanceScale)
			if want.Width != 0 {
				assert.Equal(t, [2]int{want.Width, want.Height}, [2]int{rb.Settings.Width, rb.Settings.Height})
			}
		})
	}
}
