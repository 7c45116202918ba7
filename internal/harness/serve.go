package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ReadyPath is polled until the server answers 200: the model is loaded.
const ReadyPath = "/health/ready"

// Server is a running inference server, whatever runs it.
type Server interface {
	URL() string
	// Startup is the wall time from start until ready: load time, never request time.
	Startup() time.Duration
	// Stop ends the server and everything it started; it is safe to call twice.
	Stop(ctx context.Context) error
	// Runtime says what runs it: "process" or "container".
	Runtime() string
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// processServer is a server run as a local process group.
type processServer struct {
	url     string
	cmd     *exec.Cmd
	logf    *os.File
	logPath string
	exited  chan struct{}
	waitErr error
	startup time.Duration
	stopped bool
	rec     CommandRecord
	ev      *RowEvidence
}

// StartProcess starts c as a process group with its output in logRel, and waits until
// GET ReadyPath answers 200, the process exits, or the ready deadline passes.
func StartProcess(ctx context.Context, ev *RowEvidence, c Command, port int, ready time.Duration, logRel string) (Server, error) {
	logPath := ev.Path(logRel)
	start := time.Now()
	// The server must outlive the stage's context: it is stopped explicitly.
	cmd, logf, err := startCommand(context.WithoutCancel(ctx), c, logPath)
	if err != nil {
		return nil, err
	}
	s := &processServer{
		url: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, logf: logf, logPath: logPath,
		exited: make(chan struct{}), ev: ev,
		rec: CommandRecord{Stage: "serve", Args: c.Args, Env: c.Env, Dir: c.Dir, Log: logPath, Start: start.UTC()},
	}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	if err := waitReady(ctx, s.url, ready, s.exited); err != nil {
		s.Stop(context.Background())
		if errors.Is(err, errExited) {
			return nil, fmt.Errorf("server process exited with code %d before it was ready; log %s:\n%s", exitCode(s.waitErr), logPath, tailFile(logPath, 2000))
		}
		return nil, fmt.Errorf("%w; log %s:\n%s", err, logPath, tailFile(logPath, 2000))
	}
	s.startup = time.Since(start)
	return s, nil
}

var errExited = errors.New("server exited")

// waitReady polls url+ReadyPath until it answers 200, exited closes (the server is
// gone: errExited) or the deadline passes. The request cut short by the deadline is not
// an answer, so the error keeps the last answer the server really gave.
func waitReady(ctx context.Context, url string, deadline time.Duration, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+ReadyPath, nil)
		resp, err := hc.Do(req)
		switch {
		case err == nil:
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s answered %d", ReadyPath, resp.StatusCode)
		case ctx.Err() == nil:
			last = err.Error()
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return fmt.Errorf("server not ready after %s (last: %s): %w", deadline, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func (s *processServer) URL() string            { return s.url }
func (s *processServer) Startup() time.Duration { return s.startup }
func (s *processServer) Runtime() string        { return "process" }

// Stop sends SIGTERM to the group, then SIGKILL after a grace period.
func (s *processServer) Stop(ctx context.Context) error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	killGroup(s.cmd, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		killGroup(s.cmd, syscall.SIGKILL)
		<-s.exited
	}
	// Children left in the group (none expected) go too.
	killGroup(s.cmd, syscall.SIGKILL)
	s.logf.Close()
	s.rec.WallS = time.Since(s.rec.Start).Seconds()
	s.rec.ExitCode = exitCode(s.waitErr)
	return s.ev.Record(s.rec)
}
