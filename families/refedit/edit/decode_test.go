package edit

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeRejectsBombHeaderBeforeDecoding(t *testing.T) {
	bomb := pngHeaderOnly(100000, 100000)
	require.Less(t, len(bomb), 64)
	allocs := testing.AllocsPerRun(1, func() {
		_, err := decode(bomb, 2048*2048)
		require.ErrorIs(t, err, ErrTooLarge)
	})
	assert.Less(t, allocs, 100.0, "rejected from the header, nothing of 10^10 pixels allocated")
	_, err := decode(bomb, 2048*2048)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "image", ie.Param)
	assert.Contains(t, err.Error(), "100000x100000 is 10000000000 pixels, over the limit of 4194304")
}

func TestDecodeLimitIsInclusive(t *testing.T) {
	data := gradientPNG(t, 4, 4)
	_, err := decode(data, 16)
	require.NoError(t, err)
	_, err = decode(data, 15)
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestDecodeBadBytesAreErrorsNotPanics(t *testing.T) {
	good := gradientPNG(t, 8, 8)
	cases := map[string][]byte{
		"empty":               nil,
		"text":                []byte("hello, not an image"),
		"gif":                 []byte("GIF89a\x01\x00\x01\x00"),
		"signature only":      []byte(pngMagic),
		"truncated header":    good[:20],
		"truncated pixels":    good[:len(good)-20],
		"zero size":           pngHeaderOnly(0, 5),
		"header, no pixels":   pngHeaderOnly(8, 8),
		"corrupt data":        corrupt(good),
		"truncated JPEG":      jpegOf(t)[:40],
		"JPEG magic, no rest": []byte(jpegMagic),
		"WebP magic, no rest": []byte("RIFF\x04\x00\x00\x00WEBP"),
		"truncated WebP":      testWebP(t, "lossless")[:30],
		"RIFF, not WebP":      []byte("RIFF\x04\x00\x00\x00WAVEfmt "),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = decode(data, 1<<22) })
			require.ErrorIs(t, err, ErrInvalid)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, "image", ie.Param)
		})
	}
}

func TestDecodeColourModels(t *testing.T) {
	// Alpha is dropped, never composited: a transparent NRGBA pixel keeps its colour.
	nrgba := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	nrgba.SetNRGBA(0, 0, color.NRGBA{200, 100, 50, 0})
	nrgba.SetNRGBA(1, 0, color.NRGBA{10, 20, 30, 128})
	r, err := decode(encodeTestPNG(t, nrgba), 100)
	require.NoError(t, err)
	assert.Equal(t, []float32{200.0 / 255, 100.0 / 255, 50.0 / 255, 10.0 / 255, 20.0 / 255, 30.0 / 255}, r.pix)

	// 16-bit samples keep their high byte.
	deep := image.NewNRGBA64(image.Rect(0, 0, 1, 1))
	deep.SetNRGBA64(0, 0, color.NRGBA64{0x12ff, 0xab00, 0x0101, 0x8000})
	r, err = decode(encodeTestPNG(t, deep), 100)
	require.NoError(t, err)
	assert.Equal(t, []float32{0x12 / 255.0, 0xab / 255.0, 0x01 / 255.0}, r.pix)

	gray16 := image.NewGray16(image.Rect(0, 0, 1, 1))
	gray16.SetGray16(0, 0, color.Gray16{Y: 0x80ff})
	r, err = decode(encodeTestPNG(t, gray16), 100)
	require.NoError(t, err)
	assert.Equal(t, []float32{0x80 / 255.0, 0x80 / 255.0, 0x80 / 255.0}, r.pix)

	pal := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.RGBA{1, 2, 3, 255}, color.NRGBA{40, 50, 60, 0}})
	pal.SetColorIndex(1, 0, 1)
	r, err = decode(encodeTestPNG(t, pal), 100)
	require.NoError(t, err)
	assert.Equal(t, []float32{1 / 255.0, 2 / 255.0, 3 / 255.0, 40 / 255.0, 50 / 255.0, 60 / 255.0}, r.pix)
}

func TestDecodeJPEG(t *testing.T) {
	r, err := decode(jpegOf(t), 1<<20)
	require.NoError(t, err)
	assert.Equal(t, 16, r.w)
	assert.Equal(t, 8, r.h)
	// A flat mid-grey survives JPEG within a level or two.
	assert.InDelta(t, 128.0/255, r.pix[0], 3.0/255)
}

// WebP, as OpenAI's images.edit takes: lossless decodes to exactly the pixels it was
// made from, lossy within a few levels, and the pixel limit is read from its header.
func TestDecodeWebP(t *testing.T) {
	want, err := decode(gradientPNG(t, 16, 8), 1<<20)
	require.NoError(t, err)
	got, err := decode(testWebP(t, "lossless"), 1<<20)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	lossy, err := decode(testWebP(t, "lossy"), 1<<20)
	require.NoError(t, err)
	require.Equal(t, [2]int{16, 8}, [2]int{lossy.w, lossy.h})
	worst := 0.0
	for i := range want.pix {
		worst = max(worst, math.Abs(float64(want.pix[i]-lossy.pix[i])))
	}
	assert.Less(t, worst*255, 40.0, "lossy WebP of quality 90 keeps the gradient")

	_, err = decode(testWebP(t, "lossless"), 16*8-1)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "16x8 is 128 pixels, over the limit of 127")
}

func jpegOf(t *testing.T) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 16, 8))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}))
	return buf.Bytes()
}

// corrupt flips bytes in the middle of a PNG's compressed data.
func corrupt(data []byte) []byte {
	c := append([]byte{}, data...)
	for i := len(c) / 2; i < len(c)/2+8; i++ {
		c[i] ^= 0xff
	}
	return c
}
