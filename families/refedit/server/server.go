// Package server is refedit's HTTP front end: the OpenAI-style multipart route
// POST /v1/images/edits, the health and model routes, and the records file. It turns
// HTTP into calls on an edit.Program; it knows nothing of the edits themselves, of
// flags, or of the process it runs in (listening and shutdown belong to the CLI).
package server

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"qualkit/families/refedit/edit"
)

// Defaults for the Config fields left zero.
const (
	// DefaultMaxBodyBytes lets through a 50 MB image, OpenAI's limit on one images.edit
	// image, with the rest of the form.
	DefaultMaxBodyBytes = 64 << 20
	// DefaultMaxPromptBytes is OpenAI's limit on an image edit prompt (32,000
	// characters for gpt-image-1), counted in bytes here.
	DefaultMaxPromptBytes = 32000
	// DefaultBodyTimeout bounds reading one request body: a client that trickles its
	// body (slow-loris) gets 408 and loses its connection instead of holding it.
	DefaultBodyTimeout = time.Minute
	// Backend names the implementation in every response: refedit is not a network.
	Backend = "refedit"
)

// Config is what a Server is started with.
type Config struct {
	// ModelName is the one model served; a request's "model" must equal it.
	ModelName string
	// MaxBodyBytes bounds a request body (413 above it); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxPromptBytes bounds the prompt (413 above it); 0 means DefaultMaxPromptBytes.
	MaxPromptBytes int
	// BodyTimeout bounds reading a request body (408 past it); 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// QueueDepth is how many edits may wait while one runs (429 beyond that).
	QueueDepth int
	// Records receives one JSON line per edit request; nil writes none.
	Records io.Writer
	// Log receives one line per request; nil logs nothing.
	Log *log.Logger
	// Fault breaks the server on purpose, for negative controls (fault.go); the zero
	// Fault is none.
	Fault Fault
	// Exit ends the process for the crash fault; nil is os.Exit.
	Exit func(code int)
}

// Server is an http.Handler. It answers health probes from the start and edits once
// Load has given it a Program; until then /health/ready and edits are 503.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	program  atomic.Pointer[edit.Program]
	loadedAt atomic.Int64
	worker   *worker
	records  *records
	faults   *faults // nil unless Config.Fault is on

	// beforeTask, set only by this package's tests, runs in the worker slot just
	// before each edit so a test can hold the worker busy at a known point.
	beforeTask func()
}

// New checks cfg and returns a Server with no Program yet.
func New(cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("server: model name is empty")
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("server: max body bytes %d: want >= 0", cfg.MaxBodyBytes)
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxPromptBytes < 0 || cfg.BodyTimeout < 0 {
		return nil, fmt.Errorf("server: max prompt bytes %d, body timeout %s: want >= 0", cfg.MaxPromptBytes, cfg.BodyTimeout)
	}
	if cfg.MaxPromptBytes == 0 {
		cfg.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.QueueDepth < 0 {
		return nil, fmt.Errorf("server: queue depth %d: want >= 0", cfg.QueueDepth)
	}
	if err := cfg.Fault.Check(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{cfg: cfg, worker: newWorker(cfg.QueueDepth), records: &records{w: cfg.Records}}
	s.faults = newFaults(cfg.Fault, cfg.Exit, s.logf)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST "+EditRoute, s.handleEdit)
	s.mux.HandleFunc("GET /health/live", s.handleLive)
	s.mux.HandleFunc("GET /health/ready", s.handleReady)
	s.mux.HandleFunc("GET /v1/models", s.handleModels)
	// Every other method on a known path, and every unknown path, gets the JSON error
	// shape too (ServeMux's own 404 and 405 are plain text).
	for path, allow := range map[string]string{EditRoute: "POST", "/health/live": "GET, HEAD", "/health/ready": "GET, HEAD", "/v1/models": "GET, HEAD"} {
		s.mux.HandleFunc(path, methodNotAllowed(allow))
	}
	s.mux.HandleFunc("/", notFound)
	return s, nil
}

// Load makes p the Program edits run on and marks the server ready.
func (s *Server) Load(p *edit.Program) {
	s.loadedAt.Store(time.Now().Unix())
	s.program.Store(p)
}

// ServeHTTP settles the request id (echoed on every route), logs one line per
// request, and turns a panic outside the edit route into a 500.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r.Header.Get(RequestIDHeader))
	w, id = s.faults.route(w, id)
	r.Header.Set(RequestIDHeader, id)
	w.Header().Set(RequestIDHeader, id)
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			s.logf("panic: %s %s request_id=%s: %v\n%s", r.Method, r.URL.Path, id, v, debug.Stack())
			if !sw.wrote {
				writeError(sw, id, &apiError{status: http.StatusInternalServerError, message: "internal error"})
			}
		}
		s.logf("%s %s %d %.1fms request_id=%s", r.Method, r.URL.Path, sw.status, ms(time.Since(start)), id)
	}()
	s.mux.ServeHTTP(sw, r)
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		s.cfg.Log.Printf(format, args...)
	}
}

// statusWriter remembers the status for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.status, w.wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ms is a duration in milliseconds, microsecond resolution.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
