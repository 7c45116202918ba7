package edit

// Result is one applied edit.
type Result struct {
	PNG          []byte
	OutputSHA256 string
	Settings     Effective
}

// Effective are the settings an edit actually ran with: what every response reports
// so that no reader has to guess a default.
type Effective struct {
	Edit              string  `json:"edit"`
	Width             int     `json:"width"`
	Height            int     `json:"height"`
	NumInferenceSteps int     `json:"num_inference_steps"`
	GuidanceScale     float64 `json:"guidance_scale"`
	Seed              uint64  `json:"seed"`
	Precision         string  `json:"precision"`
}

// Apply runs the whole pipeline on encoded image bytes: decode (header-first pixel
// limit), resize, edit, guidance blend, quantize, PNG encode. e comes from Match and
// s from ParseSettings on the same Program. Input errors are *InputError.
func (p *Program) Apply(image []byte, e *Edit, s Settings) (Result, error) {
	if e == nil {
		return Result{}, invalid("prompt", "no edit chosen")
	}
	if err := s.check(p.limits); err != nil {
		return Result{}, err
	}
	src, err := decode(image, p.limits.MaxPixels)
	if err != nil {
		return Result{}, err
	}
	w, h := s.Width, s.Height
	if w == 0 || h == 0 {
		// The input's size must be one this program could have been asked for: its
		// pixels are within the limit (decode checked), its sides may not be.
		if err := checkSize(src.w, src.h, p.limits); err != nil {
			return Result{}, invalid(FieldSize, "auto (the input's size, also when no size is given and the bundle has no default) is %dx%d: %v; give size=WxH", src.w, src.h, err)
		}
		w, h = src.w, src.h
	}
	base := resize(src, w, h)
	edited := e.op.apply(base, s)
	blend(base, edited, float32(s.GuidanceScale))
	data, err := encodePNG(quantize(edited))
	if err != nil {
		return Result{}, err
	}
	return Result{
		PNG:          data,
		OutputSHA256: SHA256(data),
		Settings: Effective{
			Edit:              e.Name,
			Width:             w,
			Height:            h,
			NumInferenceSteps: s.NumInferenceSteps,
			GuidanceScale:     s.GuidanceScale,
			Seed:              s.Seed,
			Precision:         Precision,
		},
	}, nil
}
