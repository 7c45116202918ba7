package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The memory one edit request may allocate in all (runtime.MemStats.TotalAlloc, an
// upper bound on what it holds at any moment), for a body of B bytes of which H are
// part headers, whose edit decodes I input pixels and writes O output pixels:
//
//	8 B + 32 H + 40 I + 96 O + 2 MiB
//
// 8 per body byte: a text field is read (io.ReadAll's doubling), made a string, and
// the prompt written again into the record line (JSON's doubling buffer), the test's
// in-memory records sink included; image bytes cost about 2. 32 per header byte:
// net/textproto and mime re-buffer a part header several times, and an unknown field
// name is repeated in the message, the param and the record (a 1 MiB name allocates
// about 25 MiB); multipart refuses a part header over 10 MiB. 40 per input pixel: the
// decoder's image (16-bit RGBA is 8 B/px) and the float32 raster (12 B/px). 96 per
// output pixel: the resized base, the edit's rasters (sharpen and blur keep two),
// the quantized image, and the PNG, base64 and JSON copies of the answer. 2 MiB: the
// PNG encoder's deflate state and the rest of one request.
//
// At the defaults (64 MiB body, 4,194,304 pixels in and out) and headers of a few
// hundred bytes that is at most 512 + 160 + 384 + 2 MiB, about 1058 MiB, allocated
// over the request. Only the one worker decodes, so a server holds at most one
// edit's working set plus the bodies of the requests it is reading or has queued
// (each at most MaxBodyBytes; the queue admits 1 + QueueDepth, but how many bodies
// are read at once is up to the listener, not the server).
const (
	memPerBodyByte    = 8
	memPerHeaderByte  = 32
	memPerInputPixel  = 40
	memPerOutputPixel = 96
	memPerRequest     = 2 << 20
)

// siege tallies the hostile requests of TestHostileInputs. A crash is a panic the
// server recovered (its log says "panic:"), a 5xx, or an answer off the contract
// (checkEditAnswer: an error that is not the documented JSON, a 200 without its PNG).
type siege struct {
	mu      sync.Mutex
	tried   int
	crashes []string
}

func (g *siege) observe(name string, status int, answerErr error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tried++
	if status >= 500 || answerErr != nil {
		g.crashes = append(g.crashes, fmt.Sprintf("%s: status %d: %v", name, status, answerErr))
	}
}

// countPanics adds the panics a server logged to the tally.
func (g *siege) countPanics(name string, logs *syncBuffer) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for range strings.Count(bufferText(logs), "panic:") {
		g.crashes = append(g.crashes, name+": recovered panic: "+bufferText(logs))
	}
}

// hostileCase is one hostile request, sent alone to a fresh server.
type hostileCase struct {
	name      string
	configure func(*Config) // nil: the default limits
	maxPixels int           // 0: the bundle's 2048x2048
	request   func(t *testing.T) *http.Request
	status    int
	param     string // the param the error names; "" for null
	message   string // a substring of the error message
	// For the memory bound: the pixels the request may decode and write, and the
	// bytes of part headers when they are more than a few hundred.
	inputPixels, outputPixels, headerBytes int
}

// TestHostileInputs is the issue "nothing breaks on hostile input": each input alone
// (status, error, memory), the queue overrun, and the heap after it all.
func TestHostileInputs(t *testing.T) {
	g := &siege{}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	t.Run("one at a time", func(t *testing.T) {
		for _, c := range hostileCases(t) {
			t.Run(c.name, func(t *testing.T) { runHostile(t, g, c) })
		}
	})
	t.Run("bomb header allocates little", func(t *testing.T) { bombHeader(t, g) })
	t.Run("queue over the limit", func(t *testing.T) { overrunQueue(t, g) })

	t.Run("heap after the siege", func(t *testing.T) {
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		grown := int64(after.HeapInuse) - int64(before.HeapInuse)
		t.Logf("heap in use after GC: %d KiB before, %d KiB after (%+d KiB)", before.HeapInuse>>10, after.HeapInuse>>10, grown>>10)
		assert.Less(t, grown, int64(16<<20), "nothing of the hostile requests is kept")
	})

	t.Logf("hostile inputs tried %d, server crashes %d", g.tried, len(g.crashes))
	assert.Empty(t, g.crashes, "server crashes")
}

func runHostile(t *testing.T, g *siege, c hostileCase) {
	logs := &syncBuffer{}
	s, recs := newTestServer(t, func(cfg *Config) {
		cfg.Log = log.New(logs, "", 0)
		if c.configure != nil {
			c.configure(cfg)
		}
	})
	if c.maxPixels != 0 {
		p, err := testProgram(t).WithMaxPixels(c.maxPixels)
		require.NoError(t, err)
		s.Load(p)
	}
	req := c.request(t)
	body := req.ContentLength
	rr := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s.ServeHTTP(rr, req)
	runtime.ReadMemStats(&after)

	g.observe(c.name, rr.Code, checkEditAnswer(rr, s.program.Load().Limits().MaxPixels))
	g.countPanics(c.name, logs)
	require.Equal(t, c.status, rr.Code, "%.500s", rr.Body.String())
	if c.status != http.StatusOK {
		e := decodeError(t, rr)
		assert.Contains(t, e.Error.Message, c.message)
		if c.param == "" {
			assert.Nil(t, e.Error.Param)
		} else if assert.NotNil(t, e.Error.Param) {
			assert.Equal(t, c.param, *e.Error.Param)
		}
		// The one piece of client text an error repeats in full is the field name it names.
		assert.Less(t, len(e.Error.Message), 8<<10+len(c.param), "an error message stays short whatever the input")
	}
	// Decoded whole: a record carries the prompt, and this one may be 8 MB long.
	var rec Record
	dec := json.NewDecoder(strings.NewReader(bufferText(recs)))
	require.NoError(t, dec.Decode(&rec))
	assert.False(t, dec.More(), "one record per request")
	assert.Equal(t, c.status, rec.Status)

	if body < 0 {
		body = s.cfg.MaxBodyBytes
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	bound := uint64(body*memPerBodyByte + int64(c.headerBytes)*memPerHeaderByte +
		int64(c.inputPixels)*memPerInputPixel + int64(c.outputPixels)*memPerOutputPixel + memPerRequest)
	if raceBuild() {
		// The race runtime allocates about twice as much to grow a slice (io.ReadAll,
		// bytes.Buffer); the pixel work is the same.
		bound += uint64(body * memPerBodyByte)
	}
	t.Logf("status %d; body %d B, pixels %d in %d out; allocated %d KiB of a bound of %d KiB",
		rr.Code, body, c.inputPixels, c.outputPixels, allocated>>10, bound>>10)
	assert.LessOrEqual(t, allocated, bound, "the request's memory is within the stated bound")
}

// overrunQueue sends 20 edits at once over TCP to a server with queue depth 1 whose
// worker is held: exactly one runs and one waits, the other 18 are 429 with
// Retry-After: 1, and once the worker is released the two finish and the server
// answers again.
func overrunQueue(t *testing.T, g *siege) {
	const clients = 20
	logs := &syncBuffer{}
	s, recs := newTestServer(t, func(c *Config) { c.QueueDepth = 1; c.Log = log.New(logs, "", 0) })
	started, release := holdWorker(s)
	t.Cleanup(release)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	body, ct := multipartBody(t, standardParts(testPNG(t, 16, 16), "invert")...)

	type answer struct {
		status     int
		retryAfter string
		body       []byte
		err        error
	}
	answers := make(chan answer, clients)
	for i := range clients {
		go func() {
			req, err := http.NewRequest(http.MethodPost, srv.URL+EditRoute, bytes.NewReader(body.Bytes()))
			if err != nil {
				answers <- answer{err: err}
				return
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set(RequestIDHeader, fmt.Sprintf("overrun-%02d", i))
			resp, err := srv.Client().Do(req)
			if err != nil {
				answers <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			answers <- answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: data, err: err}
		}()
	}
	<-started
	counts := map[int]int{}
	take := func() {
		a := <-answers
		require.NoError(t, a.err)
		counts[a.status]++
		var e errorResponse
		var answerErr error
		if a.status == http.StatusTooManyRequests {
			assert.Equal(t, "1", a.retryAfter)
			if err := json.Unmarshal(a.body, &e); err != nil || !strings.Contains(e.Error.Message, "queue is full") {
				answerErr = fmt.Errorf("429 body %q is not the queue-full error (%v)", a.body, err)
			}
		}
		g.observe("queue overrun", a.status, answerErr)
	}
	for range clients - 2 {
		take() // the rejected ones answer while the worker is still held
	}
	assert.Equal(t, map[int]int{http.StatusTooManyRequests: clients - 2}, counts)
	release()
	take()
	take()
	assert.Equal(t, map[int]int{http.StatusTooManyRequests: clients - 2, http.StatusOK: 2}, counts)
	require.Len(t, recs.lines(t), clients)

	resp, err := srv.Client().Get(srv.URL + "/health/live")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the server still answers")
	g.observe("live after the overrun", resp.StatusCode, nil)
	assert.Zero(t, len(s.worker.admitted), "the queue is empty again")
	assert.Equal(t, http.StatusOK, postEdit(t, s, "", standardParts(testPNG(t, 4, 4), "invert")...).Code)
	g.observe("edit after the overrun", http.StatusOK, nil)
	g.countPanics("queue overrun", logs)
}

// hostileCases are the inputs of the issue and the neighbours worth having.
func hostileCases(t *testing.T) []hostileCase {
	multipartCT := "multipart/form-data; boundary=" + fuzzBoundary
	img := testPNG(t, 8, 8)
	// The bodies are built when a case runs, so that only one is in memory at a time.
	edit := func(image []byte, prompt string, extra ...rawPart) func(*testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			parts := []rawPart{field("prompt", prompt), field("model", testModel), field("response_format", "b64_json"),
				field("n", "1"), file("image", image, "image/png")}
			return raw(multipartCT, rawMultipart(append(parts, extra...)...))(t)
		}
	}
	manyFields := func(n int, name func(int) string) func(*testing.T) *http.Request {
		return func(t *testing.T) *http.Request {
			parts := []rawPart{file("image", img, "image/png")}
			for i := range n {
				parts = append(parts, field(name(i), "x"))
			}
			return raw(multipartCT, rawMultipart(parts...))(t)
		}
	}
	eightMB := strings.Repeat("make it look nice ", 8<<20/18)
	atLimit := strings.Repeat("x", DefaultMaxPromptBytes-len(" invert")) + " invert"
	oneMiB := 1 << 20
	return []hostileCase{
		{name: "PNG header declaring 100000x100000", request: edit(pngHeader(100000, 100000), "invert"),
			status: 413, param: "image", message: "100000x100000 is 10000000000 pixels, over the limit of 4194304"},
		{name: "PNG header declaring 2049x2048", request: edit(pngHeader(2049, 2048), "invert"),
			status: 413, param: "image", message: "over the limit of 4194304"},
		// image/png refuses it before saying its size; the server reads the size itself.
		{name: "PNG header declaring 2^31-1 x 2^31-1", request: edit(pngHeader(1<<31-1, 1<<31-1), "invert"),
			status: 413, param: "image", message: "2147483647x2147483647 is 4611686014132420609 pixels, over the limit of 4194304"},
		// Beyond what the PNG specification allows (2^31-1): not an over-limit PNG, not a PNG.
		{name: "PNG header declaring 2^32-1 x 1", request: edit(pngHeader(1<<32-1, 1), "invert"),
			status: 400, param: "image", message: "read PNG header"},
		{name: "JPEG header declaring 65535x65535", request: edit(jpegWithSize(fuzzJPEG(t, 16, 8), 65535, 65535), "invert"),
			status: 413, param: "image", message: "65535x65535 is 4294836225 pixels"},
		{name: "PNG truncated in the pixels", request: edit(img[:len(img)-20], "invert"),
			status: 400, param: "image", message: "decode PNG", inputPixels: 64},
		{name: "PNG truncated in the header", request: edit(img[:20], "invert"),
			status: 400, param: "image", message: "read PNG header"},
		{name: "PNG signature only", request: edit(img[:8], "invert"),
			status: 400, param: "image", message: "read PNG header"},
		{name: "PNG with flipped pixel bytes (CRC wrong)", request: edit(flipMiddle(img), "invert"),
			status: 400, param: "image", message: "decode PNG", inputPixels: 64},
		{name: "PNG with garbage pixel data (CRC right)", request: edit(pngWithIDAT(img, bytes.Repeat([]byte{0xa5}, 64)), "invert"),
			status: 400, param: "image", message: "decode PNG", inputPixels: 64},
		{name: "PNG header then 1 MiB of zeros", request: edit(append(pngHeader(8, 8), make([]byte, oneMiB)...), "invert"),
			status: 400, param: "image", message: "decode PNG", inputPixels: 64},
		{name: "JPEG truncated", request: edit(truncate(fuzzJPEG(t, 16, 8), 40), "invert"),
			status: 400, param: "image", message: "decode JPEG", inputPixels: 128},
		{name: "GIF bytes sent as image/png", request: edit([]byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "invert"),
			status: 400, param: "image", message: "not a PNG, JPEG or WebP"},
		{name: "HTML sent as image/png", request: edit([]byte("<!doctype html><p>hello</p>"), "invert"),
			status: 400, param: "image", message: "not a PNG, JPEG or WebP"},
		{name: "1 MiB of noise sent as image/png", request: edit(noise(oneMiB), "invert"),
			status: 400, param: "image", message: "not a PNG, JPEG or WebP"},
		{name: "empty image part", request: edit(nil, "invert"),
			status: 400, param: "image", message: "empty file"},
		{name: "nested multipart as the image", request: edit(nestedMultipart(img), "invert"),
			status: 400, param: "image", message: "not a PNG, JPEG or WebP"},
		// At small pixel limits, not 2048x2048, to keep the race build quick: the memory
		// bound is per pixel, so fewer pixels test the same constants.
		{name: "16-bit PNG of one colour at the pixel limit (a 3 KB body that decodes to 2 MiB)", maxPixels: 512 * 512,
			request: edit(flatPNG16(t, 512, 512), "invert"), status: 200, inputPixels: 512 * 512, outputPixels: 512 * 512},
		{name: "1x1 PNG resized to the pixel limit", maxPixels: 512 * 512, request: edit(testPNG(t, 1, 1), "invert", field("size", "512x512")),
			status: 200, inputPixels: 1, outputPixels: 512 * 512},
		{name: "noise PNG at the pixel limit, sharpened (incompressible in and out)", maxPixels: 256 * 256,
			request: edit(noisePNG(t, 256, 256), "sharpen"), status: 200, inputPixels: 256 * 256, outputPixels: 256 * 256},
		{name: "request Content-Type image/png", request: raw("image/png", img),
			status: 400, message: "want a multipart/form-data body"},
		{name: "multipart without a boundary", request: raw("multipart/form-data", rawMultipart(field("prompt", "invert"))),
			status: 400, message: "no multipart boundary"},
		{name: "multipart never closed", status: 400, param: "image", message: "unexpected EOF",
			request: raw(multipartCT, bytes.TrimSuffix(rawMultipart(field("prompt", "invert"), file("image", img, "image/png")),
				[]byte("--"+fuzzBoundary+"--\r\n")))},
		{name: "prompt at the limit asking for one edit", request: edit(img, atLimit),
			status: 200, inputPixels: 64, outputPixels: 64},
		{name: "prompt at the limit matching no edit", request: edit(img, atLimit[:DefaultMaxPromptBytes-len(" invert")]+"       "),
			status: 400, param: "prompt", message: "no supported edit"},
		{name: "prompt one byte over the limit", request: edit(img, atLimit+"!"),
			status: 413, param: "prompt", message: `field "prompt" is over the limit of 32000 bytes (--max-prompt-bytes)`},
		{name: "8 MB prompt", request: edit(img, eightMB+" invert"),
			status: 413, param: "prompt", message: `field "prompt" is over the limit of 32000 bytes`},
		{name: "8 MB prompt over a 1 MiB body limit (declared length)", configure: bodyLimit(oneMiB), request: edit(img, eightMB),
			status: 413, message: "over the limit of 1048576 bytes"},
		{name: "8 MB prompt over a 1 MiB body limit (streamed)", configure: bodyLimit(oneMiB), request: streamed(edit(img, eightMB)),
			status: 413, param: "prompt", message: `field "prompt" is over the limit of 32000 bytes`},
		{name: "2 KB model name", request: raw(multipartCT, rawMultipart(field("prompt", "invert"),
			field("model", strings.Repeat("m", 2000)), file("image", img, "image/png"))),
			status: 413, param: "model", message: `field "model" is over the limit of 1024 bytes`},
		{name: "1 KB model name that is not served", request: raw(multipartCT, rawMultipart(field("prompt", "invert"),
			field("model", strings.Repeat("m", 1000)), file("image", img, "image/png"))),
			status: 400, param: "model", message: `model "` + strings.Repeat("m", 64) + `"... (1000 bytes) is not served here`},
		{name: "5000 unknown fields", request: manyFields(5000, func(i int) string { return fmt.Sprintf("field%d", i) }),
			status: 400, param: "field0", message: `unknown field "field0"`},
		{name: "5000 copies of seed", request: manyFields(5000, func(int) string { return "seed" }),
			status: 400, param: "seed", message: `field "seed" given more than once`},
		{name: "5000 parts with no name", request: raw(multipartCT, rawMultipart(slices.Repeat([]rawPart{{value: []byte("x")}}, 5000)...)),
			status: 400, message: `unknown field ""`},
		{name: "2000-byte field name", request: edit(img, "invert", field(strings.Repeat("n", 2000), "x")),
			status: 400, param: strings.Repeat("n", 64), message: `unknown field "` + strings.Repeat("n", 64) + `"... (2000 bytes)`},
		{name: "1 MiB field name", request: edit(img, "invert", field(strings.Repeat("n", oneMiB), "x")),
			status: 400, param: strings.Repeat("n", 64), message: "unknown field", headerBytes: oneMiB},
		{name: "a part with 20000 header lines", request: raw(multipartCT, manyHeaders(20000)),
			status: 400, message: "read multipart body"},
		{name: "NUL and invalid UTF-8 in the prompt", request: edit(img, "\x00\xff\xfe invert \xc3"),
			status: 200, inputPixels: 64, outputPixels: 64},
		{name: "size 8193x1", request: edit(img, "invert", field("size", "8193x1")),
			status: 400, param: "size", message: "want WxH"},
		{name: "seed 2^64", request: edit(img, "invert", field("seed", "18446744073709551616")),
			status: 400, param: "seed", message: "0..9223372036854775807"},
		{name: "num_inference_steps of 1000 digits", request: edit(img, "invert", field("num_inference_steps", strings.Repeat("9", 1000))),
			status: 400, param: "num_inference_steps", message: "1..100"},
		{name: "guidance_scale 1e309", request: edit(img, "invert", field("guidance_scale", "1e309")),
			status: 400, param: "guidance_scale", message: "(0, 3]"},
		{name: "10 KB X-Request-ID", request: withHeader(edit(img, "invert"), RequestIDHeader, strings.Repeat("i", 10<<10)),
			status: 200, inputPixels: 64, outputPixels: 64},
	}
}

// truncate drops the last n bytes of data.
func truncate(data []byte, n int) []byte { return data[:len(data)-n] }

// raceBuild says whether the test binary was built with -race.
func raceBuild() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, setting := range info.Settings {
		if setting.Key == "-race" {
			return setting.Value == "true"
		}
	}
	return false
}

func bodyLimit(n int) func(*Config) { return func(c *Config) { c.MaxBodyBytes = int64(n) } }

func raw(contentType string, body []byte) func(*testing.T) *http.Request {
	return func(*testing.T) *http.Request {
		req := httptest.NewRequest(http.MethodPost, EditRoute, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		return req
	}
}

// streamed hides the body's length, so only the read bound can stop it.
func streamed(build func(*testing.T) *http.Request) func(*testing.T) *http.Request {
	return func(t *testing.T) *http.Request {
		req := build(t)
		req.Body = io.NopCloser(io.MultiReader(req.Body))
		req.ContentLength = -1
		return req
	}
}

func withHeader(build func(*testing.T) *http.Request, key, value string) func(*testing.T) *http.Request {
	return func(t *testing.T) *http.Request {
		req := build(t)
		req.Header.Set(key, value)
		return req
	}
}

// noise is n deterministic pseudo-random bytes.
func noise(n int) []byte {
	out := make([]byte, n)
	var z uint32 = 7
	for i := range out {
		z = z*1664525 + 1013904223
		out[i] = byte(z >> 24)
	}
	return out
}

// nestedMultipart is a multipart body of its own (boundary "inner") holding data.
func nestedMultipart(data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("--inner\r\nContent-Type: image/png\r\n\r\n")
	b.Write(data)
	b.WriteString("\r\n--inner--\r\n")
	return b.Bytes()
}

// manyHeaders is a form whose first part carries n header lines.
func manyHeaders(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"prompt\"\r\n", fuzzBoundary)
	for i := range n {
		fmt.Fprintf(&b, "X-H%d: v\r\n", i)
	}
	fmt.Fprintf(&b, "\r\ninvert\r\n--%s--\r\n", fuzzBoundary)
	return b.Bytes()
}

// noisePNG is a w x h RGB PNG of noise: it does not compress.
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	copy(img.Pix, noise(len(img.Pix)))
	for i := 3; i < len(img.Pix); i += 4 {
		img.Pix[i] = 0xff
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// flatPNG16 is a w x h 16-bit RGBA PNG of one colour: it compresses about 1000:1.
func flatPNG16(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA64(image.Rect(0, 0, w, h))
	img.SetNRGBA64(0, 0, color.NRGBA64{R: 0x1234, G: 0x8000, B: 0xfedc, A: 0xffff})
	for i := 8; i < len(img.Pix); i *= 2 {
		copy(img.Pix[i:], img.Pix[:i])
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// pngWithIDAT replaces the compressed pixels of a PNG with data, under a correct CRC,
// so the decoder gets as far as inflating them.
func pngWithIDAT(p, data []byte) []byte {
	out := bytes.Clone(p[:33]) // signature and IHDR
	chunk := append([]byte("IDAT"), data...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
	out = append(out, chunk...)
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(chunk))
	return append(out, 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82)
}

// jpegWithSize rewrites the dimensions in a baseline JPEG's SOF0 segment, leaving the
// scan data for the old size: a header-only bomb.
func jpegWithSize(data []byte, w, h uint16) []byte {
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte{0xff, 0xc0})
	if i < 0 || i+9 > len(out) {
		panic("jpegWithSize: no SOF0 segment")
	}
	// SOF0: marker, length (2), precision (1), height (2), width (2).
	out[i+5], out[i+6] = byte(h>>8), byte(h)
	out[i+7], out[i+8] = byte(w>>8), byte(w)
	return out
}

// bombHeader: a 100000x100000 header is refused from its 33 bytes, the 10^10 pixels
// (40 GB as 8-bit RGBA) never allocated.
func bombHeader(t *testing.T, g *siege) {
	logs := &syncBuffer{}
	s, _ := newTestServer(t, func(c *Config) { c.Records = nil; c.Log = log.New(logs, "", 0) })
	body, ct := multipartBody(t, standardParts(pngHeader(100000, 100000), "invert")...)
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, EditRoute, bytes.NewReader(body.Bytes()))
		req.Header.Set("Content-Type", ct)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		g.observe("bomb header", rr.Code, checkEditAnswer(rr, 2048*2048))
		return rr
	}
	require.Equal(t, http.StatusRequestEntityTooLarge, send().Code)
	var before, after runtime.MemStats
	const runs = 20
	runtime.GC()
	runtime.ReadMemStats(&before)
	allocs := testing.AllocsPerRun(runs, func() { send() })
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / (runs + 1) // AllocsPerRun adds a warm-up run
	t.Logf("100000x100000 header: %.0f allocations, %d bytes per request (body %d bytes)", allocs, perRequest, body.Len())
	assert.Less(t, allocs, 500.0)
	assert.Less(t, perRequest, uint64(128<<10))
	g.countPanics("bomb header", logs)
}
