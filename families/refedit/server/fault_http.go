package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"qualkit/families/refedit/edit"
)

// crashExitCode is what the crash fault exits with.
const crashExitCode = 3

// faults is a faulty server's fault and its count of edit requests. A Server without a
// fault has a nil *faults, and every hook below is then the server's normal behaviour.
type faults struct {
	Fault
	edits atomic.Int64
	exit  func(code int)
	logf  func(format string, args ...any)
}

func newFaults(f Fault, exit func(int), logf func(string, ...any)) *faults {
	if !f.On() {
		return nil
	}
	if exit == nil {
		exit = os.Exit
	}
	return &faults{Fault: f, exit: exit, logf: logf}
}

// route runs first on every request: it names the fault in the header and the JSON
// body, and replaces the request id for ignore-request-id.
func (f *faults) route(w http.ResponseWriter, id string) (http.ResponseWriter, string) {
	if f == nil {
		return w, id
	}
	if f.Name == FaultIgnoreRequestID {
		id = requestID("")
	}
	w.Header().Set(FaultHeader, f.String())
	return &faultWriter{ResponseWriter: w, field: `"fault":` + strconv.Quote(f.String())}, id
}

// admit counts an edit request whose body was read and, when it is the K-th, answers
// 500, sleeps (until the delay ends or the client leaves), or exits.
func (f *faults) admit(ctx context.Context) *apiError {
	if f == nil {
		return nil
	}
	n := int(f.edits.Add(1))
	if n != f.K {
		return nil
	}
	switch f.Name {
	case FaultStatus500:
		f.logf("fault %s: answering edit request %d with 500", f, n)
		return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf("fault %s: edit request %d fails on purpose", f, n)}
	case FaultSlow:
		f.logf("fault %s: edit request %d sleeps %s", f, n, f.Delay)
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return &apiError{status: statusClientClosed, message: fmt.Sprintf("fault %s: client went away during the delay: %v", f, ctx.Err())}
		}
	case FaultCrash:
		f.logf("fault %s: exiting with code %d on edit request %d", f, crashExitCode, n)
		f.exit(crashExitCode)
		// Only a test's exit returns.
		return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf("fault %s: the process should have exited", f)}
	}
	return nil
}

// unready says whether /health/ready must answer 503 although the bundle is loaded.
func (f *faults) unready() bool { return f != nil && f.Name == FaultNeverReady }

// acceptsUnknown: the accept-unknown fault drops unknown form fields.
func (f *faults) acceptsUnknown() bool { return f != nil && f.Name == FaultAcceptUnknown }

// apply is the edit call, with a Task fault when there is one.
func (f *faults) apply(p *edit.Program, img []byte, e *edit.Edit, s edit.Settings) (edit.Result, error) {
	if f == nil {
		return p.Apply(img, e, s)
	}
	return f.Fault.Apply(p, img, e, s)
}

// response is the body of a successful edit: an error and no image for error-json,
// the body without "timing" for no-timing. It runs before the record is written.
func (f *faults) response(resp *editResponse, x *exchange) any {
	if f == nil {
		return resp
	}
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
