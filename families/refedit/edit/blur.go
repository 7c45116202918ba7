package edit

import "fmt"

// boxBlurOp runs num_inference_steps passes of a separable kernel: along the rows,
// then along the columns, edges replicated.
type boxBlurOp struct{ kernel []float32 }

// unsharpOp is B + amount*(B - blurred), blurred being `passes` passes of the kernel.
type unsharpOp struct {
	kernel []float32
	passes int
	amount float32
}

func newBoxBlur(kernel []float64) (operation, error) {
	k, err := compileKernel(kernel)
	if err != nil {
		return nil, err
	}
	return boxBlurOp{kernel: k}, nil
}

func newUnsharp(kernel []float64, passes int, amount float64) (operation, error) {
	k, err := compileKernel(kernel)
	if err != nil {
		return nil, err
	}
	if passes < 1 {
		return nil, fmt.Errorf("passes %d: want at least 1", passes)
	}
	if amount == 0 || !finite(amount) {
		return nil, fmt.Errorf("amount %v: want a finite non-zero number", amount)
	}
	return unsharpOp{kernel: k, passes: passes, amount: float32(amount)}, nil
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
