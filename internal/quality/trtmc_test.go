package quality

import (
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The golden numbers come from testdata/trtmc_metrics.py, a NumPy rendering of each TRTMC
// layout's formula (its own pytest checks that the file is what NumPy computes).
type trtmcGolden struct {
	Pairs []struct {
		Reference, Output string
		E9132e79          struct{ PSNR, SSIM *float64 } `json:"e9132e79"`
		Families          struct{ PSNR, SSIM *float64 } `json:"families"`
	} `json:"pairs"`
}

func loadPNG(t *testing.T, name string) image.Image {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "trtmc-metrics", name))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

func TestTRTMCMetricsMatchNumPy(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "trtmc_metrics.golden.json"))
	require.NoError(t, err)
	var g trtmcGolden
	require.NoError(t, json.Unmarshal(b, &g))
	require.Len(t, g.Pairs, 6)
	for _, p := range g.Pairs {
		ref, out := loadPNG(t, p.Reference), loadPNG(t, p.Output)
		for _, c := range []struct {
			metric     string
			psnr, ssim *float64
		}{{MetricTRTMCE9132e79, p.E9132e79.PSNR, p.E9132e79.SSIM}, {MetricTRTMCFamilies, p.Families.PSNR, p.Families.SSIM}} {
			m, err := MeasurePair(c.metric, ref, out)
			require.NoError(t, err)
			what := p.Reference + " vs " + p.Output + " by " + c.metric
			assert.InDelta(t, *c.ssim, m.SSIM, 1e-6, what+": ssim")
			if c.psnr == nil { // NumPy's inf
				assert.Equal(t, IdenticalPSNR, m.PSNR, what+": psnr")
			} else {
				assert.InDelta(t, *c.psnr, m.PSNR, 1e-6, what+": psnr")
			}
		}
	}
}

// The global SSIM is not the windowed one: on the fixed pair they differ, so a TRTMC
// threshold applied to the windowed number bounds something else.
func TestTRTMCMetricDiffersFromWindowed(t *testing.T) {
	ref, out := loadPNG(t, "photo.png"), loadPNG(t, "edit.png")
	g, err := MeasurePair(MetricTRTMCE9132e79, ref, out)
	require.NoError(t, err)
	w, err := MeasurePair(MetricWindowed, ref, out)
	require.NoError(t, err)
	assert.Equal(t, w.SSIM, g.WindowedSSIM, "the windowed SSIM rides along as an extra")
	assert.Greater(t, g.SSIM-w.SSIM, 0.1, "global %.4f vs windowed %.4f", g.SSIM, w.SSIM)
	_, err = MeasurePair("ssim-of-my-choosing", ref, out)
	assert.ErrorContains(t, err, `unknown pair metric "ssim-of-my-choosing"`)
	_, err = MeasurePair(MetricTRTMCFamilies, ref, image.NewNRGBA(image.Rect(0, 0, 8, 8)))
	assert.ErrorContains(t, err, "differ in size")
}
