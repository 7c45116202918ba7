package edit

import "fmt"

// grainOp is x + amplitude*(u - 0.5), the same u for the three channels of a pixel.
type grainOp struct{ amplitude float32 }

func newGrain(amplitude float64) (operation, error) {
	if amplitude == 0 || !finite(amplitude) {
		return nil, fmt.Errorf("amplitude %v: want a finite non-zero number", amplitude)
	}
	return grainOp{amplitude: float32(amplitude)}, nil
}

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
