package judge

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
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

// Two 16-bit images that differ only below 8 bits: equal at 8 bits, not equal in full.
func TestComparePixelsAtFullDepth(t *testing.T) {
	a := image.NewNRGBA64(image.Rect(0, 0, 4, 3))
	b := image.NewNRGBA64(image.Rect(0, 0, 4, 3))
	for y := 0; y < 3; y++ {
		for x := 0; x < 4; x++ {
			c := color.NRGBA64{R: 0x1200, G: 0x3400, B: 0x5600, A: 0xffff}
			a.SetNRGBA64(x, y, c)
			b.SetNRGBA64(x, y, c)
		}
	}
	assert.Zero(t, ComparePixels(a, b).DifferingPixel)
	b.SetNRGBA64(2, 1, color.NRGBA64{R: 0x1201, G: 0x3400, B: 0x5600, A: 0xffff})
	assert.Equal(t, ToNRGBA(a).Pix, ToNRGBA(b).Pix, "8 bits cannot see it")
	d := ComparePixels(a, b)
	assert.Equal(t, 1, d.DifferingPixel)
	assert.Equal(t, [2]int{2, 1}, [2]int{d.FirstX, d.FirstY})

	// An 8-bit image and its 16-bit widening (v*257) are the same pixels.
	c8 := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	c8.SetNRGBA(0, 0, color.NRGBA{R: 0x12, G: 0x34, B: 0x56, A: 0xff})
	c16 := image.NewNRGBA64(image.Rect(0, 0, 1, 1))
	c16.SetNRGBA64(0, 0, color.NRGBA64{R: 0x1212, G: 0x3434, B: 0x5656, A: 0xffff})
	assert.Zero(t, ComparePixels(c8, c16).DifferingPixel)
}

// toNRGBA's copy of an opaque RGBA image is what draw.Draw makes of it, sub-images
// included; an image with one pixel not opaque takes draw.Draw's path.
func TestToNRGBAIsDrawsConversion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	full := image.NewRGBA(image.Rect(0, 0, 37, 23))
	for i := range full.Pix {
		full.Pix[i] = byte(r.UintN(256))
		if i%4 == 3 {
			full.Pix[i] = 0xff
		}
	}
	withAlpha := image.NewRGBA(full.Rect)
	copy(withAlpha.Pix, full.Pix)
	withAlpha.Pix[4*40+3] = 0x80 // premultiplied: colour bytes above alpha are clamped by the model
	for name, img := range map[string]*image.RGBA{
		"opaque":     full,
		"sub-image":  full.SubImage(image.Rect(5, 3, 30, 20)).(*image.RGBA),
		"not opaque": withAlpha,
	} {
		b := img.Bounds()
		want := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(want, want.Rect, img, b.Min, draw.Src)
		got := ToNRGBA(img)
		require.Equal(t, want.Rect, got.Rect, name)
		assert.Equal(t, want.Pix, got.Pix, name)
	}
	_, ok := opaqueToNRGBA(withAlpha)
	assert.False(t, ok, "a pixel with alpha 0x80 is not opaque")
}
