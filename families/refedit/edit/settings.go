package edit

import (
	"math"
	"strconv"
	"strings"
)

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
type Settings struct {
	Width             int
	Height            int
	NumInferenceSteps int
	GuidanceScale     float64
	Seed              uint64
}

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
