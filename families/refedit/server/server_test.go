package server

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit/edit"
)

const testModel = "refedit-test"

// syncBuffer is a records sink the test can read while the server writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes every record written so far.
func (b *syncBuffer) lines(t *testing.T) []Record {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Record
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var r Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "record line %q", sc.Text())
		out = append(out, r)
	}
	return out
}

func testProgram(t testing.TB) *edit.Program {
	t.Helper()
	data, err := edit.Build(edit.BuiltinDefaults()).Encode()
	require.NoError(t, err)
	p, err := edit.Parse(data)
	require.NoError(t, err)
	return p
}

// newTestServer is a loaded Server writing records to the returned buffer.
func newTestServer(t testing.TB, configure func(*Config)) (*Server, *syncBuffer) {
	t.Helper()
	recs := &syncBuffer{}
	cfg := Config{ModelName: testModel, QueueDepth: 4, Records: recs}
	if configure != nil {
		configure(&cfg)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	s.Load(testProgram(t))
	return s, recs
}

func testPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 9), uint8(y * 5), uint8(x + y), 0xff})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// part is one multipart part; a file part when filename is set.
type part struct{ name, value, filename string }

func multipartBody(t testing.TB, parts ...part) (*bytes.Buffer, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.filename != "" {
			w, err = mw.CreateFormFile(p.name, p.filename)
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		require.NoError(t, err)
		_, err = io.WriteString(w, p.value)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	return &body, mw.FormDataContentType()
}

// standardParts is what AIPerf sends, with the image and prompt given.
func standardParts(img []byte, prompt string, extra ...part) []part {
	parts := []part{
		{name: "prompt", value: prompt},
		{name: "model", value: testModel},
		{name: "response_format", value: "b64_json"},
		{name: "n", value: "1"},
		{name: "image", value: string(img), filename: "image.png"},
	}
	return append(parts, extra...)
}

func postEdit(t testing.TB, h http.Handler, id string, parts ...part) *httptest.ResponseRecorder {
	t.Helper()
	body, ct := multipartBody(t, parts...)
	req := httptest.NewRequest(http.MethodPost, EditRoute, body)
	req.Header.Set("Content-Type", ct)
	if id != "" {
		req.Header.Set(RequestIDHeader, id)
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, req)
	return rr
}

type errorResponse struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func decodeError(t *testing.T, rr *httptest.ResponseRecorder) errorResponse {
	t.Helper()
	assert.Equal(t, "application/json", rr.Header().Get("Content-Type"))
	var e errorResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &e), rr.Body.String())
	return e
}

func TestEditHappyPath(t *testing.T) {
	s, recs := newTestServer(t, nil)
	img := testPNG(t, 20, 10)
	rr := postEdit(t, s, "req-1", standardParts(img, "Make it grayscale",
		part{name: "size", value: "24x16"}, part{name: "seed", value: "42"},
		part{name: "num_inference_steps", value: "4.0"}, part{name: "guidance_scale", value: "1.5"})...)
	require.Equal(t, http.StatusOK, rr.Code, rr.Body.String())
	assert.Equal(t, "req-1", rr.Header().Get(RequestIDHeader))
	assert.Regexp(t, `^task;dur=[0-9]+\.[0-9]{3}$`, rr.Header().Get("Server-Timing"))

	var resp editResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	assert.Equal(t, testModel, resp.Model)
	assert.Equal(t, "refedit", resp.Backend)
	assert.Equal(t, "req-1", resp.RequestID)
	assert.NotZero(t, resp.Created)
	assert.Equal(t, edit.Effective{Edit: "grayscale", Settings: edit.Settings{Width: 24, Height: 16, NumInferenceSteps: 4, GuidanceScale: 1.5, Seed: 42}, Precision: "fp32"}, resp.Settings)
	assert.Greater(t, resp.Timing.TaskMS, 0.0)
	assert.GreaterOrEqual(t, resp.Timing.QueueMS, 0.0)
	assert.GreaterOrEqual(t, resp.Timing.HandlerMS, resp.Timing.TaskMS)

	require.Len(t, resp.Data, 1)
	out, err := base64.StdEncoding.DecodeString(resp.Data[0].B64JSON)
	require.NoError(t, err)
	decoded, err := png.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 24, 16), decoded.Bounds())

	// The record carries the same facts; written before the response.
	recs.mu.Lock()
	raw := recs.buf.String()
	recs.mu.Unlock()
	for _, key := range []string{"request_id", "time", "route", "status", "input_sha256", "prompt", "settings", "output_sha256", "ignored", "timing", "error"} {
		assert.Contains(t, raw, `"`+key+`":`)
	}
	lines := recs.lines(t)
	require.Len(t, lines, 1)
	rec := lines[0]
	assert.Equal(t, "req-1", rec.RequestID)
	assert.Equal(t, EditRoute, rec.Route)
	assert.Equal(t, http.StatusOK, rec.Status)
	require.NotNil(t, rec.InputSHA256)
	assert.Equal(t, edit.SHA256(img), *rec.InputSHA256)
	require.NotNil(t, rec.OutputSHA256)
	assert.Equal(t, edit.SHA256(out), *rec.OutputSHA256)
	require.NotNil(t, rec.Prompt)
	assert.Equal(t, PromptRecord{SHA256: edit.SHA256([]byte("Make it grayscale")), Bytes: 17, Prefix: "Make it grayscale"}, *rec.Prompt)
	require.NotNil(t, rec.Settings)
	assert.Equal(t, resp.Settings, *rec.Settings)
	assert.Equal(t, resp.Timing, rec.Timing)
	assert.Nil(t, rec.Error)
	assert.NotEmpty(t, rec.Time)
}

func TestEditMatchesTheEditor(t *testing.T) {
	s, _ := newTestServer(t, nil)
	img := testPNG(t, 9, 7)
	rr := postEdit(t, s, "", part{name: "image[]", value: string(img), filename: "x.png"}, part{name: "prompt", value: "add grain"})
	require.Equal(t, http.StatusOK, rr.Code, rr.Body.String())
	var resp editResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	out, err := base64.StdEncoding.DecodeString(resp.Data[0].B64JSON)
	require.NoError(t, err)

	// The same call without HTTP gives the same bytes: the native task is this path.
	p := testProgram(t)
	e, err := p.Match("add grain")
	require.NoError(t, err)
	st, err := p.ParseSettings(nil)
	require.NoError(t, err)
	native, err := p.Apply(img, e, st)
	require.NoError(t, err)
	assert.Equal(t, native.PNG, out)
	assert.Equal(t, [2]int{9, 7}, [2]int{resp.Settings.Width, resp.Settings.Height}, "the input size by default")
}

func TestEditClientErrors(t *testing.T) {
	img := testPNG(t, 8, 8)
	tests := []struct {
		name   string
		parts  []part
		status int
		param  string
		want   string
	}{
		{"unknown field", standardParts(img, "grayscale", part{name: "negative_prompt", value: " "}), 400, "negative_prompt", `unknown field "negative_prompt"`},
		{"no prompt", []part{{name: "image", value: string(img), filename: "a.png"}}, 400, "prompt", "prompt is required"},
		{"blank prompt", standardParts(img, "  "), 400, "prompt", "prompt is required"},
		{"wrong model", append(standardParts(img, "grayscale")[:1], part{name: "model", value: "dall-e-2"}, part{name: "image", value: string(img), filename: "a.png"}), 400, "model", `model "dall-e-2" is not served here`},
		{"url format", []part{{name: "prompt", value: "grayscale"}, {name: "response_format", value: "url"}, {name: "image", value: string(img), filename: "a.png"}}, 400, "response_format", `only "b64_json"`},
		{"n=2", []part{{name: "prompt", value: "grayscale"}, {name: "n", value: "2"}, {name: "image", value: string(img), filename: "a.png"}}, 400, "n", "only 1 image"},
		{"no image", []part{{name: "prompt", value: "grayscale"}}, 400, "image", "image is required"},
		{"two images", standardParts(img, "grayscale", part{name: "image[]", value: string(img), filename: "b.png"}), 400, "image[]", "exactly one image"},
		{"repeated field", standardParts(img, "grayscale", part{name: "seed", value: "1"}, part{name: "seed", value: "2"}), 400, "seed", "more than once"},
		{"bad size", standardParts(img, "grayscale", part{name: "size", value: "big"}), 400, "size", "want WxH with W and H in 1..8192"},
		{"size over pixel limit", standardParts(img, "grayscale", part{name: "size", value: "4096x2048"}), 400, "size", "over the pixel limit"},
		{"bad steps", standardParts(img, "grayscale", part{name: "num_inference_steps", value: "0"}), 400, "num_inference_steps", "1..100"},
		{"bad guidance", standardParts(img, "grayscale", part{name: "guidance_scale", value: "4.0"}), 400, "guidance_scale", "(0, 3]"},
		{"bad seed", standardParts(img, "grayscale", part{name: "seed", value: "-3"}), 400, "seed", "0..9223372036854775807"},
		{"no edit", standardParts(img, "make it pretty"), 400, "prompt", "grayscale (grayscale, greyscale, black and white, monochrome)"},
		{"two edits", standardParts(img, "blur and sharpen"), 400, "prompt", `blur ("blur"), sharpen ("sharpen")`},
		{"corrupt image", standardParts(img[:len(img)/2], "grayscale"), 400, "image", "decode PNG"},
		{"not an image", standardParts([]byte("GIF89a"), "grayscale"), 400, "image", "not a PNG, JPEG or WebP"},
		{"empty image", standardParts(nil, "grayscale"), 400, "image", "empty file"},
		{"bomb header", standardParts(pngHeader(100000, 100000), "grayscale"), 413, "image", "over the limit of 4194304"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, recs := newTestServer(t, nil)
			rr := postEdit(t, s, "id-"+strings.ReplaceAll(tt.name, " ", "-"), tt.parts...)
			require.Equal(t, tt.status, rr.Code, rr.Body.String())
			e := decodeError(t, rr)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			require.NotNil(t, e.Error.Param)
			assert.Equal(t, tt.param, *e.Error.Param)
			assert.Contains(t, e.Error.Message, tt.want)
			assert.Equal(t, rr.Header().Get(RequestIDHeader), e.RequestID)

			lines := recs.lines(t)
			require.Len(t, lines, 1)
			assert.Equal(t, tt.status, lines[0].Status)
			require.NotNil(t, lines[0].Error)
			assert.Equal(t, e.Error.Message, *lines[0].Error)
			assert.Nil(t, lines[0].OutputSHA256)
			assert.Nil(t, lines[0].Settings)
			assert.Equal(t, e.RequestID, lines[0].RequestID)
		})
	}
}

func TestEditNotMultipart(t *testing.T) {
	s, recs := newTestServer(t, nil)
	req := httptest.NewRequest(http.MethodPost, EditRoute, strings.NewReader(`{"prompt":"grayscale"}`))
	req.Header.Set("Content-Type", "application/json")
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, req)
	assert.Equal(t, http.StatusBadRequest, rr.Code)
	e := decodeError(t, rr)
	assert.Contains(t, e.Error.Message, "multipart/form-data")
	assert.Nil(t, e.Error.Param)
	assert.Len(t, recs.lines(t), 1)
}

func TestEditBodyOverTheLimit(t *testing.T) {
	img := testPNG(t, 64, 64)
	body, ct := multipartBody(t, standardParts(img, "grayscale")...)
	limit := int64(body.Len() / 2)

	t.Run("declared length", func(t *testing.T) {
		s, recs := newTestServer(t, func(c *Config) { c.MaxBodyBytes = limit })
		req := httptest.NewRequest(http.MethodPost, EditRoute, bytes.NewReader(body.Bytes()))
		req.Header.Set("Content-Type", ct)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rr.Code)
		assert.Contains(t, decodeError(t, rr).Error.Message, "over the limit")
		assert.Equal(t, http.StatusRequestEntityTooLarge, recs.lines(t)[0].Status)
	})
	t.Run("streamed", func(t *testing.T) {
		s, recs := newTestServer(t, func(c *Config) { c.MaxBodyBytes = limit })
		// MultiReader hides the length, so only MaxBytesReader can stop it.
		req := httptest.NewRequest(http.MethodPost, EditRoute, io.MultiReader(bytes.NewReader(body.Bytes())))
		require.Equal(t, int64(-1), req.ContentLength)
		req.Header.Set("Content-Type", ct)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		assert.Equal(t, http.StatusRequestEntityTooLarge, rr.Code)
		assert.Contains(t, decodeError(t, rr).Error.Message, "request body over the limit")
		assert.Equal(t, http.StatusRequestEntityTooLarge, recs.lines(t)[0].Status)
	})
}

func TestEditInputOverMaxPixels(t *testing.T) {
	s, err := New(Config{ModelName: testModel})
	require.NoError(t, err)
	p, err := testProgram(t).WithMaxPixels(63)
	require.NoError(t, err)
	s.Load(p)
	rr := postEdit(t, s, "", standardParts(testPNG(t, 8, 8), "grayscale")...)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rr.Code)
	assert.Contains(t, decodeError(t, rr).Error.Message, "8x8 is 64 pixels, over the limit of 63")
}

func TestRequestIDGeneratedWhenAbsentOrMalformed(t *testing.T) {
	s, recs := newTestServer(t, nil)
	img := testPNG(t, 4, 4)
	for _, given := range []string{"", "has space", strings.Repeat("x", 201)} {
		rr := postEdit(t, s, given, standardParts(img, "invert")...)
		require.Equal(t, http.StatusOK, rr.Code)
		id := rr.Header().Get(RequestIDHeader)
		assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, id)
		var resp editResponse
		require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
		assert.Equal(t, id, resp.RequestID)
	}
	lines := recs.lines(t)
	require.Len(t, lines, 3)
	assert.NotEqual(t, lines[0].RequestID, lines[1].RequestID)

	// Health routes echo it too.
	req := httptest.NewRequest(http.MethodGet, "/health/live", nil)
	req.Header.Set(RequestIDHeader, "probe-7")
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, req)
	assert.Equal(t, "probe-7", rr.Header().Get(RequestIDHeader))
}

func TestHealthAndModels(t *testing.T) {
	recs := &syncBuffer{}
	s, err := New(Config{ModelName: testModel, Records: recs})
	require.NoError(t, err)
	get := func(path string) *httptest.ResponseRecorder {
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		return rr
	}
	assert.Equal(t, http.StatusOK, get("/health/live").Code)
	assert.Equal(t, http.StatusServiceUnavailable, get("/health/ready").Code)
	// Until it can serve, the model is not listed: a client that waits for it there
	// (AIPerf's --wait-for-model-mode models) sends nothing early.
	var empty modelList
	require.NoError(t, json.Unmarshal(get("/v1/models").Body.Bytes(), &empty))
	assert.Empty(t, empty.Data, "the model is listed before the server can serve it")
	rr := postEdit(t, s, "early", standardParts(testPNG(t, 4, 4), "invert")...)
	assert.Equal(t, http.StatusServiceUnavailable, rr.Code)
	assert.Equal(t, "server_error", decodeError(t, rr).Error.Type)
	assert.Equal(t, http.StatusServiceUnavailable, recs.lines(t)[0].Status)

	p := testProgram(t)
	s.Load(p)
	ready := get("/health/ready")
	assert.Equal(t, http.StatusOK, ready.Code)
	assert.Contains(t, ready.Body.String(), p.SHA256())

	var list modelList
	models := get("/v1/models")
	require.Equal(t, http.StatusOK, models.Code)
	require.NoError(t, json.Unmarshal(models.Body.Bytes(), &list))
	assert.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 1)
	assert.Equal(t, testModel, list.Data[0].ID)
	assert.Equal(t, "model", list.Data[0].Object)
	assert.Equal(t, p.SHA256(), list.Data[0].BundleSHA256)

	assert.Equal(t, http.StatusNotFound, get("/v1/images/generations").Code)
	assert.Equal(t, http.StatusMethodNotAllowed, get(EditRoute).Code)
}

func TestNewRejectsBadConfig(t *testing.T) {
	_, err := New(Config{})
	assert.ErrorContains(t, err, "model name")
	_, err = New(Config{ModelName: "m", QueueDepth: -1})
	assert.ErrorContains(t, err, "queue depth")
	_, err = New(Config{ModelName: "m", MaxBodyBytes: -1})
	assert.ErrorContains(t, err, "max body bytes")
}

func TestRecordsFlushBufferedWriter(t *testing.T) {
	var sink bytes.Buffer
	buffered := bufio.NewWriterSize(&sink, 1<<20)
	s, err := New(Config{ModelName: testModel, Records: buffered})
	require.NoError(t, err)
	s.Load(testProgram(t))
	rr := postEdit(t, s, "flushed", standardParts(testPNG(t, 4, 4), "invert")...)
	require.Equal(t, http.StatusOK, rr.Code)
	assert.Contains(t, sink.String(), `"request_id":"flushed"`)
	assert.True(t, strings.HasSuffix(sink.String(), "}\n"))
}

// pngHeader is a PNG signature and IHDR chunk declaring w x h, with no pixel data.
func pngHeader(w, h uint32) []byte {
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Pix[3] = 0xff
	_ = png.Encode(&buf, img)
	data := buf.Bytes()[:33] // signature (8) + IHDR length, type, 13 bytes, CRC
	out := append([]byte{}, data...)
	binary.BigEndian.PutUint32(out[16:], w)
	binary.BigEndian.PutUint32(out[20:], h)
	binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
	return out
}
