package qwenimage

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // TRTMC's test photo is a JPEG
	_ "image/png"
	"os"

	"qualkit/internal/harness"
)

// ConditionSizeError is a reference image whose size is not the bundle's condition size.
type ConditionSizeError struct {
	Manifest      string // fixtures manifest, as the row names it
	File          string
	Width, Height int
	Condition     string // the checkout's condition image
	CondW, CondH  int
}

func (e *ConditionSizeError) Error() string {
	return fmt.Sprintf("%s: reference image %s is %dx%d, but the bundle's condition image %s is %dx%d; "+
		"a Qwen-Image-Edit-2511 bundle compiles a static VAE condition grid from its condition image, so it only serves reference images of that size, and qualkit does not resize them behind your back",
		e.Manifest, e.File, e.Width, e.Height, e.Condition, e.CondW, e.CondH)
}

// Fix says what to do about it.
func (e *ConditionSizeError) Fix() string {
	return fmt.Sprintf("resize %s to %dx%d yourself (and pin it in fixtures/images/pool.json and %s), or remove it from the workload",
		e.File, e.CondW, e.CondH, e.Manifest)
}

// CheckConditionSize requires every reference image of a workload to have the size of
// the checkout's condition image (TRTMC's test photo, whose size the bundle's condition
// grid takes). It returns one error per image of another size.
func CheckConditionSize(manifest string, fx *harness.Fixtures, condition string, w, h int) []*ConditionSizeError {
	var errs []*ConditionSizeError
	for _, im := range fx.Images {
		if im.Width != w || im.Height != h {
			errs = append(errs, &ConditionSizeError{Manifest: manifest, File: im.File, Width: im.Width, Height: im.Height,
				Condition: condition, CondW: w, CondH: h})
		}
	}
	return errs
}

// imageSize decodes only an image file's header.
func imageSize(path string) (int, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Width, cfg.Height, nil
}
