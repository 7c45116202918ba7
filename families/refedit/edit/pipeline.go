package edit

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
)

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

// blend is the guidance step out = B + g*(E - B), written into edited.
func blend(base, edited *raster, g float32) {
	for i, b := range base.pix {
		edited.pix[i] = b + float32(g*(edited.pix[i]-b))
	}
}

// quantize is v8 = floor(clamp(v, 0, 1) * 255 + 0.5) into an opaque 8-bit image.
func quantize(r *raster) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, r.w, r.h))
	for k := range r.w * r.h {
		for c := range 3 {
			img.Pix[k*4+c] = quantizeSample(r.pix[k*3+c])
		}
		img.Pix[k*4+3] = 0xff
	}
	return img
}

func quantizeSample(v float32) uint8 {
	// !(v > 0) also sends a NaN to 0 rather than to an undefined conversion.
	if !(v > 0) {
		v = 0
	} else if v > 1 {
		v = 1
	}
	// The value is in [0.5, 255.5], so the conversion's truncation is the floor.
	return uint8(float32(v*255) + 0.5)
}

// encodePNG writes an opaque image as an 8-bit RGB PNG (the encoder picks colour
// type 2 for a fully opaque RGBA image). The bytes depend only on the pixels and the
// Go release: BestSpeed keeps encoding cheap next to the edit itself.
func encodePNG(img *image.RGBA) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	return buf.Bytes(), nil
}
