package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"log"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"qualkit/families/refedit/internal/fuzzseed"
	"strings"
	"testing"
)

var writeFuzzSeeds = flag.Bool("write-fuzz-seeds", false,
	"rewrite the named seed files under testdata/fuzz from the seed lists in fuzz_test.go")

// Limits of the fuzzed server: small, so each execution is cheap and both 413s
// (body and pixels) are in reach of the mutator.
const (
	fuzzMaxBodyBytes = 32 << 10
	fuzzMaxPixels    = 64 * 64
	// fuzzBoundary is the boundary of every multipart seed, so that a mutated body
	// still mostly matches its content type.
	fuzzBoundary = "qualkitfuzzboundary"
)

// FuzzEditRequest sends an arbitrary body under an arbitrary Content-Type through the
// real handler. With a loaded program and one request at a time only 200, 400 and
// 413 are possible (429 needs a full queue, 499 a client that left, 503 no program),
// so any other status fails, as does a recovered panic. A 200 carries a PNG of the
// effective size; every other answer is the documented JSON error with a message;
// each request writes exactly one record with its status.
func FuzzEditRequest(f *testing.F) {
	fuzzseed.Sync(f, "FuzzEditRequest", editRequestSeeds(f), *writeFuzzSeeds)
	p, err := testProgram(f).WithMaxPixels(fuzzMaxPixels)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		recs, logs := &syncBuffer{}, &syncBuffer{}
		s, err := New(Config{ModelName: testModel, MaxBodyBytes: fuzzMaxBodyBytes, QueueDepth: 1,
			Records: recs, Log: log.New(logs, "", 0)})
		if err != nil {
			t.Fatal(err)
		}
		s.Load(p)
		req := httptest.NewRequest(http.MethodPost, EditRoute, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)

		if strings.Contains(bufferText(logs), "panic:") {
			t.Fatalf("the handler panicked:\n%s", bufferText(logs))
		}
		if err := checkEditAnswer(rr, fuzzMaxPixels); err != nil {
			t.Fatal(err)
		}
		var lines []Record
		for line := range strings.Lines(bufferText(recs)) {
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("record line %q: %v", line, err)
			}
			lines = append(lines, r)
		}
		if len(lines) != 1 || lines[0].Status != rr.Code || lines[0].RequestID != rr.Header().Get(RequestIDHeader) {
			t.Fatalf("want one record with status %d, got %+v", rr.Code, lines)
		}
	})
}

// checkEditAnswer checks one answer of the edit route against the contract: status
// 200, 400 or 413; JSON; a 200 carries one PNG of the size its settings report,
// within maxPixels; an error names a message, the 4xx type and the request id, and a
// 413 closes the connection.
func checkEditAnswer(rr *httptest.ResponseRecorder, maxPixels int) error {
	id := rr.Header().Get(RequestIDHeader)
	if id == "" {
		return fmt.Errorf("status %d: no %s header", rr.Code, RequestIDHeader)
	}
	if ct := rr.Header().Get("Content-Type"); ct != "application/json" {
		return fmt.Errorf("status %d: Content-Type %q, want application/json", rr.Code, ct)
	}
	switch rr.Code {
	case http.StatusOK:
		var resp editResponse
		if err := json.Unmarshal(rr.Body.Bytes(), &resp); err != nil {
			return fmt.Errorf("200 body is not an edit response: %v", err)
		}
		if len(resp.Data) != 1 || resp.Backend != Backend || resp.RequestID != id {
			return fmt.Errorf("200 body: %d images, backend %q, request id %q (header %q)", len(resp.Data), resp.Backend, resp.RequestID, id)
		}
		data, err := base64.StdEncoding.DecodeString(resp.Data[0].B64JSON)
		if err != nil {
			return fmt.Errorf("200 b64_json: %v", err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("200 image is not a PNG: %v", err)
		}
		w, h := resp.Settings.Width, resp.Settings.Height
		if img.Bounds() != image.Rect(0, 0, w, h) {
			return fmt.Errorf("200 image is %v, settings say %dx%d", img.Bounds(), w, h)
		}
		if w*h > maxPixels {
			return fmt.Errorf("200 image %dx%d is over the pixel limit %d", w, h, maxPixels)
		}
		if !strings.HasPrefix(rr.Header().Get("Server-Timing"), "task;dur=") {
			return fmt.Errorf("200 without Server-Timing")
		}
		return nil
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		var e errorResponse
		if err := json.Unmarshal(rr.Body.Bytes(), &e); err != nil {
			return fmt.Errorf("%d body is not a JSON error: %v: %.200q", rr.Code, err, rr.Body.String())
		}
		if e.Error.Message == "" || e.Error.Type != "invalid_request_error" || e.RequestID != id {
			return fmt.Errorf("%d error: message %q, type %q, request id %q (header %q)", rr.Code, e.Error.Message, e.Error.Type, e.RequestID, id)
		}
		if rr.Code == http.StatusRequestEntityTooLarge && rr.Header().Get("Connection") != "close" {
			return fmt.Errorf("413 without Connection: close")
		}
		return nil
	default:
		return fmt.Errorf("status %d is not one a single request may get: %.300q", rr.Code, rr.Body.String())
	}
}

// rawPart is a multipart part with the headers a hostile client chooses.
type rawPart struct {
	name, filename, contentType string
	value                       []byte
}

// rawMultipart writes parts under fuzzBoundary. A part with no name gets no
// Content-Disposition at all.
func rawMultipart(parts ...rawPart) []byte {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := mw.SetBoundary(fuzzBoundary); err != nil {
		panic(err)
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		switch {
		case p.name != "" && p.filename != "":
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
		case p.name != "":
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q`, p.name))
		}
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			panic(err)
		}
		_, _ = w.Write(p.value)
	}
	_ = mw.Close()
	return body.Bytes()
}

func field(name, value string) rawPart { return rawPart{name: name, value: []byte(value)} }

func file(name string, data []byte, contentType string) rawPart {
	return rawPart{name: name, filename: "image.png", contentType: contentType, value: data}
}

func editRequestSeeds(t testing.TB) []fuzzseed.Seed {
	ct := "multipart/form-data; boundary=" + fuzzBoundary
	img := testPNG(t, 8, 8)
	standard := func(image []byte, prompt string, extra ...rawPart) []byte {
		parts := []rawPart{field("prompt", prompt), field("model", testModel), field("response_format", "b64_json"),
			field("n", "1"), file("image", image, "image/png")}
		return rawMultipart(append(parts, extra...)...)
	}
	seed := func(name, contentType string, body []byte) fuzzseed.Seed {
		return fuzzseed.Seed{Name: name, Args: []any{contentType, body}}
	}
	return []fuzzseed.Seed{
		seed("aiperf-png-grayscale", ct, standard(img, "Make it black and white",
			field("size", "16x12"), field("seed", "42"), field("num_inference_steps", "4.0"), field("guidance_scale", "1.5"))),
		seed("image-brackets-blur", ct, rawMultipart(field("prompt", "blur"), file("image[]", img, "application/octet-stream"))),
		seed("jpeg-sepia", ct, standard(fuzzJPEG(t, 16, 8), "sepia")),
		seed("png-at-the-limit", ct, standard(testPNG(t, 64, 64), "pixelate")),
		seed("image-twice", ct, standard(img, "invert", file("image[]", img, "image/png"))),
		seed("image-and-image-brackets", ct, rawMultipart(field("prompt", "invert"), file("image[]", img, ""), file("image", img, ""))),
		seed("png-header-100000x100000", ct, standard(pngHeader(100000, 100000), "invert")),
		seed("png-header-65x64", ct, standard(pngHeader(65, 64), "invert")),
		seed("png-truncated", ct, standard(img[:len(img)/2], "invert")),
		seed("png-corrupt", ct, standard(flipMiddle(img), "invert")),
		seed("gif-as-image-png", ct, standard([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "invert")),
		seed("text-as-image-png", ct, standard([]byte("<html>not an image</html>"), "invert")),
		seed("empty-image", ct, standard(nil, "invert")),
		seed("nested-multipart-image", ct, standard(nestedMultipart(img), "invert")),
		seed("size-over-pixel-limit", ct, standard(img, "invert", field("size", "128x128"))),
		seed("bad-settings", ct, standard(img, "invert", field("seed", "-1"))),
		seed("repeated-field", ct, standard(img, "invert", field("seed", "1"), field("seed", "2"))),
		seed("unknown-field", ct, standard(img, "invert", field("negative_prompt", "x"))),
		seed("part-without-disposition", ct, rawMultipart(rawPart{value: []byte("anonymous")}, field("prompt", "invert"))),
		seed("no-prompt", ct, rawMultipart(file("image", img, "image/png"))),
		seed("two-edits", ct, standard(img, "blur and sharpen")),
		seed("wrong-model", ct, rawMultipart(field("prompt", "invert"), field("model", "dall-e-2"), file("image", img, "image/png"))),
		seed("prompt-over-body-limit", ct, standard(img, strings.Repeat("a", fuzzMaxBodyBytes)+" invert")),
		seed("no-closing-boundary", ct, bytes.TrimSuffix(standard(img, "invert"), []byte("--"+fuzzBoundary+"--\r\n"))),
		seed("empty-body", ct, nil),
		seed("no-boundary", "multipart/form-data", standard(img, "invert")),
		seed("other-boundary", "multipart/form-data; boundary=other", standard(img, "invert")),
		seed("multipart-mixed", "multipart/mixed; boundary="+fuzzBoundary, standard(img, "invert")),
		seed("content-type-image-png", "image/png", img),
		seed("json", "application/json", []byte(`{"prompt":"invert","image":"iVBORw0KGgo="}`)),
		seed("no-content-type", "", standard(img, "invert")),
	}
}

// fuzzJPEG is a w x h baseline JPEG of a gradient.
func fuzzJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 15), uint8(y * 30), 128, 0xff})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// flipMiddle inverts 8 bytes in the middle of data (a PNG's compressed pixels).
func flipMiddle(data []byte) []byte {
	c := bytes.Clone(data)
	for i := len(c) / 2; i < len(c)/2+8 && i < len(c); i++ {
		c[i] ^= 0xff
	}
	return c
}

// bufferText is everything written to b so far.
func bufferText(b *syncBuffer) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
