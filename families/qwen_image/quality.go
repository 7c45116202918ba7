package qwenimage

import (
	"fmt"
	"path/filepath"

	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

var _ harness.QualityJudge = TRTMC{}

// Quality reads TRTMC's own criteria from the checkout's thresholds file (the
// threshold_overrides the correctness case applies): the pixel mean range and minimum
// deviation hold for every output the server returned. The reference criteria (psnr,
// ssim, the deviation ratio against the case's reference image) need the pair the case
// runs among the benchmark's requests; the workload does not send it yet, so they are
// not applied here, and the row's evidence says so (only these three are in criteria).
func (a TRTMC) Quality(harness.Env) (harness.QualitySpec, error) {
	l, err := a.layout()
	if err != nil {
		return harness.QualitySpec{}, err
	}
	t, err := ReadThresholds(a.Config.Checkout, l)
	if err != nil {
		return harness.QualitySpec{}, err
	}
	var c schema.QualityCriteria
	for _, b := range []struct {
		key string
		dst **float64
	}{{"min_pixel_mean", &c.MeanMin}, {"max_pixel_mean", &c.MeanMax}, {"min_pixel_std", &c.StdMin}} {
		v, ok := t[b.key]
		if !ok {
			return harness.QualitySpec{}, fmt.Errorf("TRTMC thresholds %s: no %s", l.Thresholds, b.key)
		}
		*b.dst = &v
	}
	return harness.QualitySpec{Files: []string{filepath.Join(a.Config.Checkout, l.Thresholds)}, Criteria: c}, nil
}
