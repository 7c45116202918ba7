package trtmcdouble

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// The recorder stands in front of TRTMC's own perf-serve (CheckoutSpec.PerfServe): the
// shim hands `serve` to it; it starts TRTMC's server on another port (EnvUpstream set),
// passes every request through unchanged and logs each exchange to <scratch>/ExchangesFile,
// which qual's TestPerfServeConformance turns into the replay's Recording.

// EnvUpstream tells the shim that the recorder started it: run TRTMC's server.
const EnvUpstream = "QUALKIT_PERF_SERVE_UPSTREAM"

// EnvWorkerLog names the file where the worker appends a WorkerLogLine for each file it
// writes, so the replay can run it again (File.From "worker").
const EnvWorkerLog = "QUALKIT_DOUBLE_WORKER_LOG"

// WorkerLogFile is under <scratch>.
const WorkerLogFile = "_qualkit_worker.jsonl"

// WorkerLogLine is the worker's request and the artifact it wrote for it.
type WorkerLogLine struct {
	Artifact string          `json:"artifact"`
	Request  json.RawMessage `json:"request"`
}

// ExchangesFile holds a RecordedStart line, then one RecordedExchange line per request.
const ExchangesFile = "_qualkit_exchanges.jsonl"

type RecordedStart struct {
	Args []string `json:"args"` // serve's arguments as given
	Help string   `json:"help"` // what `serve --help` printed
}

// RecordedExchange is one request through the recorder.
type RecordedExchange struct {
	Digest    string      `json:"digest"`
	Method    string      `json:"method"`
	Path      string      `json:"path"`
	Request   string      `json:"request"`    // the body
	RequestID string      `json:"request_id"` // the x-request-id sent, if any
	Status    int         `json:"status"`
	Header    http.Header `json:"header"`
	Body      string      `json:"body"`
	Ms        float64     `json:"ms"`
}

// recorderMain plays `python -m trtmc_perf_serving ARGS` through the recorder; args[1] is
// the Python to run TRTMC's server with.
func recorderMain(p *proc) int {
	fail := func(err error) int { return p.fail(exitFail, "perf-serve recorder (qualkit): %v", err) }
	if len(p.args) < 3 || p.args[2] != "serve" {
		return p.fail(exitUsage, "usage: perf-serve-recorder PYTHON serve ARGS...")
	}
	python, args := p.args[1], p.args[2:]
	_, values := ServeArgs(args[1:])
	host := hostOf(args)
	scratch := p.abs(values["{{scratch}}"])
	env := append(os.Environ(), EnvUpstream+"=1", EnvWorkerLog+"="+filepath.Join(scratch, WorkerLogFile))
	helpCmd := exec.Command(python, "-m", "trtmc_perf_serving", "serve", "--help")
	helpCmd.Env = env
	help, err := helpCmd.Output()
	if err != nil {
		return fail(fmt.Errorf("serve --help: %v", err))
	}
	log, err := appendTo(filepath.Join(scratch, ExchangesFile))
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	rec := &recorder{log: json.NewEncoder(log)}
	if err := rec.log.Encode(RecordedStart{Args: args[1:], Help: string(help)}); err != nil {
		return fail(err)
	}
	// Listening before TRTMC's server is up, serving once it is: a request waits for it.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, values["{{port}}"]))
	if err != nil {
		return fail(err)
	}
	defer ln.Close()
	upstream, err := freePort(host)
	if err != nil {
		return fail(err)
	}
	child := slices.Clone(args)
	child[slices.Index(child, "--port")+1] = upstream
	cmd := exec.Command(python, append([]string{"-m", "trtmc_perf_serving"}, child...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() int {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		return cmd.ProcessState.ExitCode()
	}
	target := net.JoinHostPort(host, upstream)
	for {
		if c, err := net.Dial("tcp", target); err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return cmd.ProcessState.ExitCode()
		case <-p.context().Done():
			return stop()
		case <-time.After(100 * time.Millisecond):
		}
	}
	rec.target = "http://" + target
	fmt.Fprintf(p.stderr, "perf-serve recorder (qualkit): TRTMC's perf-serve on %s, recorded to %s\n", target, log.Name())
	hs := &http.Server{Handler: rec}
	go hs.Serve(ln)
	defer hs.Close()
	select {
	case <-exited:
		return max(cmd.ProcessState.ExitCode(), exitFail)
	case <-p.context().Done():
		hs.Close()
		return stop()
	}
}

func freePort(host string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// recorder passes requests to TRTMC's server and logs each exchange.
type recorder struct {
	target string
	mu     sync.Mutex
	log    *json.Encoder
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	up, err := http.NewRequestWithContext(r.Context(), r.Method, rec.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	up.Header = r.Header.Clone()
	start := time.Now()
	resp, err := http.DefaultTransport.RoundTrip(up)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	ms := float64(time.Since(start).Microseconds()) / 1e3
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.log.Encode(RecordedExchange{Digest: RequestDigest(r.Method, r.URL.Path, body), Method: r.Method, Path: r.URL.Path, Request: string(body),
		RequestID: r.Header.Get("X-Request-ID"), Status: resp.StatusCode, Header: resp.Header, Body: string(out), Ms: ms})
}
