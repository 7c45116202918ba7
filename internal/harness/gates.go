package harness

import (
	"image"

	xdraw "golang.org/x/image/draw"
)

// The content gates' thresholds (docs/gates.md "Gates and their thresholds", where the
// measurements behind each number are). The evidence checker keeps its own copy and a
// contract test keeps the two equal.
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

// ChangedFraction is the fraction of out's pixels that differ by more than ChangeLevels
// in some colour channel from in resized (bilinear) to out's size.
func ChangedFraction(in, out image.Image) float64 {
	o := toNRGBA(out)
	w, h := o.Rect.Dx(), o.Rect.Dy()
	if w == 0 || h == 0 {
		return 0
	}
	ref := image.NewNRGBA(image.Rect(0, 0, w, h))
	xdraw.BiLinear.Scale(ref, ref.Rect, in, in.Bounds(), xdraw.Src, nil)
	changed := 0
	for y := range h {
		ro, rr := o.Pix[y*o.Stride:], ref.Pix[y*ref.Stride:]
		for x := range w {
			for c := range 3 {
				d := int(ro[4*x+c]) - int(rr[4*x+c])
				if d > ChangeLevels || d < -ChangeLevels {
					changed++
					break
				}
			}
		}
	}
	return float64(changed) / float64(w*h)
}
