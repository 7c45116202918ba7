// Package dockertest starts Docker engines of a test's own: a second dockerd with its own
// data root, state, socket and containerd namespace, which a test may restart, fill or
// leave empty without touching the machine's engine or another test's containers.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"qualkit/internal/serving"
)

// Engine is a second dockerd, started and stopped by one test. It has no bridge network:
// its containers and build steps reach nothing outside them.
type Engine struct {
	dir    string
	cmd    *exec.Cmd
	exited chan error // dockerd's Wait, once it exited
	log    *os.File
}

// Start starts an engine of t's own, which t's cleanup stops and removes with its data.
// It needs root and a dockerd on PATH; without either the test fails saying so.
func Start(t testing.TB) *Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s starts a Docker engine of its own, which needs root: run the tests as root (as make test and CI do), or with -run that leaves it out", t.Name())
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		t.Fatalf("%s starts a second dockerd and none is installed: bash scripts/engine.sh installs Debian's docker.io", t.Name())
	}
	// A short path: the engine's and containerd's sockets live under it.
	dir, err := os.MkdirTemp("", "qk-engine-")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}\n"), 0o644))
	e := &Engine{dir: dir}
	e.log, err = os.Create(filepath.Join(dir, "dockerd.log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		e.stop()
		e.log.Close()
		if t.Failed() {
			t.Logf("the test engine's log:\n%s", serving.TailFile(e.log.Name(), 3000))
		}
		unmountUnder(t, dir)
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove the test engine's folder: %v", err)
		}
	})
	require.NoError(t, e.start())
	return e
}

// Host is the engine's DOCKER_HOST.
func (e *Engine) Host() string { return "unix://" + filepath.Join(e.dir, "docker.sock") }

func (e *Engine) start() error {
	e.cmd = exec.Command("dockerd",
		"--data-root", filepath.Join(e.dir, "data"), "--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "dockerd.pid"), "--host", e.Host(), "--config-file", filepath.Join(e.dir, "daemon.json"),
		"--bridge", "none", "--iptables=false", "--ip-masq=false", "--cgroup-parent", "qualkit-engine-test",
		"--containerd-namespace", "qualkit-engine-test", "--containerd-plugins-namespace", "qualkit-engine-test-plugins",
		"--shutdown-timeout", "2")
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	// Its processes' temp files (containerd's stack dump when dockerd kills it) go with it.
	tmp := filepath.Join(e.dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	e.cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- e.cmd.Wait() }()
	e.exited = exited
	// Until it answers, or exits: a loaded host takes longer, go test's -timeout bounds it.
	for exec.Command("docker", "-H", e.Host(), "version").Run() != nil {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("the test's dockerd exited before it answered (%v); log %s:\n%s", err, e.log.Name(), serving.TailFile(e.log.Name(), 2000))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// stop ends dockerd (SIGTERM: it stops its containers and unmounts what it mounted) and
// waits until it exited (go test's -timeout bounds it).
func (e *Engine) stop() {
	if e.cmd != nil && e.cmd.Process != nil {
		e.cmd.Process.Signal(syscall.SIGTERM)
		<-e.exited
		e.cmd = nil
	}
}

// Restart stops the engine and starts it again on the same data.
func (e *Engine) Restart() error {
	e.stop()
	return e.start()
}

// Leftovers lists the engine's containers and images labelled with the run.
func (e *Engine) Leftovers(t testing.TB, runID string) []string {
	t.Helper()
	var left []string
	for _, what := range [][]string{{"ps", "-a", "-q"}, {"images", "-q"}} {
		args := append([]string{"-H", e.Host()}, what...)
		args = append(args, "--filter", "label="+serving.LabelRun+"="+runID)
		b, err := exec.CommandContext(context.Background(), "docker", args...).CombinedOutput()
		require.NoError(t, err, "docker %s: %s", strings.Join(args, " "), b)
		for _, id := range strings.Fields(string(b)) {
			left = append(left, what[0]+" "+id)
		}
	}
	if len(left) > 0 {
		b, _ := exec.CommandContext(context.Background(), "docker", "-H", e.Host(), "ps", "-a", "--no-trunc", "--format", "{{.ID}} {{.Status}} {{.Command}} {{.Labels}}").CombinedOutput()
		t.Logf("the test engine's containers:\n%s", b)
	}
	return left
}

// unmountUnder detaches what is still mounted under dir, deepest first (dockerd leaves
// its network namespace's bind mount behind).
func unmountUnder(t testing.TB, dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Errorf("read mounts: %v", err)
		return
	}
	var under []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			under = append(under, f[4])
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	for _, m := range under {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", m, err)
		}
	}
}
