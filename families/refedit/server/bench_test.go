package server

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// photoPNG compresses like a photograph: smooth gradients with a little noise.
func photoPNG(b *testing.B, w, h int) []byte {
	b.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	var z uint32 = 1
	for y := range h {
		for x := range w {
			z = z*1664525 + 1013904223
			n := int(z>>28) - 8
			img.SetRGBA(x, y, color.RGBA{
				uint8(min(max(x*255/w+n, 0), 255)),
				uint8(min(max(y*255/h+n, 0), 255)),
				uint8(min(max((x+y)*127/(w+h)+64+n, 0), 255)),
				0xff,
			})
		}
	}
	var buf bytes.Buffer
	require.NoError(b, png.Encode(&buf, img))
	return buf.Bytes()
}

// BenchmarkEditHandler1024 is the whole edit handler at 1024x1024 on the body AIPerf
// sends (multipart with the standard fields and the extra inputs); MB/s is request
// body bytes.
func BenchmarkEditHandler1024(b *testing.B) {
	s, _ := newTestServer(b, func(c *Config) { c.Records = nil })
	img := photoPNG(b, 1024, 1024)
	body, ct := multipartBody(b, standardParts(img, "Make it black and white",
		part{name: "size", value: "1024x1024"}, part{name: "seed", value: "42"},
		part{name: "num_inference_steps", value: "4"}, part{name: "guidance_scale", value: "1.0"})...)
	raw := body.Bytes()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, EditRoute, bytes.NewReader(raw))
		req.Header.Set("Content-Type", ct)
		rr := httptest.NewRecorder()
		s.ServeHTTP(rr, req)
		if rr.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rr.Code, rr.Body.String())
		}
	}
}
