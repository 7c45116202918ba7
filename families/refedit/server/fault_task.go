package server

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"

	xdraw "golang.org/x/image/draw"

	"qualkit/families/refedit/edit"
)

// Apply runs the edit with the fault's Task behaviour: the server's worker and
// `refedit run` both call it, so a Task fault is the same on both paths. A fault that
// is not a Task fault (or none) is p.Apply unchanged.
func (f Fault) Apply(p *edit.Program, img []byte, e *edit.Edit, s edit.Settings) (edit.Result, error) {
	if !f.Task() {
		return p.Apply(img, e, s)
	}
	switch f.Name {
	case FaultIgnoreSteps, FaultPinSize, FaultDropGuidance:
		return ignoreSetting(f.Name, p, img, e, s)
	}
	in := img
	if f.Name == FaultIgnoreReference || f.Name == FaultWeakReference {
		in = syntheticLike(img, p.Limits().MaxPixels)
	}
	if f.Name == FaultOtherEdit {
		e = nextEdit(p, e)
	}
	res, err := p.Apply(in, e, s)
	if err != nil || f.Name == FaultIgnoreReference || f.Name == FaultOtherEdit {
		return res, err
	}
	out := img
	switch f.Name {
	case FaultUnchanged:
	case FaultResizeOnly:
		out, err = resizedInput(img, res.PNG)
	case FaultWeakReference:
		out, err = markPixel(res.PNG, img)
	default:
		out, err = f.corrupt(res.PNG)
	}
	if err != nil {
		return edit.Result{}, fmt.Errorf("fault %s: %w", f.Name, err)
	}
	res.PNG, res.OutputSHA256 = out, edit.SHA256(out)
	return res, nil
}

// ignoreSetting runs the edit with one setting the request asked replaced (the bundle's
// default steps or guidance, or the pinned size), and reports the settings asked, as a
// server that drops a setting on its way to the model and echoes the request would.
func ignoreSetting(name string, p *edit.Program, img []byte, e *edit.Edit, asked edit.Settings) (edit.Result, error) {
	s, d := asked, p.Bundle().Defaults
	switch name {
	case FaultIgnoreSteps:
		s.NumInferenceSteps = d.NumInferenceSteps
	case FaultPinSize:
		s.Width, s.Height = PinnedSize, PinnedSize
	case FaultDropGuidance:
		s.GuidanceScale = d.GuidanceScale
	}
	res, err := p.Apply(img, e, s)
	if err != nil {
		return res, err
	}
	res.Settings.NumInferenceSteps, res.Settings.GuidanceScale = asked.NumInferenceSteps, asked.GuidanceScale
	if asked.Width != 0 {
		res.Settings.Width, res.Settings.Height = asked.Width, asked.Height
	}
	return res, nil
}

// nextEdit is the edit after e in the bundle's list (the first after the last): what
// another instruction would have given.
func nextEdit(p *edit.Program, e *edit.Edit) *edit.Edit {
	edits := p.Edits()
	for i, x := range edits {
		if x == e {
			return edits[(i+1)%len(edits)]
		}
	}
	return edits[0]
}

// resizedInput is the input image scaled (nearest neighbour) to the size of the edited
// PNG: a "model" that only resizes.
func resizedInput(input, edited []byte) ([]byte, error) {
	src, _, err := image.Decode(bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(edited))
	if err != nil {
		return nil, err
	}
	dst := image.NewNRGBA(image.Rect(0, 0, cfg.Width, cfg.Height))
	xdraw.NearestNeighbor.Scale(dst, dst.Rect, src, src.Bounds(), xdraw.Src, nil)
	var buf bytes.Buffer
	err = png.Encode(&buf, dst)
	return buf.Bytes(), err
}

// markPixel sets pixel (0,0)'s red to a byte of the input image's pixel data: the output
// depends on the reference image, but by one pixel only.
func markPixel(edited, input []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(edited))
	if err != nil {
		return nil, err
	}
	in, _, err := image.Decode(bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	img := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(img, img.Rect, src, b.Min, draw.Src)
	r, _, _, _ := in.At(in.Bounds().Min.X, in.Bounds().Min.Y).RGBA()
	img.Pix[0] = uint8(r >> 8)
	var buf bytes.Buffer
	err = png.Encode(&buf, img)
	return buf.Bytes(), err
}

// corrupt rewrites the edited PNG the way the fault says.
func (f Fault) corrupt(data []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	img := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(img, img.Rect, src, b.Min, draw.Src)
	switch f.Name {
	case FaultNondeterministic:
		// Every colour byte of the first pixels from a random word, alpha kept.
		word := rand.Uint64() | 1
		for i := 0; i < len(img.Pix) && word != 0; i++ {
			if i%4 != 3 {
				img.Pix[i] ^= byte(word)
				word >>= 8
			}
		}
	case FaultDrift:
		if img.Pix[0] == 0xff {
			img.Pix[0]--
		} else {
			img.Pix[0]++
		}
	case FaultWrongSize:
		wide := image.NewNRGBA(image.Rect(0, 0, b.Dx()+1, b.Dy()))
		draw.Draw(wide, img.Rect, img, image.Point{}, draw.Src)
		draw.Draw(wide, image.Rect(b.Dx(), 0, b.Dx()+1, b.Dy()), img, image.Pt(b.Dx()-1, 0), draw.Src)
		img = wide
	case FaultConstant:
		draw.Draw(img, img.Rect, image.NewUniform(color.NRGBA{0x80, 0x80, 0x80, 0xff}), image.Point{}, draw.Src)
	case FaultRotate90:
		// Clockwise: output (x, y) is input (y, H-1-x), the size W x H becomes H x W.
		turned := image.NewNRGBA(image.Rect(0, 0, b.Dy(), b.Dx()))
		for y := range b.Dx() {
			for x := range b.Dy() {
				turned.SetNRGBA(x, y, img.NRGBAAt(y, b.Dy()-1-x))
			}
		}
		img = turned
	case FaultJPEG:
		var buf bytes.Buffer
		err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90})
		return buf.Bytes(), err
	}
	var buf bytes.Buffer
	err = png.Encode(&buf, img)
	return buf.Bytes(), err
}

// syntheticLike is a fixed gradient of the input's size, what ignore-reference edits
// instead of the input. An input that does not decode, or is over the pixel limit, is
// returned as it is, so the edit reports the real error.
func syntheticLike(img []byte, maxPixels int) []byte {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 || cfg.Width*cfg.Height > maxPixels {
		return img
	}
	w, h := cfg.Width, cfg.Height
	g := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			g.SetNRGBA(x, y, color.NRGBA{uint8(x * 255 / max(w-1, 1)), uint8(y * 255 / max(h-1, 1)), 0x60, 0xff})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, g); err != nil {
		return img
	}
	return buf.Bytes()
}
