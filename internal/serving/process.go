package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"qualkit/internal/schema"
)

type processServer struct {
	served
	cmd     *exec.Cmd
	logf    *os.File
	exited  chan struct{}
	waitErr error
}

// served is what a server keeps, whatever runs it.
type served struct {
	url     string
	startup time.Duration
	rec     schema.CommandRecord
	began   time.Time // monotonic: the record's wall
	o       options
	mu      sync.Mutex
	stopped bool
}

func (s *served) URL() string            { return s.url }
func (s *served) Startup() time.Duration { return s.startup }

func startProcessServer(ctx context.Context, spec ServerSpec, o options) (Server, error) {
	c := spec.Cmd
	c.Env = append(o.processTempEnv(), append(c.Env, o.processGPUEnv()...)...)
	start := time.Now()
	rec := schema.CommandRecord{Stage: o.stage, Args: c.Args, Env: c.Env, Dir: c.Dir, Log: spec.Log, Start: start.UTC()}
	// The server must outlive the stage's context: it is stopped explicitly.
	cmd, logf, err := startProcess(context.WithoutCancel(ctx), c, spec.Log, o)
	if err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		return nil, o.record(rec, err)
	}
	s := &processServer{cmd: cmd, logf: logf, exited: make(chan struct{}), served: served{url: spec.URL(), o: o, began: start, rec: rec}}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	if err := waitReady(ctx, s.url, spec.Ready, s.exited); err != nil {
		s.stop(0)
		if errors.Is(err, errExited) {
			return nil, fmt.Errorf("server process exited with code %d before it was ready; log %s:\n%s", exitCode(s.waitErr), spec.Log, TailFile(spec.Log, 2000))
		}
		return nil, fmt.Errorf("%w; log %s:\n%s", err, spec.Log, TailFile(spec.Log, 2000))
	}
	s.startup = time.Since(start)
	return s, nil
}

func (s *processServer) Runtime() string     { return "process" }
func (s *processServer) ContainerID() string { return "" }

func (s *processServer) Died(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	select {
	case <-s.exited:
		return fmt.Errorf("the server process ended on its own while the row ran: %v (exit code %d)", s.waitErr, exitCode(s.waitErr))
	default:
		return nil
	}
}

// Stop sends SIGTERM to the group, then SIGKILL after stopGrace.
func (s *processServer) Stop(context.Context) error { return s.stop(stopGrace) }

// stop sends SIGTERM to the group, then SIGKILL after grace; with no grace, SIGKILL alone.
func (s *processServer) stop(grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	if grace > 0 {
		killGroup(s.cmd, syscall.SIGTERM)
	}
	select {
	case <-s.exited:
	case <-time.After(grace):
		killGroup(s.cmd, syscall.SIGKILL)
		<-s.exited
	}
	// Children left in the group (none expected) go too.
	err := endGroup(s.cmd.Process.Pid)
	s.logf.Close()
	s.rec.WallS = time.Since(s.began).Seconds()
	s.rec.ExitCode = exitCode(s.waitErr)
	return s.o.record(s.rec, err)
}

// stopGrace is how long a ready server has to drain its requests. One that was never
// ready has none and is killed at once: it may hold SIGTERM until its load ends (refedit
// serve does, as a server loading its weights would), longer than the margin a row keeps
// before go test's -timeout (Suite.rowContext).
const stopGrace = 10 * time.Second
