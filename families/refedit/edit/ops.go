package edit

import (
	"fmt"
	"math"
)

// raster is an RGB image of float32 samples in [0,1] (edits may leave that range
// until quantize clamps), row-major with the three channels interleaved.
type raster struct {
	w, h int
	pix  []float32
}

func newRaster(w, h int) *raster {
	return &raster{w: w, h: h, pix: make([]float32, w*h*3)}
}

func (r *raster) clone() *raster {
	c := &raster{w: r.w, h: r.h, pix: make([]float32, len(r.pix))}
	copy(c.pix, r.pix)
	return c
}

// offset is the index of channel 0 of pixel (x, y).
func (r *raster) offset(x, y int) int { return (y*r.w + x) * 3 }

// operation is one compiled edit: E = op(B). It must not modify b.
//
// Every float32 product below is wrapped in an explicit float32 conversion: the Go spec
// lets a compiler fuse x*y+z into one FMA unless a conversion forces the rounding, and a
// fused result differs between architectures. The conversions keep the bytes the same
// everywhere.
type operation interface {
	apply(b *raster, s Settings) *raster
}

// affineOp is out_c = m[c][0]*R + m[c][1]*G + m[c][2]*B + offset[c], summed left to right.
type affineOp struct {
	m      [3][3]float32
	offset [3]float32
}

func newAffine(m *[3][3]float64, offset *[3]float64) (operation, error) {
	if m == nil || offset == nil {
		return nil, fmt.Errorf("needs matrix and offset")
	}
	var op affineOp
	identity := true
	for c := range 3 {
		for j := range 3 {
			if !finite(m[c][j]) {
				return nil, fmt.Errorf("matrix[%d][%d] = %v: want a finite number", c, j, m[c][j])
			}
			op.m[c][j] = float32(m[c][j])
			if (c == j && m[c][j] != 1) || (c != j && m[c][j] != 0) {
				identity = false
			}
		}
		if !finite(offset[c]) {
			return nil, fmt.Errorf("offset[%d] = %v: want a finite number", c, offset[c])
		}
		op.offset[c] = float32(offset[c])
		if offset[c] != 0 {
			identity = false
		}
	}
	if identity {
		return nil, fmt.Errorf("identity matrix with zero offset changes nothing")
	}
	return op, nil
}

func (op affineOp) apply(b *raster, _ Settings) *raster {
	out := newRaster(b.w, b.h)
	for i := 0; i < len(b.pix); i += 3 {
		r, g, bl := b.pix[i], b.pix[i+1], b.pix[i+2]
		for c := range 3 {
			row := &op.m[c]
			v := float32(row[0] * r)
			v += float32(row[1] * g)
			v += float32(row[2] * bl)
			out.pix[i+c] = v + op.offset[c]
		}
	}
	return out
}

// gammaOp is out = x ^ exponent per sample.
type gammaOp struct{ exponent float64 }

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

// posterizeOp is q = min(floor(x*levels), levels-1); out = q/(levels-1).
type posterizeOp struct{ levels int }

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

// remapOp mirrors columns (flipX: out[y][x] = B[y][W-1-x]) and/or rows
// (flipY: out[y][x] = B[H-1-y][x]); both is the 180 degree rotation.
type remapOp struct{ flipX, flipY bool }

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

// boxBlurOp runs num_inference_steps passes of a separable kernel: along the rows,
// then along the columns, edges replicated.
type boxBlurOp struct{ kernel []float32 }

// unsharpOp is B + amount*(B - blurred), blurred being `passes` passes of the kernel.
type unsharpOp struct {
	kernel []float32
	passes int
	amount float32
}

func compileKernel(kernel []float64) ([]float32, error) {
	if len(kernel) < 3 || len(kernel)%2 == 0 {
		return nil, fmt.Errorf("kernel of %d taps: want an odd number of taps, at least 3", len(kernel))
	}
	k := make([]float32, len(kernel))
	for i, v := range kernel {
		if !finite(v) {
			return nil, fmt.Errorf("kernel[%d] = %v: want a finite number", i, v)
		}
		k[i] = float32(v)
	}
	return k, nil
}

func (op boxBlurOp) apply(b *raster, s Settings) *raster {
	return convolve(b, op.kernel, s.NumInferenceSteps)
}

func (op unsharpOp) apply(b *raster, _ Settings) *raster {
	out := convolve(b, op.kernel, op.passes)
	for i, x := range b.pix {
		out.pix[i] = x + float32(op.amount*(x-out.pix[i]))
	}
	return out
}

// convolve returns `passes` passes of the separable kernel over src.
func convolve(src *raster, kernel []float32, passes int) *raster {
	a := src.clone()
	tmp := newRaster(src.w, src.h)
	for range passes {
		convolveRows(tmp, a, kernel)
		convolveColumns(a, tmp, kernel)
	}
	return a
}

// convolveRows filters each row along x: dst[y][x] = sum_k kernel[k]*src[y][x+k-r],
// the taps summed in kernel order, x+k-r clamped to the row (edges replicated).
func convolveRows(dst, src *raster, kernel []float32) {
	r := len(kernel) / 2
	w := src.w
	for y := range src.h {
		row := src.pix[y*w*3 : (y+1)*w*3]
		out := dst.pix[y*w*3 : (y+1)*w*3]
		for x := range w {
			for c := range 3 {
				var acc float32
				for k, kv := range kernel {
					sx := min(max(x+k-r, 0), w-1)
					acc += float32(kv * row[sx*3+c])
				}
				out[x*3+c] = acc
			}
		}
	}
}

// convolveColumns filters each column along y, like convolveRows.
func convolveColumns(dst, src *raster, kernel []float32) {
	r := len(kernel) / 2
	stride := src.w * 3
	for y := range src.h {
		out := dst.pix[y*stride : (y+1)*stride]
		for i := range out {
			var acc float32
			for k, kv := range kernel {
				sy := min(max(y+k-r, 0), src.h-1)
				acc += float32(kv * src.pix[sy*stride+i])
			}
			out[i] = acc
		}
	}
}

// blockMeanOp replaces each block x block cell, counted from the top-left (partial
// cells at the right and bottom edges), by its per-channel mean.
type blockMeanOp struct{ block int }

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

// grainOp is x + amplitude*(u - 0.5), the same u for the three channels of a pixel.
type grainOp struct{ amplitude float32 }

func (op grainOp) apply(b *raster, s Settings) *raster {
	out := newRaster(b.w, b.h)
	for k := range b.w * b.h {
		d := float32(op.amplitude * (grainNoise(s.Seed, uint64(k)) - 0.5))
		i := k * 3
		out.pix[i] = b.pix[i] + d
		out.pix[i+1] = b.pix[i+1] + d
		out.pix[i+2] = b.pix[i+2] + d
	}
	return out
}

// grainNoise is u in [0,1) for pixel index k = y*W + x and seed s: a splitmix64
// finalizer over s ^ (k * golden), top 24 bits. The constants define the noise, like
// the formula in the README; they are not tunable op parameters.
func grainNoise(s, k uint64) float32 {
	const golden = 0x9E3779B97F4A7C15
	z := s ^ (k * golden)
	z += golden
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return float32(z>>40) / (1 << 24)
}

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
