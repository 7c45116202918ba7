package edit

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// maxSeed is the largest seed a request may ask for: 2^63-1, so that every seed also
// fits a signed 64-bit integer in the clients that read it back.
const maxSeed = math.MaxInt64

// compile validates a bundle and turns its edit table into operations.
func compile(b Bundle) (*Program, error) {
	if b.Format != Format {
		return nil, fmt.Errorf("bundle format %q: want %q", b.Format, Format)
	}
	if b.Version != FormatVersion {
		return nil, fmt.Errorf("bundle format version %d: this build reads version %d", b.Version, FormatVersion)
	}
	if b.Checkpoint == "" {
		return nil, fmt.Errorf("bundle names no checkpoint: it cannot say what it serves")
	}
	if b.Precision != Precision {
		return nil, fmt.Errorf("bundle precision %q: want %q", b.Precision, Precision)
	}
	if err := checkLimits(b.Limits); err != nil {
		return nil, err
	}
	if err := Settings(b.Defaults).check(b.Limits); err != nil {
		return nil, fmt.Errorf("bundle defaults: %w", err)
	}
	if len(b.Edits) == 0 {
		return nil, fmt.Errorf("bundle has no edits")
	}
	p := &Program{bundle: b, limits: b.Limits}
	names := map[string]bool{}
	owner := map[string]string{}
	for _, spec := range b.Edits {
		if spec.Name == "" {
			return nil, fmt.Errorf("bundle edit with no name")
		}
		if names[spec.Name] {
			return nil, fmt.Errorf("bundle edit %q appears twice", spec.Name)
		}
		names[spec.Name] = true
		if len(spec.Keywords) == 0 {
			return nil, fmt.Errorf("edit %q has no keywords", spec.Name)
		}
		for _, k := range spec.Keywords {
			if k == "" || k != strings.ToLower(k) {
				return nil, fmt.Errorf("edit %q keyword %q: want a non-empty lowercase string", spec.Name, k)
			}
			if other, ok := owner[k]; ok {
				return nil, fmt.Errorf("edit %q keyword %q is also a keyword of %q", spec.Name, k, other)
			}
			owner[k] = spec.Name
		}
		op, err := compileOp(spec.Op)
		if err != nil {
			return nil, fmt.Errorf("edit %q: %w", spec.Name, err)
		}
		p.edits = append(p.edits, &Edit{Name: spec.Name, Keywords: spec.Keywords, op: op})
	}
	return p, nil
}

func checkLimits(l Limits) error {
	switch {
	case l.MaxPixels < 1:
		return fmt.Errorf("bundle limits: max_pixels %d: want at least 1", l.MaxPixels)
	case l.MaxSide < 1:
		return fmt.Errorf("bundle limits: max_side %d: want at least 1", l.MaxSide)
	case l.MaxNumInferenceSteps < 1:
		return fmt.Errorf("bundle limits: max_num_inference_steps %d: want at least 1", l.MaxNumInferenceSteps)
	case !(l.MaxGuidanceScale > 0) || math.IsInf(l.MaxGuidanceScale, 0):
		return fmt.Errorf("bundle limits: max_guidance_scale %v: want a finite number > 0", l.MaxGuidanceScale)
	}
	return nil
}

// checkSize is the one definition of an allowed output size.
func checkSize(w, h int, l Limits) error {
	if w < 1 || h < 1 || w > l.MaxSide || h > l.MaxSide {
		return fmt.Errorf("want W and H in 1..%d", l.MaxSide)
	}
	if int64(w)*int64(h) > int64(l.MaxPixels) {
		return fmt.Errorf("W*H = %d is over the pixel limit of %d", int64(w)*int64(h), l.MaxPixels)
	}
	return nil
}

// compileOp checks that an op carries exactly the fields its kind uses, with values
// that change the image (an edit that is a no-op is a broken bundle).
func compileOp(op Op) (operation, error) {
	var used Op
	var built operation
	var err error
	bad := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
	}
	var kernel []float32
	switch op.Kind {
	case OpAffine:
		used = Op{Kind: op.Kind, Matrix: op.Matrix, Offset: op.Offset}
		built, err = newAffine(op.Matrix, op.Offset)
	case OpGamma:
		used = Op{Kind: op.Kind, Exponent: op.Exponent}
		if !(op.Exponent > 0) || !finite(op.Exponent) || op.Exponent == 1 {
			bad("exponent %v: want a finite number > 0 other than 1", op.Exponent)
		}
		built = gammaOp{exponent: op.Exponent}
	case OpPosterize:
		used = Op{Kind: op.Kind, Levels: op.Levels}
		if op.Levels < 2 || op.Levels > 256 {
			bad("levels %d: want 2..256", op.Levels)
		}
		built = posterizeOp{levels: op.Levels}
	case OpRemap:
		used = Op{Kind: op.Kind, FlipX: op.FlipX, FlipY: op.FlipY}
		if !op.FlipX && !op.FlipY {
			bad("neither flip_x nor flip_y: changes nothing")
		}
		built = remapOp{flipX: op.FlipX, flipY: op.FlipY}
	case OpBoxBlur:
		used = Op{Kind: op.Kind, Kernel: op.Kernel}
		kernel, err = compileKernel(op.Kernel)
		built = boxBlurOp{kernel: kernel}
	case OpUnsharp:
		used = Op{Kind: op.Kind, Kernel: op.Kernel, Passes: op.Passes, Amount: op.Amount}
		kernel, err = compileKernel(op.Kernel)
		if op.Passes < 1 {
			bad("passes %d: want at least 1", op.Passes)
		}
		if op.Amount == 0 || !finite(op.Amount) {
			bad("amount %v: want a finite non-zero number", op.Amount)
		}
		built = unsharpOp{kernel: kernel, passes: op.Passes, amount: float32(op.Amount)}
	case OpBlockMean:
		used = Op{Kind: op.Kind, Block: op.Block}
		if op.Block < 2 {
			bad("block %d: want at least 2", op.Block)
		}
		built = blockMeanOp{block: op.Block}
	case OpGrain:
		used = Op{Kind: op.Kind, Amplitude: op.Amplitude}
		if op.Amplitude == 0 || !finite(op.Amplitude) {
			bad("amplitude %v: want a finite non-zero number", op.Amplitude)
		}
		built = grainOp{amplitude: float32(op.Amplitude)}
	default:
		return nil, fmt.Errorf("op kind %q: want one of %s", op.Kind,
			strings.Join([]string{OpAffine, OpGamma, OpPosterize, OpRemap, OpBoxBlur, OpUnsharp, OpBlockMean, OpGrain}, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	if !reflect.DeepEqual(op, used) {
		return nil, fmt.Errorf("op %s: carries fields its kind does not use", op.Kind)
	}
	return built, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
