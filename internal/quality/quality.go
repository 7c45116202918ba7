// Package quality measures an edited image the way image-edit families state their
// criteria: pixel mean and standard deviation (RGB values scaled to [0, 1]), the ratio of
// an output's deviation to its input's, and, against a reference image of the same size,
// PSNR and SSIM. The harness's quality stage and the evidence checker both measure with
// it, each from the PNG files.
package quality

import (
	"fmt"
	"image"
	"math"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// Stats are an image's pixel mean and population standard deviation over its R, G and B
// values scaled to [0, 1] (alpha ignored).
type Stats struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// Measure returns img's Stats.
func Measure(img image.Image) Stats {
	m := judge.ToNRGBA(img)
	var sum, sq float64
	n := 0
	for y := 0; y < m.Rect.Dy(); y++ {
		row := m.Pix[y*m.Stride : y*m.Stride+4*m.Rect.Dx()]
		for i := 0; i < len(row); i += 4 {
			for c := range 3 {
				v := float64(row[i+c]) / 255
				sum += v
				sq += v * v
			}
			n += 3
		}
	}
	if n == 0 {
		return Stats{}
	}
	mean := sum / float64(n)
	return Stats{Mean: mean, Std: math.Sqrt(math.Max(0, sq/float64(n)-mean*mean))}
}

// IdenticalPSNR stands for the infinite PSNR of two identical images (JSON has no +Inf).
const IdenticalPSNR = 999.0

// PSNR is the peak signal-to-noise ratio of b against a over RGB values in [0, 1], in dB;
// IdenticalPSNR when they are identical. The images must have the same size.
func PSNR(a, b image.Image) (float64, error) {
	ma, mb, err := sameSize(a, b)
	if err != nil {
		return 0, err
	}
	var se float64
	n := 0
	w := ma.Rect.Dx()
	for y := 0; y < ma.Rect.Dy(); y++ {
		ra := ma.Pix[y*ma.Stride : y*ma.Stride+4*w]
		rb := mb.Pix[y*mb.Stride : y*mb.Stride+4*w]
		for i := 0; i < len(ra); i += 4 {
			for c := range 3 {
				d := (float64(ra[i+c]) - float64(rb[i+c])) / 255
				se += d * d
			}
			n += 3
		}
	}
	if se == 0 {
		return IdenticalPSNR, nil
	}
	return 10 * math.Log10(1/(se/float64(n))), nil
}

// SSIM is the mean structural similarity of the two images' luminance (ITU-R BT.601
// weights, values in [0, 1]) over every 7x7 window, with sample covariances and the
// constants K1 = 0.01, K2 = 0.03 (scikit-image's structural_similarity defaults).
func SSIM(a, b image.Image) (float64, error) {
	ma, mb, err := sameSize(a, b)
	if err != nil {
		return 0, err
	}
	const win = 7
	w, h := ma.Rect.Dx(), ma.Rect.Dy()
	if w < win || h < win {
		return 0, fmt.Errorf("SSIM needs at least %dx%d pixels, the images are %dx%d", win, win, w, h)
	}
	la, lb := luma(ma), luma(mb)
	const c1, c2 = 0.01 * 0.01, 0.03 * 0.03
	const n = win * win
	var total float64
	count := 0
	for y := 0; y+win <= h; y++ {
		for x := 0; x+win <= w; x++ {
			var sa, sb, saa, sbb, sab float64
			for dy := range win {
				for dx := range win {
					va, vb := la[(y+dy)*w+x+dx], lb[(y+dy)*w+x+dx]
					sa, sb = sa+va, sb+vb
					saa, sbb, sab = saa+va*va, sbb+vb*vb, sab+va*vb
				}
			}
			mua, mub := sa/n, sb/n
			// Sample (N-1) covariances, as scikit-image's default.
			va := (saa - n*mua*mua) / (n - 1)
			vb := (sbb - n*mub*mub) / (n - 1)
			cov := (sab - n*mua*mub) / (n - 1)
			total += ((2*mua*mub + c1) * (2*cov + c2)) / ((mua*mua + mub*mub + c1) * (va + vb + c2))
			count++
		}
	}
	return total / float64(count), nil
}

func luma(m *image.NRGBA) []float64 {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := make([]float64, w*h)
	for y := range h {
		for x := range w {
			p := m.Pix[y*m.Stride+4*x:]
			out[y*w+x] = (0.299*float64(p[0]) + 0.587*float64(p[1]) + 0.114*float64(p[2])) / 255
		}
	}
	return out
}

func sameSize(a, b image.Image) (*image.NRGBA, *image.NRGBA, error) {
	if a.Bounds().Size() != b.Bounds().Size() {
		return nil, nil, fmt.Errorf("the images differ in size: %v vs %v", a.Bounds().Size(), b.Bounds().Size())
	}
	return judge.ToNRGBA(a), judge.ToNRGBA(b), nil
}

// Judge lists the criteria an output misses: out's pixel mean and standard deviation
// within the family's bounds, and its deviation over its input's when the input's is
// large enough to judge. A nil bound is not checked.
func Judge(c schema.QualityCriteria, out, in Stats) []string {
	var miss []string
	if c.MeanMin != nil && out.Mean < *c.MeanMin {
		miss = append(miss, fmt.Sprintf("pixel mean %.4f < %g", out.Mean, *c.MeanMin))
	}
	if c.MeanMax != nil && out.Mean > *c.MeanMax {
		miss = append(miss, fmt.Sprintf("pixel mean %.4f > %g", out.Mean, *c.MeanMax))
	}
	if c.StdMin != nil && out.Std < *c.StdMin {
		miss = append(miss, fmt.Sprintf("pixel std %.4f < %g", out.Std, *c.StdMin))
	}
	if c.StdRatioMin != nil && in.Std >= c.StdRatioWhenInputStd && in.Std > 0 {
		if r := out.Std / in.Std; r < *c.StdRatioMin {
			miss = append(miss, fmt.Sprintf("std ratio %.4f < %g (output std %.4f over input std %.4f)", r, *c.StdRatioMin, out.Std, in.Std))
		}
	}
	return miss
}

// JudgePair lists the reference criteria a pair's output misses against the reference:
// PSNR, SSIM, and out's deviation over ref's when ref's is large enough to judge.
func JudgePair(c schema.QualityCriteria, psnr, ssim float64, out, ref Stats) []string {
	var miss []string
	if c.PSNRMin != nil && psnr < *c.PSNRMin {
		miss = append(miss, fmt.Sprintf("psnr %.2f dB < %g", psnr, *c.PSNRMin))
	}
	if c.SSIMMin != nil && ssim < *c.SSIMMin {
		miss = append(miss, fmt.Sprintf("ssim %.4f < %g", ssim, *c.SSIMMin))
	}
	if c.RefStdRatioMin != nil && ref.Std >= c.RefStdRatioWhenRefStd && ref.Std > 0 {
		if r := out.Std / ref.Std; r < *c.RefStdRatioMin {
			miss = append(miss, fmt.Sprintf("reference std ratio %.4f < %g (output std %.4f over the reference image's %.4f)", r, *c.RefStdRatioMin, out.Std, ref.Std))
		}
	}
	return miss
}

// Ratio is out's deviation over in's (0 when the input is flat).
func Ratio(out, in Stats) float64 {
	if in.Std == 0 {
		return 0
	}
	return out.Std / in.Std
}

// Worst is the report row's quality cell: the worst value of each measure over every
// output (the lowest and highest mean, the lowest deviation and deviation ratio), then
// the pair's PSNR, SSIM and deviation ratio to its reference; "-" when nothing was measured.
func Worst(reqs []schema.QualityRequest, pair *schema.QualityPair) string {
	if len(reqs) == 0 {
		return "-"
	}
	lo, hi, std, ratio := reqs[0].Mean, reqs[0].Mean, reqs[0].Std, reqs[0].StdRatio
	for _, q := range reqs[1:] {
		lo, hi = math.Min(lo, q.Mean), math.Max(hi, q.Mean)
		std, ratio = math.Min(std, q.Std), math.Min(ratio, q.StdRatio)
	}
	s := fmt.Sprintf("mean %.3f-%.3f, std >= %.3f, std ratio >= %.3f", lo, hi, std, ratio)
	if pair != nil {
		s += fmt.Sprintf("; pair psnr %.2f dB, ssim %.4f, std ratio %.3f", pair.PSNR, pair.SSIM, pair.StdRatio)
	}
	return s
}
