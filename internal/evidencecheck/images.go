package evidencecheck

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/jpeg" // a fixture may be a JPEG
	"image/png"

	xdraw "golang.org/x/image/draw"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

func decodePNG(b []byte) (*image.NRGBA, error) {
	img, err := decodeFull(b)
	if err != nil {
		return nil, err
	}
	return toNRGBA(img), nil
}

// decodeFull decodes a PNG at its own depth.
func decodeFull(b []byte) (image.Image, error) {
	if !bytes.HasPrefix(b, pngSignature) {
		return nil, errors.New("not a PNG")
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("PNG does not decode: %v", err)
	}
	return img, nil
}

// compareFull is comparePixels at the images' full depth: when either is 16-bit, pixels
// that differ only below 8 bits differ too.
func compareFull(a, b image.Image) comparison {
	d := comparePixels(toNRGBA(a), toNRGBA(b))
	if !d.sameSize || (!deep(a) && !deep(b)) {
		return d
	}
	ba, bb := a.Bounds(), b.Bounds()
	n, fx, fy := 0, -1, -1
	for y := 0; y < ba.Dy(); y++ {
		for x := 0; x < ba.Dx(); x++ {
			if color.NRGBA64Model.Convert(a.At(ba.Min.X+x, ba.Min.Y+y)) != color.NRGBA64Model.Convert(b.At(bb.Min.X+x, bb.Min.Y+y)) {
				if n == 0 {
					fx, fy = x, y
				}
				n++
			}
		}
	}
	if n > d.differing {
		if d.differing == 0 {
			d.firstX, d.firstY = fx, fy
		}
		d.differing = n
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

// toNRGBA is the 8-bit non-premultiplied form every comparison uses.
func toNRGBA(img image.Image) *image.NRGBA {
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

func sizeText(img image.Image) string {
	return fmt.Sprintf("%dx%d", img.Bounds().Dx(), img.Bounds().Dy())
}

// comparison is two decoded images compared channel by channel.
type comparison struct {
	sameSize  bool
	differing int
	maxAbs    int
	meanAbs   float64
	firstX    int
	firstY    int
}

func (d comparison) identical() bool { return d.sameSize && d.differing == 0 }

func (d comparison) String() string {
	switch {
	case !d.sameSize:
		return "sizes differ"
	case d.differing == 0:
		return "pixel-identical"
	}
	return fmt.Sprintf("%d pixel(s) differ (max %d), first at (%d,%d)", d.differing, d.maxAbs, d.firstX, d.firstY)
}

func comparePixels(a, b *image.NRGBA) comparison {
	if a.Rect.Size() != b.Rect.Size() {
		return comparison{}
	}
	d := comparison{sameSize: true, firstX: -1, firstY: -1}
	w, h := a.Rect.Dx(), a.Rect.Dy()
	var sum int64
	for y := 0; y < h; y++ {
		ra := a.Pix[y*a.Stride : y*a.Stride+4*w]
		rb := b.Pix[y*b.Stride : y*b.Stride+4*w]
		if bytes.Equal(ra, rb) {
			continue
		}
		for x := 0; x < w; x++ {
			differs := false
			for ch := 0; ch < 4; ch++ {
				v := int(ra[4*x+ch]) - int(rb[4*x+ch])
				if v < 0 {
					v = -v
				}
				if v > 0 {
					differs = true
					sum += int64(v)
					d.maxAbs = max(d.maxAbs, v)
				}
			}
			if differs {
				if d.differing == 0 {
					d.firstX, d.firstY = x, y
				}
				d.differing++
			}
		}
	}
	if w*h > 0 {
		d.meanAbs = float64(sum) / float64(4*w*h)
	}
	return d
}

func isConstant(img *image.NRGBA) bool {
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if w*h == 0 {
		return true
	}
	first := img.Pix[0:4]
	for y := 0; y < h; y++ {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := 0; x < w; x++ {
			if !bytes.Equal(row[4*x:4*x+4], first) {
				return false
			}
		}
	}
	return true
}

// The content gates' thresholds, kept here apart from the harness's on purpose (a
// contract test keeps them equal): docs/gates.md "Gates and their thresholds".
const (
	changeLevels           = 8
	minChangedFraction     = 0.15
	minInfluenceFraction   = 0.10
	minInfluenceMeanLevels = 0.08
)

// changedFraction is the fraction of out's pixels more than changeLevels away, in some
// colour channel, from in scaled (bilinear) to out's size.
func changedFraction(in image.Image, out *image.NRGBA) float64 {
	w, h := out.Rect.Dx(), out.Rect.Dy()
	if w*h == 0 {
		return 0
	}
	ref := image.NewNRGBA(image.Rect(0, 0, w, h))
	xdraw.BiLinear.Scale(ref, ref.Rect, in, in.Bounds(), xdraw.Src, nil)
	n := 0
	for i := 0; i < len(ref.Pix); i += 4 {
		for c := 0; c < 3; c++ {
			if d := int(ref.Pix[i+c]) - int(out.Pix[i+c]); d > changeLevels || d < -changeLevels {
				n++
				break
			}
		}
	}
	return float64(n) / float64(w*h)
}

// ChangeGate is the output gate's thresholds, for the contract test with the harness.
func ChangeGate() (levels int, minChanged, minInfluence, minInfluenceMean float64) {
	return changeLevels, minChangedFraction, minInfluenceFraction, minInfluenceMeanLevels
}
