package harness

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"

	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// ResponsePNG extracts the edited image from an OpenAI-style images response body.
// AIPerf counts any 2xx JSON object as a success, so the harness checks content itself.
func ResponsePNG(body []byte) ([]byte, error) {
	return wire.OpenAI{}.Output(body, "", nil)
}

// DecodePNG decodes bytes that must be a PNG (not merely any image format).
func DecodePNG(b []byte) (image.Image, error) {
	if !bytes.HasPrefix(b, pngSignature) {
		kind := "unknown bytes"
		if len(b) >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF {
			kind = "a JPEG"
		}
		return nil, fmt.Errorf("output is not a PNG (%s, %d bytes)", kind, len(b))
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("output PNG does not decode: %w", err)
	}
	return img, nil
}

// ComparePixels compares a and b as 8-bit non-premultiplied RGBA, and at their full
// depth when either is a 16-bit image: pixels that differ only below 8 bits count as
// differing (MaxAbs, in 8-bit levels, may then be 0).
func ComparePixels(a, b image.Image) schema.PixelDiff {
	d := compare8(a, b)
	if d.SameSize && (deep(a) || deep(b)) {
		if n, x, y := deepDiff(a, b); n > d.DifferingPixel {
			if d.DifferingPixel == 0 {
				d.FirstX, d.FirstY = x, y
			}
			d.DifferingPixel = n
		}
	}
	return d
}

func compare8(a, b image.Image) schema.PixelDiff {
	if a.Bounds().Size() != b.Bounds().Size() {
		return schema.PixelDiff{}
	}
	pa, pb := toNRGBA(a), toNRGBA(b)
	w := pa.Rect.Dx()
	d := schema.PixelDiff{SameSize: true, Pixels: w * pa.Rect.Dy(), FirstX: -1, FirstY: -1}
	var sum int64
	for y := 0; y < pa.Rect.Dy(); y++ {
		ra := pa.Pix[y*pa.Stride : y*pa.Stride+4*w]
		rb := pb.Pix[y*pb.Stride : y*pb.Stride+4*w]
		if bytes.Equal(ra, rb) {
			continue
		}
		for x := 0; x < w; x++ {
			pixDiff := false
			for c := 0; c < 4; c++ {
				v := int(ra[4*x+c]) - int(rb[4*x+c])
				if v < 0 {
					v = -v
				}
				if v > 0 {
					pixDiff = true
					sum += int64(v)
					d.MaxAbs = max(d.MaxAbs, v)
				}
			}
			if pixDiff {
				if d.DifferingPixel == 0 {
					d.FirstX, d.FirstY = x, y
					copy(d.FirstA[:], ra[4*x:4*x+4])
					copy(d.FirstB[:], rb[4*x:4*x+4])
				}
				d.DifferingPixel++
			}
		}
	}
	d.MeanAbs = float64(sum) / float64(4*w*pa.Rect.Dy())
	return d
}

// IsConstant reports whether every pixel of img has the same colour.
func IsConstant(img image.Image) bool {
	p := toNRGBA(img)
	w := p.Rect.Dx()
	first := p.Pix[0:4]
	for y := 0; y < p.Rect.Dy(); y++ {
		row := p.Pix[y*p.Stride : y*p.Stride+4*w]
		for x := 0; x < w; x++ {
			if !bytes.Equal(row[4*x:4*x+4], first) {
				return false
			}
		}
	}
	return true
}

func toNRGBA(img image.Image) *image.NRGBA {
	switch m := img.(type) {
	case *image.NRGBA:
		return m
	case *image.RGBA:
		if opaque(m) {
			// Opaque RGBA is byte-identical to NRGBA: skip the per-pixel conversion.
			return &image.NRGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
		}
	}
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}

func opaque(m *image.RGBA) bool {
	for i := 3; i < len(m.Pix); i += 4 {
		if m.Pix[i] != 0xff {
			return false
		}
	}
	return true
}

// ImageSize returns the "WxH" of an image.
func ImageSize(img image.Image) string {
	return fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy())
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
