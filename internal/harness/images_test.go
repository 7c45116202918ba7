package harness

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/wire"
)

func gradient(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 7), uint8(y * 5), uint8(x ^ y), 255})
		}
	}
	return img
}

func encodePNG(t testing.TB, img image.Image) []byte {
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func TestResponsePNG(t *testing.T) {
	p := encodePNG(t, gradient(2, 2))
	body := `{"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(p) + `"}]}`
	got, err := wire.OpenAI{}.Output([]byte(body), "", nil)
	require.NoError(t, err)
	assert.Equal(t, p, got)

	for body, want := range map[string]string{
		`{"error":{"message":"model not loaded"}}`: "carries an error and no image",
		`{"data":[]}`:                   "0 images in data",
		`{"data":[{"url":"http://x"}]}`: "no b64_json",
		`{"data":[{"b64_json":"%%%"}]}`: "not base64",
		`<html>`:                        "not a JSON object",
	} {
		_, err := wire.OpenAI{}.Output([]byte(body), "", nil)
		require.ErrorContains(t, err, want, body)
	}
}
