package judge

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	xdraw "golang.org/x/image/draw"

	"qualkit/internal/schema"
)

// The content gates' thresholds (docs/gates.md "Gates and their thresholds").
const (
	// ChangeLevels: an output pixel counts as changed when one of its channels is more
	// than this many 8-bit levels away from the input resized to the output's size
	// (bilinear), so re-encoding noise and a resize with another kernel do not count.
	ChangeLevels = 8
	// MinChangedFraction of the output's pixels must have changed: the reference row's
	// requests change 29.8 % (checker, blur) to 100 %, a resize-only "model" at most
	// 10.5 % (nearest neighbour, rings), the H200 smoke row's random weights 99.98 %.
	MinChangedFraction = 0.15
	// MinInfluenceFraction of the pixels, and MinInfluenceMeanLevels of mean absolute
	// difference, must separate the outputs of two reference images: a tenth of the
	// weakest influence seen (the H200 smoke row's random weights: 96.8 %, 0.80 levels;
	// the reference row: 99.6 %, 49.4 levels).
	MinInfluenceFraction   = 0.10
	MinInfluenceMeanLevels = 0.08
)

// ChangedFraction is the fraction of out's pixels more than ChangeLevels from in resized.
func ChangedFraction(in, out image.Image) float64 {
	o := ToNRGBA(out)
	w, h := o.Rect.Dx(), o.Rect.Dy()
	if w*h == 0 {
		return 0
	}
	ref := image.NewNRGBA(image.Rect(0, 0, w, h))
	xdraw.BiLinear.Scale(ref, ref.Rect, in, in.Bounds(), xdraw.Src, nil)
	n := 0
	for i := 0; i < len(ref.Pix); i += 4 {
		for c := range 3 {
			if d := int(ref.Pix[i+c]) - int(o.Pix[i+c]); d > ChangeLevels || d < -ChangeLevels {
				n++
				break
			}
		}
	}
	return float64(n) / float64(w*h)
}

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// DecodePNG decodes a PNG (no other format) at its own depth.
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
	d := Compare8(a, b)
	if !d.SameSize || !deep(a) && !deep(b) {
		return d
	}
	ba, bb := a.Bounds(), b.Bounds()
	n, fx, fy := 0, -1, -1
	for y := range ba.Dy() {
		for x := range ba.Dx() {
			if color.NRGBA64Model.Convert(a.At(ba.Min.X+x, ba.Min.Y+y)) != color.NRGBA64Model.Convert(b.At(bb.Min.X+x, bb.Min.Y+y)) {
				if n == 0 {
					fx, fy = x, y
				}
				n++
			}
		}
	}
	if n > d.DifferingPixel {
		if d.DifferingPixel == 0 {
			d.FirstX, d.FirstY = fx, fy
		}
		d.DifferingPixel = n
	}
	return d
}

// Compare8 compares a and b channel by channel as 8-bit non-premultiplied RGBA.
func Compare8(a, b image.Image) schema.PixelDiff {
	if a.Bounds().Size() != b.Bounds().Size() {
		return schema.PixelDiff{}
	}
	pa, pb := ToNRGBA(a), ToNRGBA(b)
	w, h := pa.Rect.Dx(), pa.Rect.Dy()
	d := schema.PixelDiff{SameSize: true, Pixels: w * h, FirstX: -1, FirstY: -1}
	var sum int64
	for y := range h {
		ra := pa.Pix[y*pa.Stride : y*pa.Stride+4*w]
		rb := pb.Pix[y*pb.Stride : y*pb.Stride+4*w]
		if bytes.Equal(ra, rb) {
			continue
		}
		for x := range w {
			differs := false
			for c := range 4 {
				v := int(ra[4*x+c]) - int(rb[4*x+c])
				if v < 0 {
					v = -v
				}
				if v > 0 {
					differs = true
					sum += int64(v)
					d.MaxAbs = max(d.MaxAbs, v)
				}
			}
			if differs {
				if d.DifferingPixel == 0 {
					d.FirstX, d.FirstY = x, y
					copy(d.FirstA[:], ra[4*x:4*x+4])
					copy(d.FirstB[:], rb[4*x:4*x+4])
				}
				d.DifferingPixel++
			}
		}
	}
	if w*h > 0 {
		d.MeanAbs = float64(sum) / float64(4*w*h)
	}
	return d
}

func deep(img image.Image) bool {
	switch img.ColorModel() {
	case color.RGBA64Model, color.NRGBA64Model, color.Gray16Model:
		return true
	}
	return false
}

func IsConstant(img image.Image) bool {
	p := ToNRGBA(img)
	w, h := p.Rect.Dx(), p.Rect.Dy()
	if w*h == 0 {
		return true
	}
	first := p.Pix[0:4]
	for y := range h {
		row := p.Pix[y*p.Stride : y*p.Stride+4*w]
		for x := range w {
			if !bytes.Equal(row[4*x:4*x+4], first) {
				return false
			}
		}
	}
	return true
}

// ToNRGBA is the 8-bit non-premultiplied form every comparison uses, its origin at (0,0).
func ToNRGBA(img image.Image) *image.NRGBA {
	switch m := img.(type) {
	case *image.NRGBA:
		if m.Rect.Min == (image.Point{}) {
			return m
		}
	case *image.RGBA:
		if out, ok := opaqueToNRGBA(m); ok {
			return out
		}
	}
	b := img.Bounds()
	out := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(out, out.Rect, img, b.Min, draw.Src)
	return out
}

// opaqueToNRGBA copies an RGBA image whose every alpha is 0xff (an 8-bit RGB PNG decodes
// so): its bytes are the NRGBA bytes. draw.Draw has no fast path into NRGBA and took
// most of the checker's time. ok is false at the first pixel that is not opaque.
func opaqueToNRGBA(m *image.RGBA) (out *image.NRGBA, ok bool) {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out = image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for i := 3; i < len(row); i += 4 {
			if row[i] != 0xff {
				return nil, false
			}
		}
		copy(out.Pix[y*out.Stride:], row)
	}
	return out, true
}

func ImageSize(img image.Image) string {
	return fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy())
}
