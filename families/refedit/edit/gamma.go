package edit

import (
	"fmt"
	"math"
)

// gammaOp is out = x ^ exponent per sample.
type gammaOp struct{ exponent float64 }

func newGamma(exponent float64) (operation, error) {
	if !(exponent > 0) || !finite(exponent) || exponent == 1 {
		return nil, fmt.Errorf("exponent %v: want a finite number > 0 other than 1", exponent)
	}
	return gammaOp{exponent: exponent}, nil
}

func (op gammaOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	for i, x := range b.pix {
		// B is a convex mix of v/255 values, so x < 0 cannot happen; the guard keeps
		// a NaN from ever reaching the output if that changes.
		if x <= 0 {
			out.pix[i] = 0
			continue
		}
		// Go has no float32 pow; float64 pow rounded once to float32 is the closest
		// float32 result.
		out.pix[i] = float32(math.Pow(float64(x), op.exponent))
	}
	return out
}
