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
	Condition     string // the condition image (the build's reference)
	CondW, CondH  int
}

func (e *ConditionSizeError) Error() string {
	return fmt.Sprintf("%s: reference image %s is %dx%d, but the bundle's condition image %s is %dx%d; "+
		"a Qwen-Image-Edit-2511 bundle compiles a static VAE condition grid from its condition image, so it only serves reference images of that size, and qualkit does not resize them behind your back",
		e.Manifest, e.File, e.Width, e.Height, e.Condition, e.CondW, e.CondH)
}

// Fix says what to do about it.
func (e *ConditionSizeError) Fix() string {
	return fmt.Sprintf("resize %s to %dx%d yourself (and pin its new sha256, bytes and size in %s), or remove it from the workload",
		e.File, e.CondW, e.CondH, e.Manifest)
}

// CheckConditionSize requires every reference image of a workload to have the size of its
// condition image: the first pair's image, which the harness passes to the build as
// BuildSpec.Reference. It returns one error per image of another size, and an error when
// the condition image itself is not the size this adapter builds for (ConditionWidth x
// ConditionHeight, that of TRTMC's own test photo).
func CheckConditionSize(manifest string, fx *harness.Fixtures) []error {
	cond := fx.Image(fx.Pairs[0].Image)
	var errs []error
	if cond.Width != ConditionWidth || cond.Height != ConditionHeight {
		errs = append(errs, fmt.Errorf("%s: the condition image %s (the first pair's) is %dx%d, but the adapter builds for %dx%d, the size of TRTMC's test photo that the correctness case edits: make the first pair use a %dx%d image",
			manifest, cond.File, cond.Width, cond.Height, ConditionWidth, ConditionHeight, ConditionWidth, ConditionHeight))
	}
	for _, im := range fx.Images {
		if im.Width != cond.Width || im.Height != cond.Height {
			errs = append(errs, &ConditionSizeError{Manifest: manifest, File: im.File, Width: im.Width, Height: im.Height,
				Condition: cond.File, CondW: cond.Width, CondH: cond.Height})
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
