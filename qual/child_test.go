package qual

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// child is this test binary run on the reference row by a test (startChild): a run of
// its own, with its own reaper, evidence root and temp folder.
type child struct {
	cmd    *exec.Cmd
	out    *output // its output and its reaper's, as they stream
	marker string  // in the environment of every process it starts (leftoverProcesses)
	root   string  // its evidence root
	tmp    string  // its TMPDIR
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startChild starts this test binary on the reference row, writing its evidence under
// root with the runtime given, env added to its environment. A fresh marker in that
// environment reaches every process it starts (leftoverProcesses). Its TMPDIR is a
// folder of the calling test's (childTempDir, tempLeft). The child's output, read to its
// end, is its reaper's too: c.wait returns once the reaper is done. When the test
// fails, the log shows the child's output and its correctness case's output.log.
func startChild(t *testing.T, root, runtime string, env []string, args ...string) *child {
	t.Helper()
	args = append([]string{"-test.run", "^TestRefEdit$", "-test.count", "1", "-qualkit.evidence", root, "-qualkit.runtime", runtime,
		"-qualkit.gpuread", baseConfig.GPURead}, args...) // built once, by this binary's TestMain
	c := &child{out: newOutput(), root: root, tmp: childTempDir(t), exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], args...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.marker = fmt.Sprintf("%s-%d", slug(t.Name()), time.Now().UnixNano())
	c.cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0", negativeControlMarker+"="+c.marker, "TMPDIR="+c.tmp), env...)
	require.NoError(t, c.cmd.Start())
	go func() { c.err = c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() {
		if c.running() {
			c.cmd.Process.Kill()
			<-c.exited
		}
		if t.Failed() {
			t.Logf("the child run's output:\n%s", c.out)
			c.logCaseOutput(t)
		}
	})
	return c
}

// wait waits until the child exited and its output closed (its reaper is done).
func (c *child) wait() error {
	<-c.exited
	return c.err
}

func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// waitFor waits until cond holds (true) or the child ended first (false), looking again
// whenever the child prints and every 50 ms (cond may look at files and processes).
func (c *child) waitFor(cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-c.exited:
			return cond()
		case <-c.out.grew():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitForProcess waits until a process whose command line names both the child's
// evidence root and word runs, and returns it; ok is false when the child ended first.
func (c *child) waitForProcess(word string) (pid int, cmdline string, ok bool) {
	c.waitFor(func() bool { pid, cmdline, ok = findProcess(c.root, word); return ok })
	return pid, cmdline, ok
}

// signalWhenRunning sends the signals to the child, 100 ms apart, once a process whose
// command line names both its evidence root and word runs (a wait on the child's own
// progress: a loaded host takes longer to get there). It fails the test when the child
// ended first.
func (c *child) signalWhenRunning(t *testing.T, word string, sigs ...os.Signal) {
	if _, _, ok := c.waitForProcess(word); !ok {
		t.Errorf("no process with %q and %s in its command line ran before the child ended: nothing signalled", word, c.root)
		return
	}
	for i, sig := range sigs {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		c.cmd.Process.Signal(sig)
	}
}

// signalWhen sends sig to the child once cond holds; it fails the test when the child
// ended first.
func (c *child) signalWhen(t *testing.T, cond func(*child) bool, sig os.Signal) {
	if !c.waitFor(func() bool { return cond(c) }) {
		t.Errorf("the child ended before the moment to signal it: nothing signalled")
		return
	}
	c.cmd.Process.Signal(sig)
}

// buildingImage: the row's image build has begun (its log exists).
func (c *child) buildingImage() bool {
	logs, _ := filepath.Glob(filepath.Join(c.root, "2*", "*", filepath.FromSlash(schema.ImageBuildLog)))
	return len(logs) > 0
}

// finishing: the rows are done and the run's Finish has begun (TestMain says so).
func (c *child) finishing() bool {
	return strings.Contains(c.out.String(), "qual: finishing the run")
}

// killWhenRunning sends SIGKILL to the first process whose command line names both the
// child's evidence root and word, once there is one; it fails the test when the child
// ended first.
func (c *child) killWhenRunning(t *testing.T, word string) {
	killed := c.waitFor(func() bool {
		pid, cmdline, ok := findProcess(c.root, word)
		if ok && syscall.Kill(pid, syscall.SIGKILL) == nil {
			t.Logf("killed %d: %s", pid, cmdline)
			return true
		}
		return false
	})
	if !killed {
		t.Errorf("no process with %q and %s in its command line ran before the child ended", word, c.root)
	}
}

// assertNothingLeft: once the child ended (its reaper done), nothing of its run is
// alive or in Docker (assertNothingLeft), and its TMPDIR is empty.
func (c *child) assertNothingLeft(t *testing.T, runID string) {
	t.Helper()
	require.False(t, c.running(), "the child still runs")
	assertNothingLeft(t, c.marker, runID)
	assert.Empty(t, c.tempLeft(t), "temp folders of the run")
}

// run is the one run folder the child made under its root.
func (c *child) run(t *testing.T) string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(c.root, "2*"))
	require.Len(t, runs, 1, "one run folder:\n%s", c.out)
	return runs[0]
}

// logCaseOutput logs the correctness case's output.log of each row the child ran: the
// case's own words when a child run failed there ("1 failed").
func (c *child) logCaseOutput(t *testing.T) {
	logs, _ := filepath.Glob(filepath.Join(c.root, "2*", "*", "correctness", "output.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		t.Logf("%s:\n%s", l, b)
	}
}

// tempLeft lists what the child left in its TMPDIR.
func (c *child) tempLeft(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(c.tmp)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, filepath.Join(c.tmp, e.Name()))
	}
	return left
}

// childTempDir is a child's TMPDIR, removed with the test: short, so that the child's
// session folder, and AIPerf's folder in it, stay within harness.aiperfTempBase's 32
// bytes (t.TempDir's path names the test and is longer).
func childTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "qc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// output is a child's output as it streams: safe to read while the child writes, and
// telling a waiter when it grew.
type output struct {
	mu      sync.Mutex
	b       bytes.Buffer
	growing chan struct{} // closed at the next write
}

func newOutput() *output { return &output{growing: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	close(o.growing)
	o.growing = make(chan struct{})
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// grew is closed at the next write.
func (o *output) grew() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.growing
}

// rowResult reads the reference row's results.json in a run folder.
func rowResult(t *testing.T, run string, out fmt.Stringer) schema.Result {
	t.Helper()
	var res schema.Result
	b, err := os.ReadFile(filepath.Join(run, "refedit-v1", "results.json"))
	require.NoError(t, err, "%s", out)
	require.NoError(t, json.Unmarshal(b, &res))
	return res
}

// findProcess is a live process whose command line names both root and word.
func findProcess(root, word string) (pid int, cmdline string, ok bool) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(root)) || !bytes.Contains(b, []byte(word)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
			return pid, strings.ReplaceAll(string(b), "\x00", " "), true
		}
	}
	return 0, "", false
}

// processRuns says whether pid is a live process (a zombie runs no more).
func processRuns(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || (b[i+2] != 'Z' && b[i+2] != 'X')
}

// processLeftovers lists the containers and images labelled with a process of this
// host (its pid): a killed binary's build steps name its process, not its run.
func processLeftovers(t *testing.T, pid int) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := serving.Docker(ctx); err != nil {
		return nil
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	defer cli.Close()
	host, _ := os.Hostname()
	f := make(client.Filters).Add("label", serving.LabelPID+"="+strconv.Itoa(pid), serving.LabelHost+"="+host)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	require.NoError(t, err)
	for _, c := range cs.Items {
		out = append(out, fmt.Sprintf("container %s %v", c.ID, c.Names))
	}
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	require.NoError(t, err)
	for _, img := range imgs.Items {
		out = append(out, fmt.Sprintf("image %s %v", img.ID, img.RepoTags))
	}
	return out
}
