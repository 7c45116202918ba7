package qual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/schema"
)

// The reference row in a child test binary (this one), stopped the two ways a run is
// stopped from outside: go test's -timeout shorter than the row, and SIGINT (Ctrl-C)
// while it runs. Either way the binary exits non-zero, nothing of the run is left in
// Docker or in the temp folder, and the run folder, which the checker accepts, says what
// stopped which stage.
func TestStoppedRunsLeaveNothing(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	for _, tc := range []struct {
		name    string
		args    []string
		signal  bool           // send sig once the row's correctness case runs
		sig     syscall.Signal // default SIGINT
		kill    string         // SIGKILL the run's process whose command line has this word, once it runs
		kind    string
		reason  string // a regexp on results.json's reason
		runNote string // a regexp on run.json's interrupted
	}{
		{name: "-test.timeout 8s", args: []string{"-test.timeout", "8s"}, kind: schema.KindTimeout,
			reason: `^stage [a-z]+ failed: timeout: go test -timeout, [0-9.]+ s into the stage$`},
		{name: "SIGINT during the correctness case", signal: true, kind: schema.KindInterrupted,
			reason: `^stage [a-z]+ failed: interrupted: SIGINT, [0-9.]+ s into the stage$`, runNote: `^SIGINT at \+[0-9.]+ s$`},
		{name: "AIPerf killed mid-benchmark", kill: "aiperf", kind: schema.KindInfrastructure,
			reason: `^stage benchmark failed: infrastructure: a process was killed from outside the run`},
		{name: "SIGTERM during the correctness case, process runtime", args: []string{"-qualkit.runtime", "process"}, signal: true, sig: syscall.SIGTERM,
			kind: schema.KindInterrupted, reason: `^stage [a-z]+ failed: interrupted: SIGTERM, [0-9.]+ s into the stage$`, runNote: `^SIGTERM at \+[0-9.]+ s$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			cmd, out, marker := startChild(t, root, *runtimeFlag, nil, tc.args...)
			if tc.signal {
				sig := tc.sig
				if sig == 0 {
					sig = syscall.SIGINT
				}
				go signalWhenRunning(t, cmd, root, caseWord, sig)
			}
			if tc.kill != "" {
				go killWhenRunning(t, root, tc.kill)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the run must fail:\n%s", out.String())
			assert.NotContains(t, out.String(), "panic: test timed out", "the row ends before go test's alarm")

			run := childRun(t, root, out)
			assertNothingLeft(t, marker, filepath.Base(run))
			assert.Empty(t, tempLeft(t, cmd), "temp folders of the stopped run")

			res := rowResult(t, run, out)
			assert.Equal(t, schema.StatusFailed, res.Status)
			assert.Equal(t, tc.kind, res.FailureKind)
			assert.Regexp(t, tc.reason, res.Reason)
			var info schema.RunInfo
			b, err := os.ReadFile(filepath.Join(run, schema.RunFile))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &info))
			if tc.runNote != "" {
				assert.Regexp(t, tc.runNote, info.Interrupted)
			}
			require.NoError(t, evidencecheck.Check(run, ""), "the stopped run's evidence checks")
			t.Logf("%s: %s (exit %d)", tc.name, res.Reason, exit.ExitCode())
		})
	}
}

// assertNothingLeft: within 10 s, no process carrying marker in its environment is
// alive (the child binary and everything it started: leftoverProcesses) and Docker holds
// no container or image of the run (dockerLeftovers).
func assertNothingLeft(t *testing.T, marker, runID string) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		left = append(leftoverProcesses(t, marker), dockerLeftovers(t, []string{runID})...)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	assert.Empty(t, left, "what run %s left behind", runID)
}

// caseWord is in the command line of the row's correctness case (pytest), whether it runs
// as a process or in a container (whose processes are this host's too).
const caseWord = "pytest"

// signalWhenRunning sends the signals to cmd, 100 ms apart, once a process whose command
// line names both root and word runs (a wait on the child's own progress, not on the
// clock: a loaded host takes longer to get there). It fails the test if none ran in
// 5 minutes.
func signalWhenRunning(t *testing.T, cmd *exec.Cmd, root, word string, sigs ...os.Signal) {
	if !waitForProcess(root, word, 5*time.Minute) {
		t.Errorf("no process with %q and %s in its command line ran: nothing signalled", word, root)
		cmd.Process.Kill()
		return
	}
	for i, sig := range sigs {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		cmd.Process.Signal(sig)
	}
}

// killWhenRunning sends SIGKILL to the first process whose command line names both the
// run's evidence root and word, once there is one (30 s at most).
func killWhenRunning(t *testing.T, root, word string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if pid, cmdline, ok := findProcess(root, word); ok && syscall.Kill(pid, syscall.SIGKILL) == nil {
			t.Logf("killed %d: %s", pid, cmdline)
			return
		}
	}
	t.Errorf("no process with %q and %s in its command line ran", word, root)
}

// A second SIGINT forces the exit: the binary removes this run's containers and images
// (10 s at most) and exits 130 without waiting for the rows.
func TestSecondSignalForcesTheExit(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	if *runtimeFlag == "process" {
		t.Fatal("this test stops containers: run it with the container runtime (RUNTIME=auto or container and a Docker engine)")
	}
	root := t.TempDir()
	cmd, out, marker := startChild(t, root, "container", nil)
	go signalWhenRunning(t, cmd, root, caseWord, syscall.SIGINT, syscall.SIGINT)
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out.String())
	assert.Equal(t, 130, exit.ExitCode(), out.String())
	assert.Contains(t, out.String(), "SIGINT again: removing this run's containers and exiting now")
	assertNothingLeft(t, marker, filepath.Base(childRun(t, root, out)))
}

// startChild starts this test binary on the reference row, writing its evidence under
// root with the runtime given, env added to its environment. A fresh marker in that
// environment reaches every process it starts (leftoverProcesses). Its TMPDIR is a
// folder of the calling test's (childTempDir, tempLeft): what a child that was made to
// exit at once leaves there goes with the test.
func startChild(t *testing.T, root, runtime string, env []string, args ...string) (cmd *exec.Cmd, out *bytes.Buffer, marker string) {
	t.Helper()
	args = append([]string{"-test.run", "^TestRefEdit$", "-test.count", "1", "-qualkit.evidence", root, "-qualkit.runtime", runtime,
		"-qualkit.gpuread", baseConfig.GPURead}, args...) // built once, by this binary's TestMain
	cmd = exec.Command(os.Args[0], args...)
	out = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	marker = fmt.Sprintf("%s-%d", slug(t.Name()), time.Now().UnixNano())
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0", negativeControlMarker+"="+marker, "TMPDIR="+childTempDir(t)), env...)
	require.NoError(t, cmd.Start())
	return cmd, out, marker
}

// childTempDir is a child's TMPDIR, removed with the test: short, so that AIPerf's
// folder goes inside it too (harness.aiperfTempBase keeps a base of 32 bytes at most;
// t.TempDir's path names the test and is longer).
func childTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "qk-child-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// tempLeft lists what the child left in its TMPDIR.
func tempLeft(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	var dir string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			dir = v
		}
	}
	require.NotEmpty(t, dir, "the child's TMPDIR")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, filepath.Join(dir, e.Name()))
	}
	return left
}

// childRun is the one run folder the child made under root.
func childRun(t *testing.T, root string, out *bytes.Buffer) string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(root, "2*"))
	require.Len(t, runs, 1, "one run folder:\n%s", out.String())
	return runs[0]
}

// rowResult reads the reference row's results.json in a run folder.
func rowResult(t *testing.T, run string, out *bytes.Buffer) schema.Result {
	t.Helper()
	var res schema.Result
	b, err := os.ReadFile(filepath.Join(run, "refedit-v1", "results.json"))
	require.NoError(t, err, out.String())
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

// waitForProcess reports whether a process whose command line names both root and word
// ran within d.
func waitForProcess(root, word string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, _, ok := findProcess(root, word); ok {
			return true
		}
	}
	return false
}
