package quality

import (
	"fmt"
	"image"
	"math"
)

// A pair's PSNR and SSIM are bounded by a family's thresholds, and a threshold means
// something only for the formula it was set for. TRTMC's `psnr` and `ssim` thresholds
// bound TRTMC's own numbers, which are not the windowed SSIM above: each is one global
// measure over every RGB value of the image (PIL's convert("RGB"), uint8 k as
// float32(k)/float32(255)), and the two TRTMC layouts compute them differently:
//
//   - MetricTRTMCE9132e79: tests/e2e/models/qwen_image/e2e_plugins/comparators/
//     diffusion.py @ e9132e79 (_compute_psnr, _compute_ssim). PSNR = 10 log10(1 / MSE),
//     exactly 100 when MSE < 1e-12. SSIM with mean, population variance and covariance
//     over all H*W*3 values in float64, c1 = 0.01^2, c2 = 0.03^2.
//   - MetricTRTMCFamilies: families/qwen_image/tests/test_e2e.py @ 9777fef7
//     (_assert_parity). PSNR = 20 log10(1 / RMSE), +Inf when RMSE is 0 (JSON has no
//     Inf: IdenticalPSNR stands for it). SSIM the same global formula, its moments taken
//     in float32 by NumPy.
//
// Both are computed here in float64 from the float32 pixel values; against a NumPy
// rendering of each formula (testdata/trtmc_metrics.py) they agree to 1e-6.
// MetricWindowed is this package's SSIM, which families of our own state their bounds in.
const (
	MetricWindowed      = "windowed-luma-7x7"
	MetricTRTMCE9132e79 = "trtmc-global-e9132e79"
	MetricTRTMCFamilies = "trtmc-global-families-9777fef7"
)

// Metrics lists the pair metrics a family may state.
var Metrics = []string{MetricWindowed, MetricTRTMCE9132e79, MetricTRTMCFamilies}

// PairMetrics are a pair's PSNR and SSIM by the named formula, and the windowed SSIM
// beside them (informational when the formula is another).
type PairMetrics struct {
	Metric       string
	PSNR, SSIM   float64
	WindowedSSIM float64
}

// MeasurePair computes out against ref by metric ("" is MetricWindowed). The images must
// have the same size.
func MeasurePair(metric string, ref, out image.Image) (PairMetrics, error) {
	if metric == "" {
		metric = MetricWindowed
	}
	m := PairMetrics{Metric: metric}
	var err error
	if m.WindowedSSIM, err = SSIM(ref, out); err != nil {
		return m, err
	}
	switch metric {
	case MetricWindowed:
		m.SSIM = m.WindowedSSIM
		m.PSNR, err = PSNR(ref, out)
	case MetricTRTMCE9132e79, MetricTRTMCFamilies:
		m.PSNR, m.SSIM, err = trtmcPair(metric, ref, out)
	default:
		err = fmt.Errorf("unknown pair metric %q (known: %v)", metric, Metrics)
	}
	return m, err
}

// trtmcPair is TRTMC's global PSNR and SSIM of the pair, by layout.
func trtmcPair(metric string, ref, out image.Image) (psnr, ssim float64, err error) {
	a, b, err := sameSize(out, ref) // TRTMC passes (trt, reference); both measures are symmetric
	if err != nil {
		return 0, 0, err
	}
	va, vb := rgb01(a), rgb01(b)
	n := float64(len(va))
	var sa, sb, se float64
	for i := range va {
		sa += va[i]
		sb += vb[i]
		d := va[i] - vb[i]
		se += d * d
	}
	mua, mub, mse := sa/n, sb/n, se/n
	var vara, varb, cov float64
	for i := range va {
		da, db := va[i]-mua, vb[i]-mub
		vara += da * da
		varb += db * db
		cov += da * db
	}
	vara, varb, cov = vara/n, varb/n, cov/n
	const c1, c2 = 0.01 * 0.01, 0.03 * 0.03
	ssim = (2*mua*mub + c1) * (2*cov + c2) / ((mua*mua + mub*mub + c1) * (vara + varb + c2))
	switch metric {
	case MetricTRTMCE9132e79:
		if mse < 1e-12 {
			return 100, ssim, nil
		}
		return 10 * math.Log10(1/mse), ssim, nil
	default:
		rmse := math.Sqrt(mse)
		if rmse == 0 {
			return IdenticalPSNR, ssim, nil
		}
		return 20 * math.Log10(1/rmse), ssim, nil
	}
}

// rgb01 is every R, G, B value of m as NumPy's float32(k) / 255 would hold it.
func rgb01(m *image.NRGBA) []float64 {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := make([]float64, 0, 3*w*h)
	for y := range h {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for i := 0; i < len(row); i += 4 {
			for c := range 3 {
				out = append(out, float64(float32(row[i+c])/255))
			}
		}
	}
	return out
}
