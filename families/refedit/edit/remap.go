package edit

import "fmt"

// remapOp mirrors columns (flipX: out[y][x] = B[y][W-1-x]) and/or rows
// (flipY: out[y][x] = B[H-1-y][x]); both is the 180 degree rotation.
type remapOp struct{ flipX, flipY bool }

func newRemap(flipX, flipY bool) (operation, error) {
	if !flipX && !flipY {
		return nil, fmt.Errorf("neither flip_x nor flip_y: changes nothing")
	}
	return remapOp{flipX: flipX, flipY: flipY}, nil
}

func (op remapOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	for y := range b.h {
		sy := y
		if op.flipY {
			sy = b.h - 1 - y
		}
		for x := range b.w {
			sx := x
			if op.flipX {
				sx = b.w - 1 - x
			}
			copy(out.pix[out.offset(x, y):][:3], b.pix[b.offset(sx, sy):][:3])
		}
	}
	return out
}
