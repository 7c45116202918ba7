package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	xdraw "golang.org/x/image/draw"

	"qualkit/families/refedit/edit"
)

// The faults: refedit broken on purpose, only when asked (Config.Fault, `--fault`), so
// qualkit can prove each gate fails (README "Fault injection"). Task faults change the
// edit's output, so `refedit run` takes them too; the others are the server's alone.
const (
	FaultIgnoreReference  = "ignore-reference"
	FaultNondeterministic = "nondeterministic"
	FaultDrift            = "drift"
	FaultWrongSize        = "wrong-size"
	FaultJPEG             = "jpeg"
	FaultConstant         = "constant"
	FaultUnchanged        = "unchanged"
	FaultResizeOnly       = "resize-only"
	FaultOtherEdit        = "other-instruction"
	FaultRotate90         = "rotate90"
	FaultWeakReference    = "weak-reference"
	FaultStatus500        = "status-500"
	FaultErrorJSON        = "error-json"
	FaultSlow             = "slow"
	FaultCrash            = "crash"
	FaultNoTiming         = "no-timing"
	FaultIgnoreRequestID  = "ignore-request-id"
	FaultNeverReady       = "never-ready"
	FaultIgnoreSteps      = "ignore-steps"
	FaultPinSize          = "pin-size"
	FaultDropGuidance     = "drop-guidance"
	FaultAcceptUnknown    = "accept-unknown"
)

// PinnedSize is the size the pin-size fault always edits at: the workload's own, so
// only a request for another size shows the fault.
const PinnedSize = 512

// DefaultFaultDelay is how long the slow fault's request sleeps unless told otherwise.
const DefaultFaultDelay = 10 * time.Second

// FaultHeader names the fault on every response of a faulty server.
const FaultHeader = "X-Refedit-Fault"

type faultKind struct {
	name    string
	counted bool // hits only the K-th edit request (":K", default 1)
	task    bool
	what    string
}

var faultKinds = []faultKind{
	{FaultIgnoreReference, false, true, "edits a fixed synthetic image of the input's size instead of the input"},
	{FaultNondeterministic, false, true, "random bytes in the first pixels: the output differs call to call"},
	{FaultDrift, false, true, "pixel (0,0) one level off in red: the other path (HTTP or native) no longer matches"},
	{FaultWrongSize, false, true, "one column wider than the requested size"},
	{FaultJPEG, false, true, "a JPEG instead of a PNG"},
	{FaultConstant, false, true, "a constant grey image of the requested size"},
	{FaultUnchanged, false, true, "the input bytes as the output"},
	{FaultResizeOnly, false, true, "the input resized (nearest neighbour) to the requested size, not edited"},
	{FaultOtherEdit, false, true, "a plausible edit of the input, but another instruction's (the bundle's next edit)"},
	{FaultRotate90, false, true, "the right edit, turned 90 degrees (square sizes keep their size)"},
	{FaultWeakReference, false, true, "ignore-reference, but pixel (0,0) takes its red from the input's first byte of pixel data"},
	{FaultStatus500, true, false, "the K-th edit request answers 500"},
	{FaultErrorJSON, false, false, `every edit answers 200 with {"error": ...} and no image`},
	{FaultSlow, true, false, "the K-th edit request sleeps --fault-delay before it runs"},
	{FaultCrash, true, false, "the process exits (code 3) on the K-th edit request, before answering"},
	{FaultNoTiming, false, false, `no "timing" in the response body`},
	{FaultIgnoreRequestID, false, false, "X-Request-ID is not honoured: a fresh id in the header, the body and the records"},
	{FaultNeverReady, false, false, "/health/ready answers 503 for ever, as if the model never loaded"},
	{FaultIgnoreSteps, false, true, "runs the bundle's default num_inference_steps whatever the request asks, and records the steps asked"},
	{FaultPinSize, false, true, "edits at 512x512 whatever size the request asks, and records the size asked"},
	{FaultDropGuidance, false, true, "runs the bundle's default guidance_scale whatever the request asks, and records the guidance asked"},
	{FaultAcceptUnknown, false, false, "an unknown form field is dropped and the edit answers 200, instead of a 400 naming it"},
}

// Fault is one injected fault; the zero value is none.
type Fault struct {
	Name  string
	K     int           // status-500, slow, crash: the edit request they hit (1-based, counted once its body is read)
	Delay time.Duration // slow: how long that request sleeps
}

// FaultNames lists every fault, in the order the README documents them.
func FaultNames() []string { return faultNames(func(faultKind) bool { return true }) }

// TaskFaultNames lists the faults that change the edit's output (those `refedit run` takes).
func TaskFaultNames() []string { return faultNames(func(k faultKind) bool { return k.task }) }

func faultNames(keep func(faultKind) bool) []string {
	var names []string
	for _, k := range faultKinds {
		if keep(k) {
			names = append(names, k.name)
		}
	}
	return names
}

func kindOf(name string) (faultKind, bool) {
	for _, k := range faultKinds {
		if k.name == name {
			return k, true
		}
	}
	return faultKind{}, false
}

// ParseFault reads NAME or NAME:K. The empty string is no fault.
func ParseFault(spec string) (Fault, error) {
	if spec == "" {
		return Fault{}, nil
	}
	name, ks, hasK := strings.Cut(spec, ":")
	kind, ok := kindOf(name)
	if !ok {
		return Fault{}, fmt.Errorf("unknown fault %q: want one of %s", name, strings.Join(FaultNames(), ", "))
	}
	f := Fault{Name: name}
	switch {
	case kind.counted && !hasK:
		f.K = 1
	case kind.counted:
		k, err := strconv.Atoi(ks)
		if err != nil || k < 1 {
			return Fault{}, fmt.Errorf("fault %q: K must be an edit request number >= 1, got %q", spec, ks)
		}
		f.K = k
	case hasK:
		return Fault{}, fmt.Errorf("fault %q: %s takes no :K (only %s do)", spec, name, strings.Join(faultNames(func(k faultKind) bool { return k.counted }), ", "))
	}
	if name == FaultSlow {
		f.Delay = DefaultFaultDelay
	}
	return f, nil
}

// On says whether a fault is injected.
func (f Fault) On() bool { return f.Name != "" }

// Task says whether the fault changes the edit's output (and so applies to `refedit run`).
func (f Fault) Task() bool {
	k, _ := kindOf(f.Name)
	return k.task
}

// String is the spec: NAME, or NAME:K for the faults that hit one request.
func (f Fault) String() string {
	if f.K > 0 {
		return fmt.Sprintf("%s:%d", f.Name, f.K)
	}
	return f.Name
}

// Describe says what the fault does, for the loud line a faulty process logs at start.
func (f Fault) Describe() string {
	k, _ := kindOf(f.Name)
	if f.Name == FaultSlow {
		return strings.ReplaceAll(k.what, "--fault-delay", f.Delay.String())
	}
	return k.what
}

// Check rejects a Fault that ParseFault would not have made.
func (f Fault) Check() error {
	if !f.On() {
		return nil
	}
	g, err := ParseFault(f.String())
	if err == nil && (g.K != f.K || (g.Delay > 0) != (f.Delay > 0)) {
		err = fmt.Errorf("fault %s: K %d, delay %s: not a fault ParseFault makes", f.Name, f.K, f.Delay)
	}
	return err
}

// crashExitCode is what the crash fault exits with.
const crashExitCode = 3

// faultRoute runs first on every request: it names the fault in the header and the JSON
// body, and replaces the request id for ignore-request-id.
func (s *Server) faultRoute(w http.ResponseWriter, id string) (http.ResponseWriter, string) {
	f := s.cfg.Fault
	if !f.On() {
		return w, id
	}
	if f.Name == FaultIgnoreRequestID {
		id = requestID("")
	}
	w.Header().Set(FaultHeader, f.String())
	return &faultWriter{ResponseWriter: w, field: `"fault":` + strconv.Quote(f.String())}, id
}

// faultAdmit counts an edit request whose body was read and, when it is the K-th of a
// counted fault, answers 500, sleeps (until the delay ends or the client leaves), or exits.
func (s *Server) faultAdmit(ctx context.Context) *apiError {
	f := s.cfg.Fault
	n := int(s.edits.Add(1))
	if n != f.K {
		return nil
	}
	switch f.Name {
	case FaultStatus500:
		s.logf("fault %s: answering edit request %d with 500", f, n)
		return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf("fault %s: edit request %d fails on purpose", f, n)}
	case FaultSlow:
		s.logf("fault %s: edit request %d sleeps %s", f, n, f.Delay)
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return &apiError{status: statusClientClosed, message: fmt.Sprintf("fault %s: client went away during the delay: %v", f, ctx.Err())}
		}
	case FaultCrash:
		s.logf("fault %s: exiting with code %d on edit request %d", f, crashExitCode, n)
		s.cfg.Exit(crashExitCode)
		// Only a test's exit returns.
		return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf("fault %s: the process should have exited", f)}
	}
	return nil
}

// unready says whether /health/ready must answer 503 although the bundle is loaded.
func (s *Server) unready() bool { return s.cfg.Fault.Name == FaultNeverReady }

// faultResponse is the body of a successful edit: an error and no image for error-json,
// the body without "timing" for no-timing. It runs before the record is written.
func (s *Server) faultResponse(resp *editResponse, x *exchange) any {
	f := s.cfg.Fault
	switch f.Name {
	case FaultErrorJSON:
		msg := fmt.Sprintf("fault %s: the edit ran, the answer is an error and no image", f)
		x.rec.Error = &msg
		return errorBody{Error: errorDetail{Message: msg, Type: errorType(http.StatusInternalServerError)}, RequestID: x.rec.RequestID}
	case FaultNoTiming:
		var m map[string]json.RawMessage
		data, err := json.Marshal(resp)
		if err == nil && json.Unmarshal(data, &m) == nil {
			delete(m, "timing")
			return m
		}
	}
	return resp
}

// faultWriter puts "fault": NAME first in a JSON object body (every body the server
// writes is one object, written in one Write).
type faultWriter struct {
	http.ResponseWriter
	field   string
	written bool
}

func (w *faultWriter) Write(b []byte) (int, error) {
	if w.written || len(b) < 2 || b[0] != '{' {
		w.written = true
		return w.ResponseWriter.Write(b)
	}
	w.written = true
	sep := ","
	if b[1] == '}' {
		sep = ""
	}
	if _, err := w.ResponseWriter.Write(append([]byte("{"+w.field+sep), b[1:]...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Unwrap lets http.ResponseController reach the connection.
func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
	if f.Name == FaultOtherEdit { // the edit after e in the bundle's list: another instruction's
		edits := p.Edits()
		e = edits[(slices.Index(edits, e)+1)%len(edits)]
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
	return encodePNG(dst)
}

// markPixel sets pixel (0,0)'s red to a byte of the input image's pixel data: the output
// depends on the reference image, but by one pixel only.
func markPixel(edited, input []byte) ([]byte, error) {
	img, err := decodeNRGBA(edited)
	if err != nil {
		return nil, err
	}
	in, _, err := image.Decode(bytes.NewReader(input))
	if err != nil {
		return nil, err
	}
	r, _, _, _ := in.At(in.Bounds().Min.X, in.Bounds().Min.Y).RGBA()
	img.Pix[0] = uint8(r >> 8)
	return encodePNG(img)
}

// decodeNRGBA decodes a PNG into a fresh NRGBA image a fault may change.
func decodeNRGBA(data []byte) (*image.NRGBA, error) {
	src, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	img := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(img, img.Rect, src, b.Min, draw.Src)
	return img, nil
}

func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	err := png.Encode(&buf, img)
	return buf.Bytes(), err
}

// corrupt rewrites the edited PNG the way the fault says.
func (f Fault) corrupt(data []byte) ([]byte, error) {
	img, err := decodeNRGBA(data)
	if err != nil {
		return nil, err
	}
	b := img.Bounds()
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
	return encodePNG(img)
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
	if out, err := encodePNG(g); err == nil {
		return out
	}
	return img
}
