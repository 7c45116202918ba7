package qual

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
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
		signal  bool              // send sig once the row's correctness case runs
		sig     syscall.Signal    // default SIGINT
		when    func(*child) bool // send sig once this holds, instead of at the correctness case
		image   bool              // the case needs the container runtime (an image build)
		kill    string            // SIGKILL the run's process whose command line has this word, once it runs
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
		// Issue 47: a cut that lands while Docker builds the row's image (its log begun),
		// and one inside Finish, after the rows: either way run.json and the run's pages
		// are written, and the folder checks.
		{name: "SIGINT inside the row's image build", image: true, signal: true, when: (*child).buildingImage, kind: schema.KindInterrupted,
			reason: `^stage [a-z]+ failed: interrupted: SIGINT, [0-9.]+ s into the stage$`, runNote: `^SIGINT at \+[0-9.]+ s$`},
		{name: "SIGTERM inside Finish", signal: true, sig: syscall.SIGTERM, when: (*child).finishing},
	} {
		if tc.image && *runtimeFlag == harness.RuntimeProcess {
			t.Logf("%s: the process runtime was asked for, so no image is built: not run", tc.name)
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			c := startChild(t, t.TempDir(), *runtimeFlag, nil, tc.args...)
			if tc.signal {
				sig := tc.sig
				if sig == 0 {
					sig = syscall.SIGINT
				}
				if tc.when != nil {
					go c.signalWhen(t, tc.when, sig)
				} else {
					go c.signalWhenRunning(t, caseWord, sig)
				}
			}
			if tc.kill != "" {
				go c.killWhenRunning(t, tc.kill)
			}
			err := c.wait()
			var exit *exec.ExitError
			if tc.kind != "" {
				require.ErrorAs(t, err, &exit, "the run must fail:\n%s", c.out)
			} // a signal inside Finish waits for it (Interrupt takes the suite's lock): the rows passed
			assert.NotContains(t, c.out.String(), "panic: test timed out", "the row ends before go test's alarm")

			run := c.run(t)
			c.assertNothingLeft(t, filepath.Base(run))

			res := rowResult(t, run, c.out)
			if tc.kind != "" { // a cut after the rows leaves them as they ended
				assert.Equal(t, schema.StatusFailed, res.Status)
				assert.Equal(t, tc.kind, res.FailureKind)
				assert.Regexp(t, tc.reason, res.Reason)
			}
			for _, f := range []string{schema.RunFile, schema.SummaryFile, schema.ChecksumFile} {
				assert.FileExists(t, filepath.Join(run, f), "the cut run's own evidence")
			}
			var info schema.RunInfo
			b, err := os.ReadFile(filepath.Join(run, schema.RunFile))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &info))
			if tc.runNote != "" {
				assert.Regexp(t, tc.runNote, info.Interrupted)
			}
			require.NoError(t, evidencecheck.Check(run, ""), "the stopped run's evidence checks")
			t.Logf("%s: %s (%v)", tc.name, res.Reason, err)
		})
	}
}

// assertNothingLeft: no process carrying marker in its environment is alive (the
// binary and everything it started: leftoverProcesses) and Docker holds no container
// or image of the run (dockerLeftovers). It waits for nothing: it runs once the run's
// own cleanup returned (a run in this process), or once a child run's output closed,
// which its reaper holds until it is done.
func assertNothingLeft(t *testing.T, marker, runID string) {
	t.Helper()
	left := append(leftoverProcesses(t, marker), dockerLeftovers(t, []string{runID})...)
	assert.Empty(t, left, "what run %s left behind", runID)
}

// caseWord is in the command line of the row's correctness case (pytest), whether it runs
// as a process or in a container (whose processes are this host's too).
const caseWord = "pytest"

// A second SIGINT forces the exit: the binary removes this run's containers and images
// (10 s at most) and exits 130 without waiting for the rows.
func TestSecondSignalForcesTheExit(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	if *runtimeFlag == "process" {
		t.Fatal("this test stops containers: run it with the container runtime (RUNTIME=auto or container and a Docker engine)")
	}
	c := startChild(t, t.TempDir(), "container", nil)
	go c.signalWhenRunning(t, caseWord, syscall.SIGINT, syscall.SIGINT)
	err := c.wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", c.out)
	assert.Equal(t, 130, exit.ExitCode(), "%s", c.out)
	assert.Contains(t, c.out.String(), "SIGINT again: removing this run's containers and exiting now")
	c.assertNothingLeft(t, filepath.Base(c.run(t)))
}

// A run killed mid-serve (SIGKILL: it cleans up nothing itself) leaves nothing: its
// reaper, once the binary is gone, kills its processes (the server, AIPerf) and removes
// its containers, its images and every build step named for its process, its evidence
// reserve and its temp folder, and says what it removed. The test waits for the reaper
// to be done by reading the child's output to its end (the reaper holds it), on no clock.
func TestKilledRunLeavesNothing(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	c := startChild(t, t.TempDir(), *runtimeFlag, nil)
	pid, cmdline, ok := c.waitForProcess("--records")
	require.True(t, ok, "the row's server never ran:\n%s", c.out)
	records := ""
	if f := strings.Fields(cmdline); slices.Index(f, "--records") >= 0 && slices.Index(f, "--records")+1 < len(f) {
		records = f[slices.Index(f, "--records")+1]
	}
	require.NotEmpty(t, records, "the server's records file in its command line: %s", cmdline)
	require.True(t, c.waitFor(func() bool { b, _ := os.ReadFile(records); return bytes.Count(b, []byte("\n")) > 0 }),
		"the server (pid %d) never answered a request:\n%s", pid, c.out)
	require.NoError(t, c.cmd.Process.Kill())
	c.wait()
	report := c.out.String()
	require.Contains(t, report, "qualkit reaper: session ", "the reaper's report")
	t.Logf("the reaper said:\n%s", report[strings.Index(report, "qualkit reaper: session "):])
	assert.Contains(t, report, "ended and left these; removed:")
	// AIPerf's services write their titles over their environment: the marker cannot
	// find them, the reaper finds them by their process group.
	killed := regexp.MustCompile(`(?m)^  process ([0-9]+): `).FindAllStringSubmatch(report, -1)
	assert.NotEmpty(t, killed, "the processes the reaper killed (AIPerf, mid-benchmark)")
	for _, k := range killed {
		pid, _ := strconv.Atoi(k[1])
		assert.False(t, processRuns(pid), "process %s, which the reaper killed, still runs", k[1])
	}
	if *runtimeFlag != harness.RuntimeProcess {
		assert.Contains(t, report, "container ", "the server's container, removed by the reaper")
	}
	assert.NotContains(t, report, "FAILED")
	for _, p := range regexp.MustCompile(`(?m)^  path (.+)$`).FindAllStringSubmatch(report, -1) {
		assert.NoFileExists(t, p[1], "a path the reaper removed")
		assert.NoDirExists(t, p[1], "a path the reaper removed")
	}

	run := c.run(t)
	c.assertNothingLeft(t, filepath.Base(run))
	assert.Empty(t, processLeftovers(t, c.cmd.Process.Pid), "containers and images labelled with the killed binary's process")
	reserves, _ := filepath.Glob(filepath.Join(c.root, ".qualkit-reserve-*"))
	assert.Empty(t, reserves, "the run's evidence reserve")
}
