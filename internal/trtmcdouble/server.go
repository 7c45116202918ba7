package trtmcdouble

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server defaults. The double's --max-body-bytes default is 64 MiB, not trtmc-server's
// 1 MiB: image-edit requests carry a whole image.
const (
	DefaultMaxBodyBytes = 64 << 20
	defaultLoadDelay    = 300 * time.Millisecond
	shutdownGrace       = 10 * time.Second
)

var serverParser = newOptParser(true,
	opt{"--model-name", true},
	opt{"--host", true},
	opt{"--port", true},
	opt{"--runtime-root", true},
	opt{"--startup-timeout", true},
	opt{"--request-timeout", true},
	opt{"--records", true},
	opt{"--max-body-bytes", true},
	opt{"--scratch", true},
	opt{"--keep-artifacts", false},
	opt{"--response-format", true},
	opt{"--help|-h", false},
)

const serverUsage = `usage: trtmc-server [-h] [--model-name NAME] [--host HOST] [--port PORT]
                    [--runtime-root DIR] [--startup-timeout S] [--request-timeout S]
                    [--records PATH] [--max-body-bytes N] [--scratch DIR] [--keep-artifacts]
                    [--response-format {b64_json,artifact}]
                    bundle`

const serverHelp = serverUsage + `

trtmc-server (qualkit contract double): serves POST /v1/images/edits for one bundle of
the double, one request at a time, with a deterministic colour transform in place of the
model. No GPU, no TensorRT.

positional arguments:
  bundle                a .bundle written by the double's builder

options:
  -h, --help            show this help message and exit
  --model-name NAME     the model id served (default: the bundle's model_id)
  --host HOST           loopback address to bind: 127.0.0.1 or ::1 (default 127.0.0.1)
  --port PORT           port to bind, 0 for any (default 8000)
  --runtime-root DIR    native runtime holding libtrtmc_model_qwen_image.so (in DIR or
                        DIR/models/qwen_image/)
  --startup-timeout S   seconds the model load may take (default 600)
  --request-timeout S   seconds one request may take (default 600)
  --records PATH        append one JSON line per successful request
  --max-body-bytes N    largest request body (default 67108864 = 64 MiB in the double;
                        trtmc-server's is 1 MiB)
  --scratch DIR         directory for per-request artifacts
  --keep-artifacts      keep each request's output.png under --scratch/<request-id>/
  --response-format {b64_json,artifact}
                        response shape: b64_json (data[0].b64_json, the default) or
                        artifact (data[0].url = file://<scratch>/<request-id>/output.png;
                        needs --scratch and --keep-artifacts)`

// serverConfig is a parsed trtmc-server command line.
type serverConfig struct {
	bundle         string
	header         BundleHeader
	modelName      string
	host           string
	port           int
	runtimeRoot    string
	startupTimeout float64
	requestTimeout float64
	records        string
	maxBody        int64
	scratch        string
	keepArtifacts  bool
	responseFormat string
}

var errHelp = errors.New("help")

// parseServer parses the command line; it does not touch the filesystem.
func parseServer(args []string) (serverConfig, error) {
	a, err := serverParser.parse(args)
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return serverConfig{}, fmt.Errorf("argument %s: expected one argument", mv.flag)
	case a.has("--help"):
		return serverConfig{}, errHelp
	case len(a.unknown) > 0:
		return serverConfig{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(a.unknown, " "))
	case len(a.pos) == 0:
		return serverConfig{}, errors.New("the following arguments are required: bundle")
	case len(a.pos) > 1:
		return serverConfig{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(a.pos[1:], " "))
	}
	c := serverConfig{bundle: a.pos[0], modelName: a.get("--model-name"), host: a.get("--host"),
		runtimeRoot: a.get("--runtime-root"), records: a.get("--records"), scratch: a.get("--scratch"),
		keepArtifacts: a.has("--keep-artifacts"), responseFormat: a.get("--response-format")}
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if c.responseFormat == "" {
		// Without the flag, the shape follows the folder: a server given --scratch writes
		// each image there and answers with its file URL, as TRTMC's measurement server
		// writes outputs under its scratch folder and returns none in the body.
		c.responseFormat = "b64_json"
		if c.scratch != "" {
			c.responseFormat = "artifact"
		}
	}
	if c.port, err = intArg("--port", a.get("--port"), 8000); err != nil {
		return c, err
	}
	if c.startupTimeout, err = floatArg("--startup-timeout", a.get("--startup-timeout"), 600); err != nil {
		return c, err
	}
	if c.requestTimeout, err = floatArg("--request-timeout", a.get("--request-timeout"), 600); err != nil {
		return c, err
	}
	maxBody, err := intArg("--max-body-bytes", a.get("--max-body-bytes"), DefaultMaxBodyBytes)
	if err != nil {
		return c, err
	}
	c.maxBody = int64(maxBody)
	return c, c.validate()
}

func (c serverConfig) validate() error {
	ip := net.ParseIP(c.host)
	switch {
	case ip == nil || !ip.IsLoopback():
		return fmt.Errorf("argument --host: --host must be a loopback address (127.0.0.1 or ::1), not %q", c.host)
	case c.port < 0 || c.port > 65535:
		return fmt.Errorf("argument --port: %d is not a port", c.port)
	case c.startupTimeout <= 0 || c.requestTimeout <= 0:
		return errors.New("--startup-timeout and --request-timeout must be positive")
	case c.maxBody <= 0:
		return errors.New("argument --max-body-bytes: must be positive")
	case c.responseFormat != "b64_json" && c.responseFormat != "artifact":
		return fmt.Errorf("argument --response-format: invalid choice: '%s' (choose from 'b64_json', 'artifact')", c.responseFormat)
	case c.responseFormat == "artifact" && (c.scratch == "" || !c.keepArtifacts):
		return errors.New("--response-format artifact needs --scratch DIR and --keep-artifacts: the response names the file")
	case c.keepArtifacts && c.scratch == "":
		return errors.New("--keep-artifacts needs --scratch DIR")
	}
	return nil
}

// serverMain plays trtmc-server until SIGTERM or SIGINT.
func serverMain(p *proc) int {
	cfg, err := parseServer(p.args[1:])
	if errors.Is(err, errHelp) {
		fmt.Fprintln(p.stdout, serverHelp)
		return exitOK
	}
	if err != nil {
		return p.fail(exitUsage, "%s\ntrtmc-server: error: %v", serverUsage, err)
	}
	s, err := newServer(p, cfg, defaultLoadDelay)
	if err != nil {
		return p.fail(exitFail, "trtmc-server: error: %v", err)
	}
	defer s.close()
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		return p.fail(exitFail, "trtmc-server: error: %v", err)
	}
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(p.stderr, "trtmc-server (qualkit contract double): serving %s as %q on http://%s (response format %s)\n",
		cfg.bundle, s.model, ln.Addr(), cfg.responseFormat)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return p.fail(exitFail, "trtmc-server: error: %v", err)
	case <-p.context().Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		return p.fail(exitFail, "trtmc-server: shutdown: %v", err)
	}
	fmt.Fprintln(p.stderr, "trtmc-server (qualkit contract double): shut down")
	return exitOK
}

// server is the serving double's state.
type server struct {
	cfg        serverConfig
	model      string
	started    time.Time
	loadDelay  time.Duration
	busy       sync.Mutex // one request at a time; TryLock fails -> 429
	records    *os.File
	beforeEdit func() // test hook, run while the request holds the server
}

// newServer checks the bundle and the runtime, and opens the records file.
func newServer(p *proc, cfg serverConfig, loadDelay time.Duration) (*server, error) {
	h, err := ReadBundle(p.abs(cfg.bundle))
	if err != nil {
		return nil, fmt.Errorf("not a valid .bundle artifact: %s (%v)", cfg.bundle, err)
	}
	cfg.header = h
	if root := cfg.runtimeRoot; root != "" && !isFile(filepath.Join(p.abs(root), libModelQwen)) &&
		!isFile(filepath.Join(p.abs(root), "models", "qwen_image", libModelQwen)) {
		return nil, fmt.Errorf("--runtime-root %s holds no %s (in it or in models/qwen_image/)", root, libModelQwen)
	}
	if loadDelay.Seconds() > cfg.startupTimeout {
		return nil, fmt.Errorf("model load (%v) exceeds --startup-timeout %gs", loadDelay, cfg.startupTimeout)
	}
	cfg.scratch = p.abs(cfg.scratch)
	if cfg.scratch != "" {
		if err := os.MkdirAll(cfg.scratch, 0o755); err != nil {
			return nil, fmt.Errorf("--scratch: %w", err)
		}
	}
	s := &server{cfg: cfg, model: cfg.modelName, started: time.Now(), loadDelay: loadDelay}
	if s.model == "" {
		s.model = h.ModelID
	}
	if cfg.records != "" {
		f, err := os.OpenFile(p.abs(cfg.records), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--records: %w", err)
		}
		s.records = f
	}
	return s, nil
}

func (s *server) close() {
	if s.records != nil {
		_ = s.records.Close()
	}
}

func (s *server) ready() bool { return time.Since(s.started) >= s.loadDelay }

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, map[string]string{"status": "live"})
	})
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready() {
			writeJSONResponse(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
			return
		}
		writeJSONResponse(w, http.StatusOK, map[string]string{"status": "ready"})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, map[string]any{"object": "list",
			"data": []map[string]string{{"id": s.model, "object": "model", "owned_by": "trtmc"}}})
	})
	mux.HandleFunc("GET /v1/serving/info", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, servingInfo{Backend: "trtmc", Operation: "generate_image", Task: "image_edit",
			TimingScope: "public_task_call_wall", Bundle: s.cfg.bundle, Model: s.model,
			LoadMS: s.loadDelay.Milliseconds(), Double: true})
	})
	mux.HandleFunc("POST /v1/images/edits", s.edits)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

type servingInfo struct {
	Backend     string `json:"backend"`
	Operation   string `json:"operation"`
	Task        string `json:"task"`
	TimingScope string `json:"timing_scope"`
	Bundle      string `json:"bundle"`
	Model       string `json:"model"`
	LoadMS      int64  `json:"load_ms"`
	Double      bool   `json:"qualkit_contract_double"`
}
