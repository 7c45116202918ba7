package edit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const tol = 1e-6

// applyEdit runs the named built-in edit's op on b.
func applyEdit(t *testing.T, name string, b *raster, s Settings) *raster {
	t.Helper()
	for _, e := range builtinProgram(t).Edits() {
		if e.Name == name {
			return e.op.apply(b, s)
		}
	}
	require.Failf(t, "no such edit", "%s", name)
	return nil
}

func TestAffineEdits(t *testing.T) {
	tests := []struct {
		edit    string
		in, out [3]float32
	}{
		{"grayscale", [3]float32{1, 0, 0}, [3]float32{0.299, 0.299, 0.299}},
		{"grayscale", [3]float32{0, 1, 0}, [3]float32{0.587, 0.587, 0.587}},
		{"grayscale", [3]float32{0.2, 0.4, 0.6}, [3]float32{0.363, 0.363, 0.363}},
		{"sepia", [3]float32{1, 1, 1}, [3]float32{1.351, 1.203, 0.937}},
		{"sepia", [3]float32{0, 0, 1}, [3]float32{0.189, 0.168, 0.131}},
		{"invert", [3]float32{0.2, 0, 1}, [3]float32{0.8, 1, 0}},
		{"contrast", [3]float32{0.25, 0.5, 0.75}, [3]float32{0.125, 0.5, 0.875}},
		{"contrast", [3]float32{0, 1, 0.1}, [3]float32{-0.25, 1.25, -0.1}},
		{"warm", [3]float32{0.5, 0.5, 0.5}, [3]float32{0.575, 0.5, 0.4}},
	}
	for _, tt := range tests {
		t.Run(tt.edit, func(t *testing.T) {
			out := applyEdit(t, tt.edit, rasterOf(1, 1, tt.in[:]...), Settings{})
			assert.InDeltaSlice(t, tt.out[:], out.pix, tol)
		})
	}
}

func TestBrightenIsGamma(t *testing.T) {
	out := applyEdit(t, "brighten", grayRaster(4, 1, 0, 0.25, 1, 0.5), Settings{})
	// 0.25^0.625 = 2^-1.25; 0.5^0.625 = 2^-0.625.
	assert.InDeltaSlice(t, []float32{0, 0.42044821, 1, 0.64841977}, channel(out, 0), tol)
}

func TestPosterize(t *testing.T) {
	out := applyEdit(t, "posterize", grayRaster(6, 1, 0, 0.1, 0.3, 0.6, 0.75, 1), Settings{})
	// q = min(floor(4x), 3): 0, 0, 1, 2, 3, 3 (0.75*4 = 3 exactly; 1*4 = 4 capped).
	assert.InDeltaSlice(t, []float32{0, 0, 1.0 / 3, 2.0 / 3, 1, 1}, channel(out, 1), tol)
}

func TestRemaps(t *testing.T) {
	// 3x2, pixel value = its index.
	in := grayRaster(3, 2, 0, 1, 2, 3, 4, 5)
	assert.Equal(t, []float32{5, 4, 3, 2, 1, 0}, channel(applyEdit(t, "rotate", in, Settings{}), 0))
	assert.Equal(t, []float32{2, 1, 0, 5, 4, 3}, channel(applyEdit(t, "mirror", in, Settings{}), 1))
	assert.Equal(t, []float32{3, 4, 5, 0, 1, 2}, channel(applyEdit(t, "flip", in, Settings{}), 2))
	assert.Equal(t, []float32{0, 1, 2, 3, 4, 5}, channel(in, 0), "the base is not modified")
}

func TestRemapKeepsChannels(t *testing.T) {
	in := rasterOf(2, 1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
	assert.Equal(t, []float32{0.4, 0.5, 0.6, 0.1, 0.2, 0.3}, applyEdit(t, "mirror", in, Settings{}).pix)
}

func TestBlurPasses(t *testing.T) {
	in := grayRaster(3, 1, 0, 0.3, 0.6)
	// One pass along the row with the edges replicated: (0+0+.3)/3, (0+.3+.6)/3,
	// (.3+.6+.6)/3; the column pass of a one-row image changes nothing.
	one := applyEdit(t, "blur", in, Settings{NumInferenceSteps: 1})
	assert.InDeltaSlice(t, []float32{0.1, 0.3, 0.5}, channel(one, 0), tol)
	two := applyEdit(t, "blur", in, Settings{NumInferenceSteps: 2})
	assert.InDeltaSlice(t, []float32{0.5 / 3, 0.3, 1.3 / 3}, channel(two, 0), tol)

	// A column: the same numbers along y.
	col := applyEdit(t, "blur", grayRaster(1, 3, 0, 0.3, 0.6), Settings{NumInferenceSteps: 1})
	assert.InDeltaSlice(t, []float32{0.1, 0.3, 0.5}, channel(col, 2), tol)

	// A single bright pixel in a 3x3 spreads to 1/9 everywhere after one pass.
	dot := grayRaster(3, 3, 0, 0, 0, 0, 0.9, 0, 0, 0, 0)
	spread := applyEdit(t, "blur", dot, Settings{NumInferenceSteps: 1})
	assert.InDeltaSlice(t, []float32{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}, channel(spread, 0), tol)
}

func TestSharpenIsUnsharpMask(t *testing.T) {
	out := applyEdit(t, "sharpen", grayRaster(3, 1, 0, 0.3, 0.6), Settings{NumInferenceSteps: 50})
	// B + (B - blur1(B)) = B + (B - [.1 .3 .5]); steps do not change it.
	assert.InDeltaSlice(t, []float32{-0.1, 0.3, 0.7}, channel(out, 0), tol)
}

func TestPixelateBlocksFromTopLeft(t *testing.T) {
	// 17x2: one full-width 16x2 block and a partial 1x2 block at the right.
	vals := make([]float32, 34)
	for i := range vals {
		vals[i] = float32(i%17) / 16
	}
	out := applyEdit(t, "pixelate", grayRaster(17, 2, vals...), Settings{})
	got := channel(out, 0)
	mean := float32(7.5 / 16) // mean of 0/16..15/16
	for x := range 16 {
		assert.InDelta(t, mean, got[x], tol)
		assert.InDelta(t, mean, got[17+x], tol)
	}
	assert.InDelta(t, 1, got[16], tol)
	assert.InDelta(t, 1, got[33], tol)
}

func TestPixelatePerChannel(t *testing.T) {
	out := applyEdit(t, "pixelate", rasterOf(2, 1, 1, 0, 0.5, 0, 1, 0.5), Settings{})
	assert.InDeltaSlice(t, []float32{0.5, 0.5, 0.5, 0.5, 0.5, 0.5}, out.pix, tol)
}

func TestGrainNoisePinned(t *testing.T) {
	// Computed independently with Python integers (mod 2^64).
	tests := []struct {
		seed, k uint64
		want    float32
	}{
		{0, 0, 14819496.0 / (1 << 24)},
		{0, 1, 7239838.0 / (1 << 24)},
		{42, 0, 12441394.0 / (1 << 24)},
		{42, 7, 13352197.0 / (1 << 24)},
		{1<<63 - 1, 12345, 7981634.0 / (1 << 24)},
		{7, 1 << 40, 10334720.0 / (1 << 24)},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, grainNoise(tt.seed, tt.k), "seed %d k %d", tt.seed, tt.k)
	}
}

func TestGrainSameNoiseForAllChannels(t *testing.T) {
	in := rasterOf(2, 1, 0.5, 0.4, 0.3, 0.5, 0.5, 0.5)
	out := applyEdit(t, "grain", in, Settings{Seed: 42})
	d0 := float32(0.16) * (grainNoise(42, 0) - 0.5)
	d1 := float32(0.16) * (grainNoise(42, 1) - 0.5)
	assert.InDeltaSlice(t, []float32{0.5 + d0, 0.4 + d0, 0.3 + d0, 0.5 + d1, 0.5 + d1, 0.5 + d1}, out.pix, tol)
	// Pinned: u(42, 0) = 0.74156487, so pixel 0 gains 0.16 * 0.24156487.
	assert.InDelta(t, 0.5+0.038650379, out.pix[0], tol)

	other := applyEdit(t, "grain", in, Settings{Seed: 43})
	assert.NotEqual(t, out.pix, other.pix, "the seed changes the noise")
}
