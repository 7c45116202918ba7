package quality

import (
	"image"
	"image/color"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

func gradient(w, h int, shift uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(x*8) + shift, uint8(y * 12), 200 - uint8(x+y), 255})
		}
	}
	return img
}

func flat(w, h int, v uint8) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v
	}
	return img
}

func TestMeasure(t *testing.T) {
	s := Measure(flat(10, 10, 255))
	assert.InDelta(t, 1.0, s.Mean, 1e-12)
	assert.InDelta(t, 0.0, s.Std, 1e-12)
	// Half black, half white: mean 0.5, population std 0.5.
	img := flat(10, 10, 0)
	for y := range 10 {
		for x := range 5 {
			img.SetNRGBA(x, y, color.NRGBA{255, 255, 255, 255})
		}
	}
	s = Measure(img)
	assert.InDelta(t, 0.5, s.Mean, 1e-12)
	assert.InDelta(t, 0.5, s.Std, 1e-12)
}

func TestPSNR(t *testing.T) {
	a := gradient(16, 12, 0)
	p, err := PSNR(a, a)
	require.NoError(t, err)
	assert.Equal(t, IdenticalPSNR, p)
	// One level everywhere: 20 log10(255) dB.
	p, err = PSNR(flat(8, 8, 100), flat(8, 8, 101))
	require.NoError(t, err)
	assert.InDelta(t, 20*math.Log10(255), p, 1e-9)
	_, err = PSNR(a, gradient(16, 13, 0))
	assert.ErrorContains(t, err, "differ in size")
}

func TestSSIM(t *testing.T) {
	a := gradient(32, 24, 0)
	s, err := SSIM(a, a)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, s, 1e-12)
	shifted, err := SSIM(a, gradient(32, 24, 3))
	require.NoError(t, err)
	assert.Less(t, shifted, 1.0)
	assert.Greater(t, shifted, 0.9, "a 3-level shift keeps the structure")
	// A turned image keeps its histogram but not its structure.
	turned := image.NewNRGBA(image.Rect(0, 0, 32, 24))
	for y := range 24 {
		for x := range 32 {
			turned.SetNRGBA(x, y, a.NRGBAAt(31-x, 23-y))
		}
	}
	s, err = SSIM(a, turned)
	require.NoError(t, err)
	assert.Less(t, s, 0.5)
	_, err = SSIM(flat(5, 5, 0), flat(5, 5, 0))
	assert.ErrorContains(t, err, "at least 7x7")
}

func TestJudge(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := schema.QualityCriteria{MeanMin: f(0.15), MeanMax: f(0.85), StdMin: f(0.05), StdRatioMin: f(0.35), StdRatioWhenInputStd: 0.08,
		PSNRMin: f(12), SSIMMin: f(0.1), RefStdRatioMin: f(0.35), RefStdRatioWhenRefStd: 0.08}
	assert.Empty(t, Judge(c, Stats{Mean: 0.5, Std: 0.2}, Stats{Std: 0.3}))
	assert.Equal(t, []string{"pixel mean 0.1000 < 0.15", "pixel std 0.0100 < 0.05", "std ratio 0.0333 < 0.35 (output std 0.0100 over input std 0.3000)"},
		Judge(c, Stats{Mean: 0.1, Std: 0.01}, Stats{Std: 0.3}))
	assert.Equal(t, []string{"pixel mean 0.9000 > 0.85"}, Judge(c, Stats{Mean: 0.9, Std: 0.06}, Stats{Std: 0.05}),
		"the ratio is not judged on a flat input")
	assert.Empty(t, Judge(schema.QualityCriteria{}, Stats{}, Stats{}), "no bound, no miss")
	assert.Equal(t, []string{"psnr 10.00 dB < 12", "ssim 0.0500 < 0.1", "reference std ratio 0.2000 < 0.35 (output std 0.0200 over the reference image's 0.1000)"},
		JudgePair(c, 10, 0.05, Stats{Std: 0.02}, Stats{Std: 0.1}))
	assert.Empty(t, JudgePair(c, 12, 0.1, Stats{Std: 0.02}, Stats{Std: 0.07}), "the ratio is not judged on a flat reference")
}

func TestWorst(t *testing.T) {
	assert.Equal(t, "-", Worst(nil, nil))
	reqs := []schema.QualityRequest{{Mean: 0.4, Std: 0.2, StdRatio: 0.9}, {Mean: 0.6, Std: 0.1, StdRatio: 1.1}}
	assert.Equal(t, "mean 0.400-0.600, std >= 0.100, std ratio >= 0.900", Worst(reqs, nil))
	assert.Equal(t, "mean 0.400-0.600, std >= 0.100, std ratio >= 0.900; pair psnr 58.12 dB, ssim 0.9990, std ratio 0.870",
		Worst(reqs, &schema.QualityPair{PSNR: 58.123, SSIM: 0.999, StdRatio: 0.87}))
}
