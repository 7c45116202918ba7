package refedit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// qualityFile is where the family states what a good edit is (the quality stage's criteria).
const qualityFile = "families/refedit/quality.json"

// quality reads the family's criteria from quality.json, and names the pair its
// correctness case also runs: the benchmark's first pair (photo-grayscale), whose
// reference image the case writes as reference/pair-photo-grayscale.png.
func quality(env family.Env) (family.QualitySpec, error) {
	path := filepath.Join(env.Root, qualityFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return family.QualitySpec{}, err
	}
	var f struct {
		PixelMean struct{ Min, Max *float64 } `json:"pixel_mean"`
		PixelStd  struct{ Min *float64 }      `json:"pixel_std"`
		StdRatio  struct {
			Min          *float64 `json:"min"`
			WhenInputStd float64  `json:"when_input_std_at_least"`
		} `json:"std_ratio"`
		Pair struct {
			PSNRMin *float64 `json:"psnr_min"`
			SSIMMin *float64 `json:"ssim_min"`
		} `json:"pair"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return family.QualitySpec{}, fmt.Errorf("%s: %w", qualityFile, err)
	}
	c := schema.QualityCriteria{MeanMin: f.PixelMean.Min, MeanMax: f.PixelMean.Max, StdMin: f.PixelStd.Min,
		StdRatioMin: f.StdRatio.Min, StdRatioWhenInputStd: f.StdRatio.WhenInputStd, PSNRMin: f.Pair.PSNRMin, SSIMMin: f.Pair.SSIMMin}
	if c.MeanMin == nil || c.MeanMax == nil || c.StdMin == nil || c.StdRatioMin == nil || c.PSNRMin == nil || c.SSIMMin == nil {
		return family.QualitySpec{}, fmt.Errorf("%s: pixel_mean.min/max, pixel_std.min, std_ratio.min and pair.psnr_min/ssim_min are required", qualityFile)
	}
	return family.QualitySpec{Files: []string{path}, Criteria: c, Pair: &family.QualityPair{
		Image:     filepath.Join(env.Root, "fixtures", "images", "photo-640x382.png"),
		Prompt:    "Turn this photo into black and white",
		Reference: pairReference,
	}}, nil
}
