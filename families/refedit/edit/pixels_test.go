package edit

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResizeBilinearHalfPixel(t *testing.T) {
	up := resize(grayRaster(2, 1, 0, 1), 4, 1)
	// s = (i+.5)*2/4 - .5 = -.25 (clamped to 0), .25, .75, 1.25 (clamped to 1).
	assert.InDeltaSlice(t, []float32{0, 0.25, 0.75, 1}, channel(up, 0), tol)

	down := resize(grayRaster(4, 1, 0, 0.2, 0.6, 1), 2, 1)
	// s = .5 and 2.5: means of neighbours.
	assert.InDeltaSlice(t, []float32{0.1, 0.8}, channel(down, 0), tol)

	mean := resize(grayRaster(2, 2, 0, 0.2, 0.4, 1), 1, 1)
	assert.InDeltaSlice(t, []float32{0.4}, channel(mean, 1), tol)

	// Rows and columns independently: 1x2 -> 1x4 is the 2x1 -> 4x1 case turned.
	tall := resize(grayRaster(1, 2, 0, 1), 1, 4)
	assert.InDeltaSlice(t, []float32{0, 0.25, 0.75, 1}, channel(tall, 2), tol)
}

func TestResizeTwoDimensions(t *testing.T) {
	// 2x2 -> 3x3: s = (i+.5)*2/3 - .5 = -1/6 (0), .5, 7/6 (1).
	out := resize(grayRaster(2, 2, 0, 0.3, 0.6, 0.9), 3, 3)
	want := []float32{0, 0.15, 0.3, 0.3, 0.45, 0.6, 0.6, 0.75, 0.9}
	assert.InDeltaSlice(t, want, channel(out, 0), tol)
}

func TestResizeEqualSizeCopies(t *testing.T) {
	in := rasterOf(2, 1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
	out := resize(in, 2, 1)
	assert.Equal(t, in.pix, out.pix)
	out.pix[0] = 9
	assert.Equal(t, float32(0.1), in.pix[0], "a copy, not the same slice")
}

func TestBlend(t *testing.T) {
	tests := []struct {
		g, want float32
	}{{1, 0.6}, {0.5, 0.4}, {2, 1.0}, {3, 1.4}, {0.25, 0.3}}
	for _, tt := range tests {
		base := grayRaster(1, 1, 0.2)
		edited := grayRaster(1, 1, 0.6)
		blend(base, edited, tt.g)
		assert.InDelta(t, tt.want, edited.pix[0], tol, "g=%v", tt.g)
	}
}

func TestQuantize(t *testing.T) {
	tests := []struct {
		v    float32
		want uint8
	}{
		{0, 0}, {1, 255}, {-0.1, 0}, {1.2, 255}, {float32(math.NaN()), 0},
		{0.5, 128},     // 127.5 + .5 = 128
		{1.0 / 255, 1}, // exactly one level
		{0.0019, 0},    // 0.4845 rounds down
		{0.0021, 1},    // 0.5355 rounds up
		{0.299, 76},    // 76.245
		{0.587, 150},   // 149.685
		{float32(math.Inf(1)), 255},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, quantizeSample(tt.v), "v=%v", tt.v)
	}
	img := quantize(rasterOf(1, 1, 0.299, 0.587, 2))
	assert.Equal(t, []uint8{76, 150, 255, 255}, img.Pix, "opaque, alpha 255")
}
