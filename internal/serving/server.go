package serving

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// ReadyPath is polled until the server answers 200: the model is loaded.
const ReadyPath = "/health/ready"

type Server interface {
	URL() string
	// Startup is the wall time from start until ready: load time, never request time.
	Startup() time.Duration
	// Stop ends the server and everything it started, completes its log and records the
	// command with its exit code; it is safe to call twice.
	Stop(ctx context.Context) error
	// Runtime says what runs it: "process" or "container".
	Runtime() string
	ContainerID() string // "" for a process
	// Died says how the server ended on its own (exit code, OOM kill, engine gone) while
	// the row needed it; nil while it runs or once stopped. A failed stage asks it.
	Died(ctx context.Context) error
}

// ServerSpec is a server to start: its command, loopback port, how long it may take to
// answer GET ReadyPath with 200, and its log.
type ServerSpec struct {
	Cmd   Command
	Port  int
	Ready time.Duration
	Log   string
}

// URL is where the server will answer, on the host's loopback, known before it starts.
func (s ServerSpec) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", s.Port) }

// Start starts spec's server and waits until GET ReadyPath answers 200, the server exits,
// or spec.Ready passes; on failure nothing is left running. Once ready it outlives ctx.
func Start(ctx context.Context, spec ServerSpec, opts ...Option) (Server, error) {
	if len(spec.Cmd.Args) == 0 || spec.Cmd.Args[0] == "" {
		return nil, errors.New("start server: empty command")
	}
	if spec.Port <= 0 || spec.Port > 65535 || spec.Ready <= 0 || spec.Log == "" {
		return nil, fmt.Errorf("start server: port %d, ready deadline %s, log %q: all three are required", spec.Port, spec.Ready, spec.Log)
	}
	o := newOptions(opts)
	if o.container != nil {
		return startContainer(ctx, spec, o)
	}
	return startProcessServer(ctx, spec, o)
}

// FreePort is a loopback port free now and never returned before on this machine by a
// process still alive: the kernel may give a closed port to the next listen, and rows
// served in parallel (host networking, in this process or another qualkit test binary)
// would then start two servers on one port, one answering for both.
func FreePort() (int, error) {
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if claimPort(port) {
			return port, nil
		}
	}
	return 0, errors.New("free port: the kernel offered 1000 ports this or another live process had already handed out")
}

// claimPort claims port for this process's life: an abstract Unix socket named for it
// (Linux: no file, gone when the process ends), which no other process, nor this one
// again, can bind while it stays open. claims keeps them open.
func claimPort(port int) bool {
	l, err := net.Listen("unix", fmt.Sprintf("@qualkit-port-%d", port))
	if err != nil {
		return false
	}
	claims.Store(port, l)
	return true
}

var claims sync.Map

var errExited = errors.New("server exited")

// waitReady polls url+ReadyPath until it answers 200, exited closes (the server is
// gone: errExited) or the deadline passes.
func waitReady(ctx context.Context, url string, deadline time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	last, err := pollReady(ctx, url, func() error {
		select {
		case <-exited:
			return errExited
		default:
			return nil
		}
	})
	if err != nil && !errors.Is(err, errExited) {
		return notReady(deadline, last, err)
	}
	return err
}

// pollReady GETs url+ReadyPath until it answers 200, gone returns an error (the server
// stopped) or ctx ends. A request cut short by ctx is not an answer, so last is the last
// answer the server really gave.
func pollReady(ctx context.Context, url string, gone func() error) (last string, err error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	last = "no answer yet"
	for {
		if err := gone(); err != nil {
			return last, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+ReadyPath, nil)
		resp, err := hc.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return last, nil
			}
			last = fmt.Sprintf("%s answered %d", ReadyPath, resp.StatusCode)
		case ctx.Err() == nil:
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func notReady(deadline time.Duration, last string, err error) error {
	return fmt.Errorf("server not ready after %s (last: %s): %w", deadline, last, err)
}
