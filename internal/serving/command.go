package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"qualkit/internal/schema"
)

// Command is one program invocation. Env is what the caller adds: on top of this
// process's environment for a process, alone for a container.
type Command struct {
	Args []string
	Env  []string
	Dir  string
}

// Recorder keeps the record of every command run (the row's commands.jsonl).
type Recorder interface {
	Record(schema.CommandRecord) error
}

var secretName = regexp.MustCompile(`(?i)(token|secret|password|passwd|api_?key|credential)`)

func RedactEnv(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if secretName.MatchString(k) {
			kv = k + "=<redacted>"
		}
		out[i] = kv
	}
	return out
}

// Run runs c to completion, its output in log, records it, and on failure returns an
// error with the exit code, the log path and the log's tail.
func Run(ctx context.Context, c Command, log string, opts ...Option) (schema.CommandRecord, error) {
	o := newOptions(opts)
	if o.container != nil {
		return runContainer(ctx, c, log, o)
	}
	return runProcess(ctx, c, log, o)
}

func runProcess(ctx context.Context, c Command, log string, o options) (schema.CommandRecord, error) {
	c.Env = append(o.processTempEnv(), append(c.Env, o.processGPUEnv()...)...)
	began := time.Now() // walls from the monotonic clock: a wall-clock step (NTP, a resumed VM) must not stretch them
	rec := schema.CommandRecord{Stage: o.stage, Args: c.Args, Env: c.Env, Dir: c.Dir, Log: log, Start: began.UTC()}
	cmd, logf, err := startProcess(ctx, c, log, o)
	if err != nil {
		rec.ExitCode, rec.Error = -1, err.Error()
		return rec, o.record(rec, err)
	}
	err = cmd.Wait()
	// A job leaves no process behind: what it started in its group and left running goes.
	if gerr := endGroup(cmd.Process.Pid); gerr != nil && err == nil {
		err = gerr
	}
	logf.Close()
	rec.WallS = time.Since(began).Seconds()
	rec.ExitCode = exitCode(err)
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	if err != nil {
		rec.Error = err.Error()
		err = fmt.Errorf("%s exited %d: %w; log %s:\n%s", filepath.Base(c.Args[0]), rec.ExitCode, err, log, TailFile(log, 2000))
	}
	return rec, o.record(rec, err)
}

// startProcess starts c in a process group of its own (ending ctx kills the group), its
// output in log, marked as this session's (SessionEnv).
func startProcess(ctx context.Context, c Command, log string, o options) (*exec.Cmd, *os.File, error) {
	if len(c.Args) == 0 {
		return nil, nil, errors.New("empty command")
	}
	logf, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(append(os.Environ(), Self().sessionEnv()), c.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("start %s: %w", c.Args[0], err)
	}
	if o.groups != nil {
		start, _ := processStart(cmd.Process.Pid)
		o.groups.TrackGroup(Group{ID: cmd.Process.Pid, Start: start})
	}
	return cmd, logf, nil
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	// A negative pid signals the whole process group.
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Group is a process group Run or Start created: its leader's pid and start time, which
// tells it from a later group of the same number.
type Group struct {
	ID    int
	Start string
}

// GroupTracker learns of every process group Run and Start create, for the reaper: a
// program may overwrite its environment (AIPerf's services set their titles over it),
// so SessionEnv alone does not find them all.
type GroupTracker interface {
	TrackGroup(Group)
}

// endGroup kills what is left of group pgid and waits until none of it runs: a killed
// process runs until the kernel schedules it, and a leftover check must not see it.
func endGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	for deadline := time.Now().Add(groupGoneWithin); groupRuns(pgid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still runs %s after SIGKILL", pgid, groupGoneWithin)
		}
	}
	return nil
}

// groupGoneWithin bounds the wait for a killed group: only a stalled host reaches it.
const groupGoneWithin = 30 * time.Second

// groupRuns says whether a process of group pgid still runs (zombies aside).
func groupRuns(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return len(processes(func(_ int, stat []string) bool { return stat[2] == strconv.Itoa(pgid) })) > 0
}

// exitCode is -1 when the process did not exit normally.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// TailFile returns the last n bytes of a log, for error messages that explain themselves.
func TailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-n, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	return strings.TrimSpace(string(buf))
}
