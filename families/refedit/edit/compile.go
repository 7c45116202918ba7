package edit

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
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
	owner := map[string]string{}
	for _, spec := range b.Edits {
		if spec.Name == "" {
			return nil, fmt.Errorf("bundle edit with no name")
		}
		if slices.ContainsFunc(p.edits, func(e *Edit) bool { return e.Name == spec.Name }) {
			return nil, fmt.Errorf("bundle edit %q appears twice", spec.Name)
		}
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

// The setting fields, named as on the HTTP form; the CLI flags are the same names
// with dashes.
const (
	FieldSize              = "size"
	FieldNumInferenceSteps = "num_inference_steps"
	FieldGuidanceScale     = "guidance_scale"
	FieldSeed              = "seed"
)

// SettingFields lists the fields ParseSettings reads.
func SettingFields() []string {
	return []string{FieldSize, FieldNumInferenceSteps, FieldGuidanceScale, FieldSeed}
}

// Settings are the knobs of one edit, defaults already filled in. Width and Height
// 0 mean "the input image's size" (size=auto, or a bundle without a default size),
// resolved once the image is decoded.
type Settings Defaults

// ParseSettings reads the setting fields from their string form (as a form or flags
// carry them) over the bundle defaults. Other keys in fields are ignored; an empty
// value is an error, not the default. Errors are *InputError naming the field and
// its allowed range.
func (p *Program) ParseSettings(fields map[string]string) (Settings, error) {
	l := p.limits
	s := Settings(p.bundle.Defaults)
	if v, ok := fields[FieldSize]; ok {
		w, h, err := parseSize(v, l)
		if err != nil {
			return Settings{}, err
		}
		s.Width, s.Height = w, h
	}
	if v, ok := fields[FieldNumInferenceSteps]; ok {
		n, ok := parseWhole(v)
		if !ok || n < 1 || n > uint64(l.MaxNumInferenceSteps) {
			return Settings{}, invalid(FieldNumInferenceSteps, "want an integer in 1..%d, got %q", l.MaxNumInferenceSteps, v)
		}
		s.NumInferenceSteps = int(n)
	}
	if v, ok := fields[FieldGuidanceScale]; ok {
		g, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(g) || !(g > 0) || g > l.MaxGuidanceScale {
			return Settings{}, invalid(FieldGuidanceScale, "want a number in (0, %v], got %q", l.MaxGuidanceScale, v)
		}
		s.GuidanceScale = g
	}
	if v, ok := fields[FieldSeed]; ok {
		n, ok := parseWhole(v)
		if !ok || n > maxSeed {
			return Settings{}, invalid(FieldSeed, "want an integer in 0..%d, got %q", uint64(maxSeed), v)
		}
		s.Seed = n
	}
	return s, nil
}

// SizeAuto asks for the input image's size, as OpenAI's images.edit does.
const SizeAuto = "auto"

func parseSize(v string, l Limits) (int, int, error) {
	want := "want WxH with W and H in 1..%d and W*H <= %d, or auto (the input's size)"
	if strings.EqualFold(strings.TrimSpace(v), SizeAuto) {
		return 0, 0, nil // resolved once the input is decoded (Apply)
	}
	ws, hs, ok := strings.Cut(strings.ToLower(strings.TrimSpace(v)), "x")
	if !ok {
		return 0, 0, invalid(FieldSize, want+", got %q", l.MaxSide, l.MaxPixels, v)
	}
	w, okW := parseWhole(ws)
	h, okH := parseWhole(hs)
	if !okW || !okH || w > uint64(l.MaxSide) || h > uint64(l.MaxSide) {
		return 0, 0, invalid(FieldSize, want+", got %q", l.MaxSide, l.MaxPixels, v)
	}
	if err := checkSize(int(w), int(h), l); err != nil {
		return 0, 0, invalid(FieldSize, want+", got %q (%v)", l.MaxSide, l.MaxPixels, v, err)
	}
	return int(w), int(h), nil
}

// parseWhole reads a non-negative decimal integer. A zero fraction ("4.0") is
// accepted because clients that hold every extra input as a number send that form;
// any other fraction, a sign or an exponent is not.
func parseWhole(v string) (uint64, bool) {
	v = strings.TrimSpace(v)
	if whole, frac, ok := strings.Cut(v, "."); ok {
		if strings.Trim(frac, "0") != "" {
			return 0, false
		}
		v = whole
	}
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// check guards Apply against Settings that did not come from ParseSettings.
func (s Settings) check(l Limits) error {
	if s.Width != 0 || s.Height != 0 {
		if err := checkSize(s.Width, s.Height, l); err != nil {
			return invalid(FieldSize, "%dx%d: %v", s.Width, s.Height, err)
		}
	}
	if s.NumInferenceSteps < 1 || s.NumInferenceSteps > l.MaxNumInferenceSteps {
		return invalid(FieldNumInferenceSteps, "want an integer in 1..%d, got %d", l.MaxNumInferenceSteps, s.NumInferenceSteps)
	}
	if !(s.GuidanceScale > 0) || s.GuidanceScale > l.MaxGuidanceScale {
		return invalid(FieldGuidanceScale, "want a number in (0, %v], got %v", l.MaxGuidanceScale, s.GuidanceScale)
	}
	if s.Seed > maxSeed {
		return invalid(FieldSeed, "want an integer in 0..%d, got %d", uint64(maxSeed), s.Seed)
	}
	return nil
}

// ErrInvalid marks an input the caller has to change (HTTP 400).
var ErrInvalid = errors.New("invalid input")

// ErrTooLarge marks an input over a configured limit (HTTP 413).
var ErrTooLarge = errors.New("input over the limit")

// InputError says which input is at fault and why. Param is the form field name
// ("size", "prompt", "image", ...); the CLI maps it to its flag. errors.Is on
// ErrInvalid or ErrTooLarge tells the two classes apart.
type InputError struct {
	Param   string
	Kind    error
	Message string
}

func (e *InputError) Error() string { return e.Param + ": " + e.Message }

func (e *InputError) Unwrap() error { return e.Kind }

func invalid(param, format string, args ...any) error {
	return &InputError{Param: param, Kind: ErrInvalid, Message: fmt.Sprintf(format, args...)}
}

func tooLarge(param, format string, args ...any) error {
	return &InputError{Param: param, Kind: ErrTooLarge, Message: fmt.Sprintf(format, args...)}
}
