package trtmcdouble

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// requestIDPattern is the X-Request-ID the server echoes; any other gets a fresh id.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

func requestID(given string) string {
	if requestIDPattern.MatchString(given) {
		return given
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// editFields are the multipart fields of POST /v1/images/edits; image is the one file.
var editFields = map[string]bool{
	"prompt": true, "image": true, "model": true, "n": true, "response_format": true, "size": true,
	"seed": true, "num_inference_steps": true, "true_cfg_scale": true, "guidance_scale": true, "negative_prompt": true,
}

type editRequest struct {
	prompt   string
	image    []byte
	settings Settings
}

// httpError is a request the server refuses, with its status and error type.
type httpError struct {
	status int
	typ    string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, a ...any) *httpError {
	return &httpError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, a...)}
}

// timing is in milliseconds.
type timing struct {
	QueueMS     float64 `json:"queue_ms"`
	ModelCallMS float64 `json:"model_call_ms"`
	HandlerMS   float64 `json:"handler_ms"`
}

type editResponse struct {
	Created int64               `json:"created"`
	Data    []map[string]string `json:"data"`
	Timing  timing              `json:"trtmc_timing"`
	Double  bool                `json:"qualkit_contract_double"`
}

type record struct {
	RequestID   string      `json:"request_id"`
	Route       string      `json:"route"`
	Operation   string      `json:"operation"`
	Backend     string      `json:"backend"`
	Time        float64     `json:"time"`
	Timing      timing      `json:"timing"`
	Observation observation `json:"observation"`
	Double      bool        `json:"qualkit_contract_double"`
}

type observation struct {
	Height    int    `json:"height"`
	Width     int    `json:"width"`
	MediaType string `json:"media_type"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// edits serves POST /v1/images/edits, one request at a time.
func (s *server) edits(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r.Header.Get("X-Request-ID"))
	w.Header().Set("X-Request-ID", id)
	if !s.ready() {
		serverError(w, http.StatusServiceUnavailable, "not_ready", "the model is loading; poll /health/ready")
		return
	}
	if !s.busy.TryLock() {
		w.Header().Set("Retry-After", "1")
		serverError(w, http.StatusTooManyRequests, "server_busy", "all model worker replicas are busy")
		return
	}
	defer s.busy.Unlock()
	req, err := s.parseEdit(w, r)
	if err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = &httpError{http.StatusInternalServerError, "internal_error", err.Error()}
		}
		serverError(w, he.status, he.typ, he.msg)
		return
	}
	if s.beforeEdit != nil {
		s.beforeEdit()
	}
	// The model call is the edit, as the worker times it (editCPU): not the image's
	// decoding before, nor the PNG's encoding after.
	img, err := decodeImage(req.image)
	callStart := time.Now()
	var out *image.NRGBA
	var call time.Duration
	if err == nil {
		out, call, err = editCPU(img, req.prompt, req.settings)
	}
	var png []byte
	if err == nil {
		png, err = encodePNG(out)
	}
	if err != nil {
		serverError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	item := map[string]string{"b64_json": base64.StdEncoding.EncodeToString(png)}
	t := timing{QueueMS: ms(callStart.Sub(start)), ModelCallMS: ms(call), HandlerMS: ms(time.Since(start))}
	if err := s.record(id, t, req.settings); err != nil {
		serverError(w, http.StatusInternalServerError, "internal_error", "--records: "+err.Error())
		return
	}
	w.Header().Set("Server-Timing", fmt.Sprintf("model;dur=%.3f", t.ModelCallMS))
	writeJSONResponse(w, http.StatusOK, editResponse{Created: time.Now().Unix(), Data: []map[string]string{item}, Timing: t, Double: true})
}

// record appends the request's line to --records, unbuffered: before the response is sent.
func (s *server) record(id string, t timing, st Settings) error {
	if s.records == nil {
		return nil
	}
	line, err := json.Marshal(record{RequestID: id, Route: "/v1/images/edits", Operation: "generate_image", Backend: "trtmc",
		Time: float64(time.Now().UnixMicro()) / 1e6, Timing: t,
		Observation: observation{Height: st.Height, Width: st.Width, MediaType: "image"}, Double: true})
	if err != nil {
		return err
	}
	_, err = s.records.Write(append(line, '\n'))
	return err
}

// parseEdit reads the multipart form and validates every field. The body limit is
// --max-body-bytes as app.py @ a9ed5f69's _BodyLimitMiddleware applies it: the declared
// Content-Length first, then the bytes as they are read; either over it is 413
// content_too_large "request body exceeds limit".
func (s *server) parseEdit(w http.ResponseWriter, r *http.Request) (editRequest, error) {
	tooLarge := &httpError{http.StatusRequestEntityTooLarge, "content_too_large", "request body exceeds limit"}
	if cl := r.Header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil {
			return editRequest{}, &httpError{http.StatusBadRequest, "invalid_request", "invalid Content-Length header"}
		}
		if n > s.cfg.maxBody {
			return editRequest{}, tooLarge
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.maxBody)
	values, files, err := readForm(r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return editRequest{}, tooLarge
		}
		return editRequest{}, err
	}
	if unknown := unknownFields(values, files); len(unknown) > 0 {
		return editRequest{}, badRequest("unsupported fields: %s", strings.Join(unknown, ", "))
	}
	if _, ok := values["image"]; ok {
		return editRequest{}, badRequest("image must be a file part, not a text field")
	}
	if len(files) > 1 || (len(files) == 1 && files["image"] == nil) {
		return editRequest{}, badRequest("only image may be a file part")
	}
	req := editRequest{prompt: values["prompt"], image: files["image"]}
	switch {
	case req.prompt == "":
		return req, badRequest("prompt is required")
	case req.image == nil:
		return req, badRequest("image is required")
	}
	if _, _, err := imageSize(req.image); err != nil {
		return req, badRequest("image: %v", err)
	}
	if m, ok := values["model"]; ok && m != s.model {
		return req, badRequest("model %q is not served here; this server serves %q", m, s.model)
	}
	if n, ok := values["n"]; ok && n != "1" {
		return req, badRequest("n must be 1 (got %q): one image per request", n)
	}
	if err := s.checkResponseFormat(values["response_format"]); err != nil {
		return req, err
	}
	req.settings, err = formSettings(values, DefaultSettings(s.cfg.header))
	return req, err
}

// readForm reads a multipart/form-data body; a field given twice is an error.
func readForm(r *http.Request) (map[string]string, map[string][]byte, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, badRequest("the body must be multipart/form-data: %v", err)
	}
	values, files := map[string]string{}, map[string][]byte{}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return values, files, nil
		}
		if err != nil {
			return nil, nil, wrapBodyError(err)
		}
		name := part.FormName()
		b, err := io.ReadAll(part)
		if err != nil {
			return nil, nil, wrapBodyError(err)
		}
		_, dupV := values[name]
		_, dupF := files[name]
		if dupV || dupF {
			return nil, nil, badRequest("field %s is given twice", name)
		}
		if part.FileName() != "" {
			files[name] = b
		} else {
			values[name] = string(b)
		}
	}
}

func wrapBodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return err
	}
	return badRequest("malformed multipart body: %v", err)
}

func unknownFields(values map[string]string, files map[string][]byte) []string {
	var unknown []string
	for k := range values {
		if !editFields[k] {
			unknown = append(unknown, k)
		}
	}
	for k := range files {
		if !editFields[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return unknown
}

// checkResponseFormat: the stage-7 report's route answers b64_json (AIPerf asks for it).
func (s *server) checkResponseFormat(rf string) error {
	if rf != "" && rf != "b64_json" {
		return badRequest("response_format must be b64_json, not %q", rf)
	}
	return nil
}

func formSettings(v map[string]string, st Settings) (Settings, error) {
	if size, ok := v["size"]; ok {
		ws, hs, found := strings.Cut(size, "x")
		w, errW := strconv.Atoi(ws)
		h, errH := strconv.Atoi(hs)
		if !found || errW != nil || errH != nil {
			return st, badRequest("size %q is not WxH", size)
		}
		st.Width, st.Height = w, h
	}
	var err error
	if s, ok := v["seed"]; ok {
		if st.Seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			return st, badRequest("seed %q is not an integer", s)
		}
	}
	if s, ok := v["num_inference_steps"]; ok {
		if st.Steps, err = strconv.Atoi(s); err != nil {
			return st, badRequest("num_inference_steps %q is not an integer", s)
		}
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{"true_cfg_scale", &st.CFGScale}, {"guidance_scale", &st.GuidanceScale}} {
		if s, ok := v[f.name]; ok {
			if *f.dst, err = strconv.ParseFloat(s, 64); err != nil {
				return st, badRequest("%s %q is not a number", f.name, s)
			}
		}
	}
	if s, ok := v["negative_prompt"]; ok {
		st.NegativePrompt = s
	}
	if err := st.validate(); err != nil {
		return st, badRequest("%v", err)
	}
	return st, nil
}

func writeJSONResponse(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serverError is trtmc-server's error body (app.py @ a9ed5f69 § error_response):
// {"error": {"message", "type", "param", "code"}}, type by status.
func serverError(w http.ResponseWriter, status int, code, msg string) {
	typ := "invalid_request_error"
	switch {
	case status >= 500:
		typ = "server_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	}
	writeJSONResponse(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}
