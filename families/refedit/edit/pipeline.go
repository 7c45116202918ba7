package edit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/webp"
)

// Result is one applied edit.
type Result struct {
	PNG          []byte
	OutputSHA256 string
	Settings     Effective
}

// Effective are the settings an edit actually ran with: what every response reports
// so that no reader has to guess a default.
type Effective struct {
	Edit string `json:"edit"`
	Settings
	Precision string `json:"precision"`
}

// Apply runs the whole pipeline on encoded image bytes: decode (header-first pixel
// limit), resize, edit, guidance blend, quantize, PNG encode. e comes from Match and
// s from ParseSettings on the same Program. Input errors are *InputError.
func (p *Program) Apply(image []byte, e *Edit, s Settings) (Result, error) {
	if e == nil {
		return Result{}, invalid("prompt", "no edit chosen")
	}
	if err := s.check(p.limits); err != nil {
		return Result{}, err
	}
	src, err := decode(image, p.limits.MaxPixels)
	if err != nil {
		return Result{}, err
	}
	if s.Width == 0 || s.Height == 0 {
		// The input's size must be one this program could have been asked for: its
		// pixels are within the limit (decode checked), its sides may not be.
		if err := checkSize(src.w, src.h, p.limits); err != nil {
			return Result{}, invalid(FieldSize, "auto (the input's size, also when no size is given and the bundle has no default) is %dx%d: %v; give size=WxH", src.w, src.h, err)
		}
		s.Width, s.Height = src.w, src.h
	}
	base := resize(src, s.Width, s.Height)
	edited := e.op.apply(base, s)
	blend(base, edited, float32(s.GuidanceScale))
	// BestSpeed keeps encoding cheap next to the edit; the bytes depend only on the pixels
	// and the Go release (colour type 2: the encoder sees an opaque RGBA image).
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, quantize(edited)); err != nil {
		return Result{}, fmt.Errorf("encode PNG: %w", err)
	}
	data := buf.Bytes()
	return Result{
		PNG:          data,
		OutputSHA256: SHA256(data),
		Settings:     Effective{Edit: e.Name, Settings: s, Precision: Precision},
	}, nil
}

// blend is the guidance step out = B + g*(E - B), written into edited.
func blend(base, edited *raster, g float32) {
	for i, b := range base.pix {
		edited.pix[i] = b + float32(g*(edited.pix[i]-b))
	}
}

// quantize is v8 = floor(clamp(v, 0, 1) * 255 + 0.5) into an opaque 8-bit image.
func quantize(r *raster) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, r.w, r.h))
	for k := range r.w * r.h {
		for c := range 3 {
			img.Pix[k*4+c] = quantizeSample(r.pix[k*3+c])
		}
		img.Pix[k*4+3] = 0xff
	}
	return img
}

func quantizeSample(v float32) uint8 {
	// !(v > 0) also sends a NaN to 0 rather than to an undefined conversion.
	if !(v > 0) {
		v = 0
	} else if v > 1 {
		v = 1
	}
	// The value is in [0.5, 255.5], so the conversion's truncation is the floor.
	return uint8(float32(v*255) + 0.5)
}

// Magic numbers of the accepted formats (those OpenAI's images.edit takes). The format
// is picked by these, not by the image package's global registry, so only PNG, JPEG and
// WebP are ever decoded. A WebP file is RIFF, its length, then WEBP.
const (
	pngMagic  = "\x89PNG\r\n\x1a\n"
	jpegMagic = "\xff\xd8\xff"
	riffMagic = "RIFF"
	webpMagic = "WEBP"
)

func isWebP(data []byte) bool {
	return len(data) >= 12 && string(data[:4]) == riffMagic && string(data[8:12]) == webpMagic
}

// decode reads a PNG, JPEG or WebP into a raster of v/255 samples. The header is read first
// and an image over maxPixels is rejected before a single pixel is decoded (the
// decoders allocate the whole image up front, so a 100000x100000 header would
// otherwise be a decompression bomb).
func decode(data []byte, maxPixels int) (*raster, error) {
	var format string
	var readConfig func(io.Reader) (image.Config, error)
	var readImage func(io.Reader) (image.Image, error)
	switch {
	case bytes.HasPrefix(data, []byte(pngMagic)):
		format, readConfig, readImage = "PNG", png.DecodeConfig, png.Decode
	case bytes.HasPrefix(data, []byte(jpegMagic)):
		format, readConfig, readImage = "JPEG", jpeg.DecodeConfig, jpeg.Decode
	case isWebP(data):
		format, readConfig, readImage = "WebP", webp.DecodeConfig, webp.Decode
	case len(data) == 0:
		return nil, invalid("image", "empty file")
	default:
		return nil, invalid("image", "not a PNG, JPEG or WebP file")
	}
	cfg, err := readConfig(bytes.NewReader(data))
	if err != nil {
		// Go's PNG decoder refuses a header whose width*height overflows an int before
		// saying how big it is; such a header is over any pixel limit (413, not 400).
		if w, h, ok := pngHeaderSize(data); ok && w*h > int64(maxPixels) {
			return nil, tooLarge("image", "%dx%d is %d pixels, over the limit of %d", w, h, w*h, maxPixels)
		}
		return nil, invalid("image", "read %s header: %v", format, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 {
		return nil, invalid("image", "%s header says %dx%d", format, cfg.Width, cfg.Height)
	}
	if n := int64(cfg.Width) * int64(cfg.Height); n > int64(maxPixels) {
		return nil, tooLarge("image", "%dx%d is %d pixels, over the limit of %d", cfg.Width, cfg.Height, n, maxPixels)
	}
	img, err := readImage(bytes.NewReader(data))
	if err != nil {
		return nil, invalid("image", "decode %s: %v", format, err)
	}
	return toRaster(img), nil
}

// pngHeaderSize reads the width and height of a PNG's IHDR chunk, valid when both are
// in 1..2^31-1 as the PNG specification allows.
func pngHeaderSize(data []byte) (w, h int64, ok bool) {
	const ihdr = len(pngMagic) + 8 // length and type of the first chunk
	if len(data) < ihdr+8 || string(data[ihdr-4:ihdr]) != "IHDR" {
		return 0, 0, false
	}
	w, h = int64(binary.BigEndian.Uint32(data[ihdr:])), int64(binary.BigEndian.Uint32(data[ihdr+4:]))
	const most = 1<<31 - 1
	return w, h, w >= 1 && h >= 1 && w <= most && h <= most
}

// toRaster keeps the 8-bit non-premultiplied colour of every pixel and drops alpha
// (never composited); 16-bit samples keep their high byte. The common 8-bit decoder
// outputs, and NRGBA64 (exact where alpha < 1), read their samples directly; anything
// else goes through color.NRGBAModel, which keeps the high byte of opaque samples.
func toRaster(img image.Image) *raster {
	b := img.Bounds()
	r := newRaster(b.Dx(), b.Dy())
	set := func(x, y int, red, green, blue uint8) {
		i := r.offset(x, y)
		r.pix[i] = float32(red) / 255
		r.pix[i+1] = float32(green) / 255
		r.pix[i+2] = float32(blue) / 255
	}
	for y := range r.h {
		for x := range r.w {
			px, py := b.Min.X+x, b.Min.Y+y
			switch m := img.(type) {
			case *image.NRGBA:
				s := m.Pix[m.PixOffset(px, py):]
				set(x, y, s[0], s[1], s[2])
			case *image.NRGBA64:
				s := m.Pix[m.PixOffset(px, py):]
				set(x, y, s[0], s[2], s[4])
			case *image.RGBA:
				if s := m.Pix[m.PixOffset(px, py):]; s[3] == 0xff {
					set(x, y, s[0], s[1], s[2])
					continue
				}
				c := nrgba(m.At(px, py))
				set(x, y, c.R, c.G, c.B)
			case *image.Gray:
				v := m.Pix[m.PixOffset(px, py)]
				set(x, y, v, v, v)
			case *image.YCbCr:
				c := nrgba(m.YCbCrAt(px, py))
				set(x, y, c.R, c.G, c.B)
			default:
				c := nrgba(img.At(px, py))
				set(x, y, c.R, c.G, c.B)
			}
		}
	}
	return r
}

func nrgba(c color.Color) color.NRGBA {
	return color.NRGBAModel.Convert(c).(color.NRGBA)
}
