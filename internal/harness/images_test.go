package harness

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestComparePixels(t *testing.T) {
	a, b := gradient(8, 6), gradient(8, 6)
	assert.True(t, ComparePixels(a, b).Identical())
	b.Set(3, 2, color.RGBA{0, 0, 0, 255})
	d := ComparePixels(a, b)
	assert.False(t, d.Identical())
	assert.Equal(t, 1, d.DifferingPixel)
	assert.Equal(t, [2]int{3, 2}, [2]int{d.FirstX, d.FirstY})
	assert.Contains(t, d.String(), "first at (3,2)")
	assert.False(t, ComparePixels(a, gradient(8, 7)).SameSize)

	// The same pixels decoded through different image types still compare equal.
	dec, err := DecodePNG(encodePNG(t, a))
	require.NoError(t, err)
	assert.True(t, ComparePixels(a, dec).Identical())
}

func TestIsConstant(t *testing.T) {
	assert.False(t, IsConstant(gradient(4, 4)))
	flat := image.NewRGBA(image.Rect(0, 0, 4, 4))
	assert.True(t, IsConstant(flat))
}

func TestDecodePNGRejectsOtherFormats(t *testing.T) {
	var j bytes.Buffer
	require.NoError(t, jpeg.Encode(&j, gradient(8, 8), nil))
	_, err := DecodePNG(j.Bytes())
	require.ErrorContains(t, err, "not a PNG (a JPEG")
	_, err = DecodePNG([]byte("hello"))
	require.ErrorContains(t, err, "not a PNG (unknown bytes")
	trunc := encodePNG(t, gradient(8, 8))
	_, err = DecodePNG(trunc[:len(trunc)/2])
	require.ErrorContains(t, err, "does not decode")
}

func TestResponsePNG(t *testing.T) {
	p := encodePNG(t, gradient(2, 2))
	body := `{"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(p) + `"}]}`
	got, err := ResponsePNG([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, p, got)

	for body, want := range map[string]string{
		`{"error":{"message":"model not loaded"}}`: "carries an error and no image",
		`{"data":[]}`:                   "0 images in data",
		`{"data":[{"url":"http://x"}]}`: "no b64_json",
		`{"data":[{"b64_json":"%%%"}]}`: "not base64",
		`<html>`:                        "not a JSON object",
	} {
		_, err := ResponsePNG([]byte(body))
		require.ErrorContains(t, err, want, body)
	}
}

func BenchmarkDecodeAndComparePNG1024(b *testing.B) {
	img := gradient(1024, 1024)
	pa, pb := encodePNG(b, img), encodePNG(b, img)
	// MB/s counts decoded pixel bytes (two 1024x1024 RGBA images): the PNGs of this
	// synthetic gradient compress too well for their size to mean anything.
	b.SetBytes(2 * 4 * 1024 * 1024)
	b.ResetTimer()
	for b.Loop() {
		x, err := DecodePNG(pa)
		if err != nil {
			b.Fatal(err)
		}
		y, err := DecodePNG(pb)
		if err != nil {
			b.Fatal(err)
		}
		if !ComparePixels(x, y).Identical() {
			b.Fatal("differ")
		}
	}
}
