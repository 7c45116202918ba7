package edit

import "math"

// tap is where one output column (or row) samples its input: between i0 and i1 at
// fraction f.
type tap struct {
	i0, i1 int
	f      float32
}

// taps maps out output positions onto in input positions with half-pixel centres:
// s = (i + 0.5) * in / out - 0.5 clamped to [0, in-1]. The coordinate is computed in
// float64 (it is index math, and float32 loses whole pixels past 2^24); only the
// fraction is rounded to float32 for the pixel arithmetic.
func taps(in, out int) []tap {
	t := make([]tap, out)
	for i := range t {
		s := (float64(i)+0.5)*float64(in)/float64(out) - 0.5
		s = min(max(s, 0), float64(in-1))
		i0 := int(math.Floor(s))
		t[i] = tap{i0: i0, i1: min(i0+1, in-1), f: float32(s - float64(i0))}
	}
	return t
}

// resize is bilinear with half-pixel centres; equal sizes copy the pixels unchanged.
func resize(src *raster, w, h int) *raster {
	if src.w == w && src.h == h {
		return src.clone()
	}
	xs, ys := taps(src.w, w), taps(src.h, h)
	out := newRaster(w, h)
	for y, ty := range ys {
		fy, gy := ty.f, 1-ty.f
		for x, tx := range xs {
			fx, gx := tx.f, 1-tx.f
			p00, p01 := src.offset(tx.i0, ty.i0), src.offset(tx.i1, ty.i0)
			p10, p11 := src.offset(tx.i0, ty.i1), src.offset(tx.i1, ty.i1)
			o := out.offset(x, y)
			for c := range 3 {
				top := float32(gx*src.pix[p00+c]) + float32(fx*src.pix[p01+c])
				bottom := float32(gx*src.pix[p10+c]) + float32(fx*src.pix[p11+c])
				out.pix[o+c] = float32(gy*top) + float32(fy*bottom)
			}
		}
	}
	return out
}
