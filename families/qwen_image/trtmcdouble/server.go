package trtmcdouble

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// trtmc-server, as TRTMC's sources define it. The native binary (apps/server/main.cpp
// @ 0f958bfb) execs its Python control plane, `python3 -P -m trtmc_server ARGS
// --worker-binary <itself>`, found at <exe dir>/server/python; the control plane's
// command line and its refusals are cli.py @ a9ed5f69's. The double serves what the
// stage-7 completion report says trtmc-server serves for image edits, POST
// /v1/images/edits: no public TRTMC source has that route, so its request and response
// shapes are the report's, not a copy of any code.

// DefaultMaxBodyBytes is trtmc-server's --max-body-bytes default (cli.py @ a9ed5f69:
// 1024 * 1024). One 1024x1024 PNG edit is larger: the row passes its own.
const (
	DefaultMaxBodyBytes = 1 << 20
	defaultLoadDelay    = 300 * time.Millisecond
	shutdownGrace       = 10 * time.Second
)

var serverParser = newOptParser(true,
	opt{"--model-name", true}, opt{"--model", true}, opt{"--replicas", true},
	opt{"--host", true}, opt{"--port", true}, opt{"--startup-timeout", true},
	opt{"--request-timeout", true}, opt{"--max-body-bytes", true},
	opt{"--max-prompt-bytes", true}, opt{"--max-new-tokens", true},
	opt{"--runtime-root", true}, opt{"--kv-cache-size", true}, opt{"--runtime-cache", true},
	opt{"--cuda-graphs", false}, opt{"--records", true}, opt{"--access-log", false},
	opt{"--worker-binary", true}, opt{"--help|-h", false},
)

// serverUsage is cli.py @ a9ed5f69's usage line (--worker-binary is argparse.SUPPRESS).
const serverUsage = `usage: trtmc-server [-h] [--model-name MODEL_NAME] [--model NAME=PATH]
                    [--replicas REPLICAS] [--host HOST] [--port PORT]
                    [--startup-timeout STARTUP_TIMEOUT]
                    [--request-timeout REQUEST_TIMEOUT]
                    [--max-body-bytes MAX_BODY_BYTES]
                    [--max-prompt-bytes MAX_PROMPT_BYTES]
                    [--max-new-tokens MAX_NEW_TOKENS] [--runtime-root RUNTIME_ROOT]
                    [--kv-cache-size KV_CACHE_SIZE] [--runtime-cache RUNTIME_CACHE]
                    [--cuda-graphs] [--records RECORDS] [--access-log]
                    [bundle]`

const serverHelp = serverUsage + `

Serve text-generation bundles through persistent native workers
(qualkit contract double: and POST /v1/images/edits as the stage-7 report describes it,
with a deterministic colour transform in place of the model; no GPU, no TensorRT)

positional arguments:
  bundle                single .bundle artifact

options:
  -h, --help            show this help message and exit
  --model-name MODEL_NAME
                        API model name for the positional bundle
  --model NAME=PATH     register another text model; repeatable
  --replicas REPLICAS
  --host HOST
  --port PORT
  --startup-timeout STARTUP_TIMEOUT
  --request-timeout REQUEST_TIMEOUT
  --max-body-bytes MAX_BODY_BYTES
  --max-prompt-bytes MAX_PROMPT_BYTES
  --max-new-tokens MAX_NEW_TOKENS
  --runtime-root RUNTIME_ROOT
  --kv-cache-size KV_CACHE_SIZE
  --runtime-cache RUNTIME_CACHE
  --cuda-graphs
  --records RECORDS     append terminal request timing JSONL (no text)
  --access-log`

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
	workerBinary   string
}

var errHelp = errors.New("help")

// parseServer parses the command line as argparse would.
func parseServer(args []string) (serverConfig, error) {
	a, err := serverParser.parse(args)
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return serverConfig{}, fmt.Errorf("argument %s: expected one argument", mv.flag)
	case a.has("--help"):
		return serverConfig{}, errHelp
	case len(a.unknown) > 0 || len(a.pos) > 1:
		extra := a.unknown
		if len(a.pos) > 1 {
			extra = append(extra, a.pos[1:]...)
		}
		return serverConfig{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(extra, " "))
	case a.has("--model"):
		return serverConfig{}, errors.New("--model NAME=PATH registers a text model: the qualkit contract double serves only the positional image-edit bundle")
	}
	c := serverConfig{modelName: a.get("--model-name"), host: a.get("--host"), runtimeRoot: a.get("--runtime-root"),
		records: a.get("--records"), workerBinary: a.get("--worker-binary")}
	if len(a.pos) == 1 {
		c.bundle = a.pos[0]
	}
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if c.port, err = intArg("--port", a.get("--port"), 8000); err != nil {
		return c, err
	}
	if c.startupTimeout, err = floatArg("--startup-timeout", a.get("--startup-timeout"), 120); err != nil {
		return c, err
	}
	if c.requestTimeout, err = floatArg("--request-timeout", a.get("--request-timeout"), 120); err != nil {
		return c, err
	}
	maxBody, err := positiveArg("--max-body-bytes", a.get("--max-body-bytes"), DefaultMaxBodyBytes)
	if err != nil {
		return c, err
	}
	c.maxBody = int64(maxBody)
	return c, nil
}

// positiveArg is cli.py's `positive` type: an int > 0, else "invalid positive value".
func positiveArg(flag, v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("argument %s: invalid positive value: '%s'", flag, v)
	}
	return n, nil
}

// validate makes cli.py @ a9ed5f69's checks, in its order; each is a usage error.
func (c serverConfig) validate(p *proc) error {
	ip := net.ParseIP(c.host)
	switch {
	case ip == nil:
		return fmt.Errorf("'%s' does not appear to be an IPv4 or IPv6 address", c.host)
	case !ip.IsLoopback():
		return errors.New("--host must be a loopback IP address")
	case c.port < 0 || c.port > 65535:
		return errors.New("--port must be between 0 and 65535")
	case c.startupTimeout <= 0 || c.requestTimeout <= 0:
		return errors.New("worker timeouts must be positive")
	case c.bundle == "" && c.modelName != "":
		return errors.New("--model-name requires the positional bundle")
	case c.bundle == "":
		return errors.New("provide a bundle or at least one --model NAME=PATH")
	case c.modelName == "":
		return errors.New("--model-name is required with the positional bundle")
	case !isFile(p.abs(c.bundle)):
		return errors.New("bundle does not exist")
	case c.workerBinary == "" || !isFile(p.abs(c.workerBinary)):
		return errors.New("native worker executable is unavailable")
	case c.runtimeRoot != "" && !isDir(p.abs(c.runtimeRoot)):
		return errors.New("--runtime-root must be a directory")
	}
	return nil
}

// nativeServerMain plays the native trtmc-server binary as main.cpp @ 0f958bfb: it execs
// the control plane with <exe dir>/server/python first on PYTHONPATH, which in the
// double's checkouts is the stand-in that runs serverMain.
func nativeServerMain(p *proc) int {
	if len(p.args) > 1 && p.args[1] == "_serve-worker" {
		return p.fail(exitUsage, "trtmc-server _serve-worker: the qualkit contract double's control plane serves in-process; it spawns no worker")
	}
	exe := p.self
	plane := filepath.Join(filepath.Dir(exe), "server", "python")
	if !isDir(filepath.Join(plane, "trtmc_server")) {
		return p.fail(exitFail, "trtmc-server: no control plane at %s/trtmc_server: build the trtmc_server_python target", plane)
	}
	python, err := exec.LookPath("python3")
	if p.getenv("PATH") != "" {
		python, err = lookPath("python3", p.getenv("PATH"))
	}
	if err != nil {
		return p.fail(exitFail, "trtmc-server: python3: %v", err)
	}
	env := []string{}
	for k, v := range p.env {
		if k != "PYTHONPATH" {
			env = append(env, k+"="+v)
		}
	}
	pythonPath := plane
	if old := p.getenv("PYTHONPATH"); old != "" {
		pythonPath += ":" + old
	}
	env = append(env, "PYTHONPATH="+pythonPath)
	argv := append(append([]string{"python3", "-P", "-m", "trtmc_server"}, p.args[1:]...), "--worker-binary", exe)
	err = p.exec(python, argv, env)
	return p.fail(exitFail, "trtmc-server: exec %s: %v", python, err)
}

func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		f := filepath.Join(dir, name)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH %s", name, path)
}

// serverMain plays trtmc-server's control plane (`python3 -m trtmc_server ARGS`).
func serverMain(p *proc, args []string) int {
	cfg, err := parseServer(args)
	if errors.Is(err, errHelp) {
		fmt.Fprintln(p.stdout, serverHelp)
		return exitOK
	}
	if err == nil {
		err = cfg.validate(p)
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
	fmt.Fprintf(p.stderr, "trtmc-server (qualkit contract double): serving %s as %q on http://%s (worker %s, max body %d bytes)\n",
		cfg.bundle, s.model, ln.Addr(), cfg.workerBinary, cfg.maxBody)
	return serveUntilDone(p, ln, s.handler(), "trtmc-server", "trtmc-server: error: ")
}

// serveUntilDone serves h on ln until the program's context ends, then shuts down within
// shutdownGrace; errPrefix begins its error lines as the program's own do.
func serveUntilDone(p *proc, ln net.Listener, h http.Handler, name, errPrefix string) int {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return p.fail(exitFail, "%s%v", errPrefix, err)
	case <-p.context().Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(ctx); err != nil {
		return p.fail(exitFail, "%s: shutdown: %v", name, err)
	}
	fmt.Fprintln(p.stderr, name+" (qualkit contract double): shut down")
	return exitOK
}

type server struct {
	cfg        serverConfig
	model      string
	started    time.Time
	loadDelay  time.Duration
	busy       sync.Mutex // one request at a time; TryLock fails -> 429
	records    *os.File
	beforeEdit func() // test hook, run while the request holds the server
}

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
	// app.py @ a9ed5f69: /health/ready answers {"status": "ready"|"not_ready", "degraded"}.
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready() {
			writeJSONResponse(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "degraded": false})
			return
		}
		writeJSONResponse(w, http.StatusOK, map[string]any{"status": "ready", "degraded": false})
	})
	// registry.py @ a4ba28be: each model is owned by "tensorrt-model-connect".
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, map[string]any{"object": "list", Marker: true,
			"data": []map[string]any{{"id": s.model, "object": "model", "created": s.started.Unix(), "owned_by": "tensorrt-model-connect"}}})
	})
	mux.HandleFunc("POST /v1/images/edits", s.edits)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONResponse(w, http.StatusNotFound, map[string]string{"detail": "Not Found"}) // FastAPI's default
	})
	return mux
}
