package edit

import "fmt"

// blockMeanOp replaces each block x block cell, counted from the top-left (partial
// cells at the right and bottom edges), by its per-channel mean.
type blockMeanOp struct{ block int }

func newBlockMean(block int) (operation, error) {
	if block < 2 {
		return nil, fmt.Errorf("block %d: want at least 2", block)
	}
	return blockMeanOp{block: block}, nil
}

func (op blockMeanOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	for y0 := 0; y0 < b.h; y0 += op.block {
		y1 := min(y0+op.block, b.h)
		for x0 := 0; x0 < b.w; x0 += op.block {
			x1 := min(x0+op.block, b.w)
			// Summed row-major in float32, then divided by the cell's pixel count.
			var sum [3]float32
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					i := b.offset(x, y)
					sum[0] += b.pix[i]
					sum[1] += b.pix[i+1]
					sum[2] += b.pix[i+2]
				}
			}
			n := float32((y1 - y0) * (x1 - x0))
			mean := [3]float32{sum[0] / n, sum[1] / n, sum[2] / n}
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					copy(out.pix[out.offset(x, y):][:3], mean[:])
				}
			}
		}
	}
	return out
}
