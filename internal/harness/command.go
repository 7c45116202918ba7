package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// CommandRecord is one line of a row's commands.jsonl: enough to rerun the command by hand.
type CommandRecord struct {
	Stage    string    `json:"stage"`
	Args     []string  `json:"args"`
	Env      []string  `json:"env,omitempty"`
	Dir      string    `json:"dir,omitempty"`
	Log      string    `json:"log,omitempty"`
	Start    time.Time `json:"start"`
	WallS    float64   `json:"wall_s"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
}

var secretName = regexp.MustCompile(`(?i)(token|secret|password|passwd|api_?key|credential)`)

// redactEnv hides the values of variables whose names look secret.
func redactEnv(env []string) []string {
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

// startCommand starts c in its own process group, so that cancelling ctx or stopping it
// ends every process it spawned, and sends its output to logPath.
func startCommand(ctx context.Context, c Command, logPath string) (*exec.Cmd, *os.File, error) {
	if len(c.Args) == 0 {
		return nil, nil, errors.New("empty command")
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	cmd := exec.CommandContext(ctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, nil, fmt.Errorf("start %s: %w", c.Args[0], err)
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

// exitCode is the process's exit status, -1 when it did not exit normally.
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

// tailFile returns the last n bytes of a log, for error messages that explain themselves.
func tailFile(path string, n int64) string {
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
