package edit

import (
	"fmt"
	"math"
)

// posterizeOp is q = min(floor(x*levels), levels-1); out = q/(levels-1).
type posterizeOp struct{ levels int }

func newPosterize(levels int) (operation, error) {
	if levels < 2 || levels > 256 {
		return nil, fmt.Errorf("levels %d: want 2..256", levels)
	}
	return posterizeOp{levels: levels}, nil
}

func (op posterizeOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	n := float32(op.levels)
	top := float32(op.levels - 1)
	for i, x := range b.pix {
		q := float32(math.Floor(float64(x * n)))
		q = max(min(q, top), 0)
		out.pix[i] = q / top
	}
	return out
}
