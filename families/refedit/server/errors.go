package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"qualkit/families/refedit/edit"
)

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
