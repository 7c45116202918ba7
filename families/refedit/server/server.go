// Package server is refedit's HTTP front end (POST /v1/images/edits, health, models,
// the records file): HTTP into calls on an edit.Program; listening belongs to the CLI.
package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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

// Config is what a Server is started with; a zero bound takes its Default.
type Config struct {
	ModelName      string         // the one model served; a request's "model" must equal it
	MaxBodyBytes   int64          // 413 above it
	MaxPromptBytes int            // 413 above it
	BodyTimeout    time.Duration  // 408 past it
	QueueDepth     int            // edits that may wait while one runs (429 beyond)
	Records        io.Writer      // one JSON line per edit request; nil writes none
	Log            *log.Logger    // one line per request; nil logs nothing
	Fault          Fault          // broken on purpose, for negative controls; zero is none
	Exit           func(code int) // ends the process for the crash fault; nil is os.Exit
}

// Server is an http.Handler. It answers health probes from the start and edits once
// Load has given it a Program; until then /health/ready and edits are 503.
type Server struct {
	cfg      Config
	mux      *http.ServeMux
	program  atomic.Pointer[edit.Program]
	loadedAt atomic.Int64
	worker   *worker
	recordMu sync.Mutex   // one record line written at a time
	edits    atomic.Int64 // edit requests whose body was read, counted for a fault

	// beforeTask (tests only) runs in the worker slot before each edit: a test holds it busy.
	beforeTask func()
}

// New checks cfg and returns a Server with no Program yet.
func New(cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, errors.New("server: model name is empty")
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxPromptBytes < 0 || cfg.BodyTimeout < 0 || cfg.QueueDepth < 0 {
		return nil, fmt.Errorf("server: max body bytes %d, max prompt bytes %d, body timeout %s, queue depth %d: want >= 0",
			cfg.MaxBodyBytes, cfg.MaxPromptBytes, cfg.BodyTimeout, cfg.QueueDepth)
	}
	cfg.MaxBodyBytes = cmp.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	cfg.MaxPromptBytes = cmp.Or(cfg.MaxPromptBytes, DefaultMaxPromptBytes)
	cfg.BodyTimeout = cmp.Or(cfg.BodyTimeout, DefaultBodyTimeout)
	if cfg.Exit == nil {
		cfg.Exit = os.Exit
	}
	if err := cfg.Fault.Check(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{cfg: cfg, worker: newWorker(cfg.QueueDepth)}
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
	w, id = s.faultRoute(w, id)
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

func (s *Server) handleLive(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
}

// handleReady is 503 until Load, then names the bundle it serves.
func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	p := s.program.Load()
	if p == nil || s.unready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "model": s.cfg.ModelName, "bundle_sha256": p.SHA256()})
}

type modelList struct {
	Object string  `json:"object"`
	Data   []model `json:"data"`
}

type model struct {
	ID           string `json:"id"`
	Object       string `json:"object"`
	Created      int64  `json:"created"`
	OwnedBy      string `json:"owned_by"`
	Backend      string `json:"backend"`
	Checkpoint   string `json:"checkpoint"` // the bundle's: what is really served, whatever the --model-name
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
}

// handleModels lists the one model; created is when its bundle was loaded.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	// The model is listed once it can be served (as /health/ready answers 200), never
	// before: a client that waits for it here sends no request to a loading server.
	data := []model{}
	if p := s.program.Load(); p != nil && !s.unready() {
		data = append(data, model{ID: s.cfg.ModelName, Object: "model", Created: s.loadedAt.Load(), OwnedBy: "qualkit", Backend: Backend, Checkpoint: p.Bundle().Checkpoint, BundleSHA256: p.SHA256()})
	}
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: data})
}

// maxQuoted is the most of a client's text an error message or a record repeats.
const maxQuoted = 64

// quoteBounded quotes s, or its first maxQuoted bytes (cut at a character boundary) and
// how long the whole was.
func quoteBounded(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(prefix(s, maxQuoted)), len(s))
}

// prefix is at most n bytes of s, cut at a character boundary so it stays valid UTF-8
// where s was.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// RequestIDHeader is honoured when present and echoed in the header, the body and
// the records file.
const RequestIDHeader = "X-Request-ID"

// maxRequestID bounds an honoured id; longer ones are replaced, like malformed ones.
const maxRequestID = 200

// requestID returns the client's id when it is 1..200 visible ASCII characters, else
// a fresh UUIDv4 (the form AIPerf sends).
func requestID(given string) string {
	if len(given) > 0 && len(given) <= maxRequestID && strings.IndexFunc(given, func(r rune) bool { return r < 0x21 || r > 0x7e }) < 0 {
		return given
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// worker is the single slot every edit runs in and the bounded queue in front of it.
// Admission is counted when the request arrives (running + waiting <= 1 + depth), so
// whether the queue is full never depends on goroutine scheduling.
type worker struct {
	admitted chan struct{} // capacity 1 + depth
	slot     chan struct{} // capacity 1: held while an edit runs
}

func newWorker(depth int) *worker {
	return &worker{admitted: make(chan struct{}, 1+depth), slot: make(chan struct{}, 1)}
}

// admit reserves a place in the queue; false means it is full. Call leave after.
func (w *worker) admit() bool {
	select {
	case w.admitted <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *worker) leave() { <-w.admitted }

// run waits for the slot (waiters are served in arrival order), runs task in it, and
// returns how long it waited. A cancelled ctx ends the wait without running task.
func (w *worker) run(ctx context.Context, task func()) (time.Duration, error) {
	start := time.Now()
	select {
	case w.slot <- struct{}{}:
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
	defer func() { <-w.slot }()
	waited := time.Since(start)
	task()
	return waited, nil
}
