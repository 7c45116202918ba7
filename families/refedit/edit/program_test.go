package edit

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"
)

// builtinProgram loads the bundle the builder writes with its built-in defaults.
func builtinProgram(t testing.TB) *Program {
	t.Helper()
	return programFrom(t, Build(BuiltinDefaults()))
}

func programFrom(t testing.TB, b Bundle) *Program {
	t.Helper()
	data, err := b.Encode()
	require.NoError(t, err)
	p, err := Parse(data)
	require.NoError(t, err)
	return p
}

// rasterOf builds a raster from RGB triples, row-major.
func rasterOf(w, h int, rgb ...float32) *raster {
	r := newRaster(w, h)
	copy(r.pix, rgb)
	return r
}

// grayRaster builds a raster whose three channels are all v[i] at pixel i.
func grayRaster(w, h int, v ...float32) *raster {
	r := newRaster(w, h)
	for i, x := range v {
		r.pix[i*3], r.pix[i*3+1], r.pix[i*3+2] = x, x, x
	}
	return r
}

// channel returns channel c of every pixel.
func channel(r *raster, c int) []float32 {
	out := make([]float32, r.w*r.h)
	for i := range out {
		out[i] = r.pix[i*3+c]
	}
	return out
}

// encodeTestPNG encodes img with the standard encoder.
func encodeTestPNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// gradientPNG is a w x h opaque RGB PNG whose pixels differ from each other.
func gradientPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 7), uint8(y * 13), uint8((x*y + 31) % 256), 0xff})
		}
	}
	return encodeTestPNG(t, img)
}

// photoPNG is a w x h opaque RGB PNG that compresses like a photograph: smooth
// gradients with a little deterministic noise, so the benchmarks see realistic sizes.
func photoPNG(t testing.TB, w, h int) []byte {
	t.Helper()
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
	return encodeTestPNG(t, img)
}

// pngHeaderOnly is a PNG signature and an IHDR chunk (8-bit RGB) declaring w x h, with
// a correct CRC and no pixel data.
func pngHeaderOnly(w, h uint32) []byte {
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2
	var buf bytes.Buffer
	buf.WriteString(pngMagic)
	_ = binary.Write(&buf, binary.BigEndian, uint32(len(ihdr)))
	chunk := append([]byte("IHDR"), ihdr[:]...)
	buf.Write(chunk)
	_ = binary.Write(&buf, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return buf.Bytes()
}

func decodePNG(t testing.TB, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	return img
}
