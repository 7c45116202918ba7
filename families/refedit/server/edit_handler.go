package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"qualkit/families/refedit/edit"
)

// EditRoute is the one image-edit route.
const EditRoute = "/v1/images/edits"

// statusClientClosed is recorded when the client left while its edit was queued
// (nginx's convention; no response reaches the client anyway).
const statusClientClosed = 499

// editResponse is the JSON of a successful edit.
type editResponse struct {
	Created   int64          `json:"created"`
	Model     string         `json:"model"`
	Backend   string         `json:"backend"`
	RequestID string         `json:"request_id"`
	Data      []imageData    `json:"data"`
	Settings  edit.Effective `json:"settings"`
	// Ignored are the OpenAI fields accepted without effect (form.go); absent when none.
	Ignored map[string]string `json:"ignored,omitempty"`
	Timing  Timing            `json:"timing"`
}

type imageData struct {
	B64JSON string `json:"b64_json"`
}

// exchange is one edit request on its way through the handler: what its record and
// its response will say.
type exchange struct {
	start    time.Time
	rec      Record
	taskRan  bool
	recorded bool
}

// handleEdit writes the record before the response, so a client that has its
// answer can rely on the record being in the file.
func (s *Server) handleEdit(w http.ResponseWriter, r *http.Request) {
	x := &exchange{start: time.Now()}
	x.rec = Record{RequestID: r.Header.Get(RequestIDHeader), Time: x.start.UTC().Format(time.RFC3339Nano), Route: EditRoute}
	defer func() {
		if v := recover(); v != nil {
			s.logf("panic: edit request_id=%s: %v\n%s", x.rec.RequestID, v, debug.Stack())
			if !x.recorded {
				s.respondError(w, x, &apiError{status: http.StatusInternalServerError, message: "internal error"})
			}
		}
	}()
	resp, apiErr := s.edit(w, r, x)
	if apiErr != nil {
		s.respondError(w, x, apiErr)
		return
	}
	x.rec.Status = http.StatusOK
	x.rec.Timing.HandlerMS = ms(time.Since(x.start))
	resp.Timing = x.rec.Timing
	body := s.faultResponse(resp, x)
	s.record(x)
	s.setServerTiming(w, x)
	writeJSON(w, http.StatusOK, body)
}

// edit validates the request, waits for the worker and runs the edit.
func (s *Server) edit(w http.ResponseWriter, r *http.Request, x *exchange) (*editResponse, *apiError) {
	p := s.program.Load()
	if p == nil {
		return nil, &apiError{status: http.StatusServiceUnavailable, message: "the bundle is not loaded yet; poll /health/ready"}
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge,
			message: fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", r.ContentLength, s.cfg.MaxBodyBytes)}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	// A body that trickles in must not hold its connection for ever. Recorders in tests
	// have no connection: ErrNotSupported is fine there.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	body := &countingReader{r: r.Body}
	r.Body = body
	form, apiErr := readForm(r, s.cfg.MaxPromptBytes, s.cfg.Fault.Name == FaultAcceptUnknown)
	if apiErr == nil {
		apiErr = body.checkLength(r.ContentLength)
	}
	if form.image != nil {
		sum := edit.SHA256(form.image)
		x.rec.InputSHA256 = &sum
	}
	if prompt, ok := form.fields[fieldPrompt]; ok {
		x.rec.Prompt = newPromptRecord(prompt)
	}
	if apiErr != nil {
		return nil, apiErr
	}
	// After the body is read, so that a client that leaves cancels r.Context().
	if apiErr := s.faultAdmit(r.Context()); apiErr != nil {
		return nil, apiErr
	}
	if apiErr := s.checkFields(form); apiErr != nil {
		return nil, apiErr
	}
	ignored, apiErr := checkOpenAI(form.fields)
	if apiErr != nil {
		return nil, apiErr
	}
	x.rec.Ignored = ignored
	settings, err := p.ParseSettings(form.fields)
	if err != nil {
		return nil, fromEditError(err)
	}
	chosen, err := p.Match(form.fields[fieldPrompt])
	if err != nil {
		return nil, fromEditError(err)
	}

	if !s.worker.admit() {
		return nil, &apiError{status: http.StatusTooManyRequests,
			message: fmt.Sprintf("the queue is full (%d waiting for the one worker); retry after 1 s", s.cfg.QueueDepth)}
	}
	defer s.worker.leave()
	var result edit.Result
	var taskErr error
	queued, waitErr := s.worker.run(r.Context(), func() {
		if s.beforeTask != nil {
			s.beforeTask()
		}
		// The edit runs on one thread, held for it, so that thread's CPU time is the
		// edit's work whatever else the host runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cpu := threadCPU()
		taskStart := time.Now()
		result, taskErr = s.cfg.Fault.Apply(p, form.image, chosen, settings)
		x.rec.Timing.TaskMS = ms(time.Since(taskStart))
		x.rec.Timing.TaskCPUMS = ms(threadCPU() - cpu)
		x.taskRan = true
	})
	x.rec.Timing.QueueMS = ms(queued)
	if !x.taskRan {
		return nil, &apiError{status: statusClientClosed, message: fmt.Sprintf("client went away while queued: %v", waitErr)}
	}
	if taskErr != nil {
		return nil, fromEditError(taskErr)
	}
	x.rec.Settings = &result.Settings
	x.rec.OutputSHA256 = &result.OutputSHA256
	return &editResponse{
		Created:   time.Now().Unix(),
		Model:     s.cfg.ModelName,
		Backend:   Backend,
		RequestID: x.rec.RequestID,
		Data:      []imageData{{B64JSON: base64.StdEncoding.EncodeToString(result.PNG)}},
		Settings:  result.Settings,
		Ignored:   ignored,
	}, nil
}

// checkFields enforces the fields the editor does not read.
func (s *Server) checkFields(f editForm) *apiError {
	if strings.TrimSpace(f.fields[fieldPrompt]) == "" {
		return badRequest(fieldPrompt, "prompt is required: the edit instruction")
	}
	if m, ok := f.fields[fieldModel]; ok && m != s.cfg.ModelName {
		return badRequest(fieldModel, fmt.Sprintf("model %s is not served here; this server serves %q", quoteBounded(m), s.cfg.ModelName))
	}
	if rf, ok := f.fields[fieldResponseFormat]; ok && rf != "b64_json" {
		return badRequest(fieldResponseFormat, fmt.Sprintf(`response_format %s: only "b64_json" is supported`, quoteBounded(rf)))
	}
	if n, ok := f.fields[fieldN]; ok && strings.TrimSpace(n) != "1" {
		return badRequest(fieldN, fmt.Sprintf("n %s: only 1 image per request is supported", quoteBounded(n)))
	}
	if f.image == nil {
		return badRequest("image", "image is required: one file part named image or image[]")
	}
	return nil
}

func (s *Server) respondError(w http.ResponseWriter, x *exchange, e *apiError) {
	x.rec.Status = e.status
	x.rec.Error = &e.message
	x.rec.Timing.HandlerMS = ms(time.Since(x.start))
	s.record(x)
	s.setServerTiming(w, x)
	if e.status == http.StatusRequestEntityTooLarge || e.status == http.StatusRequestTimeout {
		// The rest of an oversized or stalled body is never read; do not keep the connection.
		w.Header().Set("Connection", "close")
	}
	writeError(w, x.rec.RequestID, e)
}

// record writes x's line whole, in one Write, and flushes a buffered writer after it
// so a reader never sees half a record.
func (s *Server) record(x *exchange) {
	x.recorded = true
	if s.cfg.Records == nil {
		return
	}
	line, err := json.Marshal(x.rec)
	if err == nil {
		s.recordMu.Lock()
		defer s.recordMu.Unlock()
		_, err = s.cfg.Records.Write(append(line, '\n'))
	}
	if f, ok := s.cfg.Records.(interface{ Flush() error }); ok && err == nil {
		err = f.Flush()
	}
	if err != nil {
		s.logf("records: write %s: %v", x.rec.RequestID, err)
	}
}

func (s *Server) setServerTiming(w http.ResponseWriter, x *exchange) {
	if x.taskRan {
		w.Header().Set("Server-Timing", fmt.Sprintf("task;dur=%.3f", x.rec.Timing.TaskMS))
	}
}

// countingReader counts the body's bytes as the form is read.
type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// checkLength reads what the declared Content-Length says is left after the form's
// closing boundary (an epilogue is allowed) and refuses a body that ends before it, or
// that does not arrive within the body timeout, with a 400 that says so: otherwise the
// server would answer 200 only once the connection's drain timed out.
func (c *countingReader) checkLength(declared int64) *apiError {
	if declared <= 0 || c.n >= declared {
		return nil
	}
	left := declared - c.n
	got, err := io.Copy(io.Discard, io.LimitReader(c, left))
	if got == left {
		return nil
	}
	why := "it ended"
	if errors.Is(err, os.ErrDeadlineExceeded) {
		why = "nothing more arrived within the server's body timeout (--body-timeout)"
	}
	return badRequest("", fmt.Sprintf("the request body is %d bytes shorter than its Content-Length of %d: %s", left-got, declared, why))
}

// Record is one line of the records file, one per edit request, success or failure;
// a field that does not apply (yet) is null.
type Record struct {
	RequestID    string          `json:"request_id"`
	Time         string          `json:"time"`
	Route        string          `json:"route"`
	Status       int             `json:"status"`
	InputSHA256  *string         `json:"input_sha256"`
	Prompt       *PromptRecord   `json:"prompt"`
	Settings     *edit.Effective `json:"settings"`
	OutputSHA256 *string         `json:"output_sha256"`
	// Ignored are the OpenAI fields the request carried that cannot change the edit
	// (form.go), with their values (an identifier's length only); null when none.
	Ignored map[string]string `json:"ignored"`
	Timing  Timing            `json:"timing"`
	Error   *string           `json:"error"`
}

// PromptRecord identifies a prompt without storing it whole, so a record stays short.
type PromptRecord struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
	Prefix string `json:"prefix"` // at most maxPromptPrefix bytes, cut at a character boundary
}

// maxPromptPrefix is how much of a prompt a record keeps.
const maxPromptPrefix = 200

func newPromptRecord(p string) *PromptRecord {
	return &PromptRecord{SHA256: edit.SHA256([]byte(p)), Bytes: len(p), Prefix: prefix(p, maxPromptPrefix)}
}

// Timing is where one edit request's time went, in ms: the wait for the worker, the edit
// call (decode + edit + encode), its thread's CPU time (0 outside Linux), the handler.
type Timing struct {
	QueueMS   float64 `json:"queue_ms"`
	TaskMS    float64 `json:"task_ms"`
	TaskCPUMS float64 `json:"task_cpu_ms"`
	HandlerMS float64 `json:"handler_ms"`
}

// apiError is a failed request as the client sees it.
type apiError struct {
	status  int
	param   string // the form field at fault, "" when none
	message string
}

// errorBody is the JSON of an error response.
type errorBody struct {
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	// Code is OpenAI's error code field (the openai client's e.code): a short name of
	// what went wrong, by status.
	Code string `json:"code"`
}

// errorCodes name statuses the way OpenAI-compatible servers fill `code`; any other
// status is "server_error" from 500 up, else "invalid_request".
var errorCodes = map[int]string{
	http.StatusNotFound: "not_found", http.StatusMethodNotAllowed: "method_not_allowed", http.StatusRequestTimeout: "request_timeout",
	http.StatusRequestEntityTooLarge: "request_too_large", http.StatusUnsupportedMediaType: "unsupported_media_type",
	http.StatusTooManyRequests: "server_busy", http.StatusServiceUnavailable: "not_ready",
}

func errorCode(status int) string {
	if c, ok := errorCodes[status]; ok {
		return c
	}
	if status >= 500 {
		return "server_error"
	}
	return "invalid_request"
}

func badRequest(param, message string) *apiError {
	return &apiError{status: http.StatusBadRequest, param: param, message: message}
}

// fromEditError maps the editor's errors: over a limit is 413, other input errors 400,
// anything else (never expected) 500.
func fromEditError(err error) *apiError {
	var ie *edit.InputError
	switch {
	case errors.As(err, &ie) && errors.Is(err, edit.ErrTooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, param: ie.Param, message: err.Error()}
	case errors.As(err, &ie):
		return badRequest(ie.Param, err.Error())
	default:
		return &apiError{status: http.StatusInternalServerError, message: "edit failed: " + err.Error()}
	}
}

// errorType is "invalid_request_error" for what the client can fix (4xx) and
// "server_error" otherwise.
func errorType(status int) string {
	if status >= 400 && status < 500 {
		return "invalid_request_error"
	}
	return "server_error"
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, r.Header.Get(RequestIDHeader), &apiError{status: http.StatusMethodNotAllowed,
			message: fmt.Sprintf("method %s is not allowed on %s; use %s", quoteBounded(r.Method), r.URL.Path, allow)})
	}
}

func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r.Header.Get(RequestIDHeader), &apiError{status: http.StatusNotFound,
		message: fmt.Sprintf("no route %s %s; routes: POST %s, GET /health/live, GET /health/ready, GET /v1/models",
			quoteBounded(r.Method), quoteBounded(r.URL.Path), EditRoute)})
}

func writeError(w http.ResponseWriter, id string, e *apiError) {
	body := errorBody{Error: errorDetail{Message: e.message, Type: errorType(e.status), Code: errorCode(e.status)}, RequestID: id}
	if e.param != "" {
		body.Error.Param = &e.param
	}
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, e.status, body)
}

// writeJSON writes v without HTML escaping: a message that says "<=" reads "<=" to a
// curl user, not "\u003c=".
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	data := []byte(`{"error":{"message":"encode response","type":"server_error","param":null,"code":"server_error"}}` + "\n")
	if err := enc.Encode(v); err == nil {
		data = buf.Bytes()
	} else {
		// Only the server's own types get here; none of them can fail to encode.
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
