package qual

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit"
	"qualkit/internal/dockertest"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// needContainers fails a test that injects a fault only a container runtime has.
func needContainers(t *testing.T) {
	t.Helper()
	if *runtimeFlag == harness.RuntimeProcess {
		t.Fatal("this test injects a fault into the server's container: run it with the container runtime (RUNTIME=auto or container and a Docker engine)")
	}
}

// The server OOM-killed: the reference row with its containers capped below what the
// server needs to decode a request. The kernel kills it at the first request; the row
// fails as a hardware limit (never a wrong answer), names the correctness case to run
// alone on a host with the memory, and leaves nothing behind.
func TestServerOOMKilled(t *testing.T) {
	needContainers(t)
	marker := fmt.Sprintf("oom-%d", time.Now().UnixNano())
	t.Setenv(negativeControlMarker, marker)
	row := controlRow("refedit-v1-fault-oom", "fault: the server's container capped at 10 MiB",
		func(_ *harness.Checkpoint, f *refedit.Faulty) { f.MemoryBytes = 10 << 20 })
	var runID string
	// Registered first, so it runs last: after the suite's own cleanup removed the image.
	t.Cleanup(func() { assertNothingLeft(t, marker, runID) })
	s := isolatedSuite(t, "oom", false)
	runID = s.Evidence.RunID
	res, err := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
	require.NotNil(t, res, "%v", err)
	t.Logf("%s: %s", stageTimes(res), res.Reason)

	assert.Equal(t, schema.StatusFailed, res.Status)
	assert.Equal(t, schema.KindHardware, res.FailureKind)
	assert.Regexp(t, `^stage (serve|benchmark) failed: hardware-limit: the container was OOM-killed; next .*: go test ./qual/ -count=1 -v -run '.+' -args -qualkit.correctness-only$`, res.Reason)
	stage, msg := firstFailed(res)
	assert.Contains(t, msg, "oom_killed=true", "the %s stage's error", stage)
	assertEvidence(t, s, row.Name, res)
}

// What a hardware-limit row's reason asks for next: the row's preflight, build and
// unchanged correctness case alone. The row reads correctness-verified (never a passing
// status), the later stages not-run, and the run's evidence checks (Finish, at cleanup).
func TestCorrectnessOnlyRun(t *testing.T) {
	// Parallel again: its case's "1 failed" beside the parallel tests was another run
	// removing the bundle cache entry the case read (fixed: harness entryLock;
	// TestRunsShareABundleCacheEntry). A failure prints the case's output.
	t.Parallel() // its own suite and run folder (main_test.go: parallel tests)
	row := controlRow("refedit-v1", "the reference row, its correctness case alone", func(*harness.Checkpoint, *refedit.Faulty) {})
	s := isolatedSuite(t, "correctness-only", false, func(c *harness.SuiteConfig) { c.CorrectnessOnly = true })
	res, err := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
	if err != nil {
		out, _ := os.ReadFile(filepath.Join(s.Evidence.Dir, row.Name, "correctness", "output.log"))
		t.Fatalf("%v\ncorrectness/output.log:\n%s", err, out)
	}
	assert.Equal(t, schema.StatusCorrectnessOnly, res.Status, res.Reason)
	assert.False(t, schema.Passing(res.Status))
	for _, st := range res.Stages {
		want := schema.NotRun
		if slices.Contains(schema.CorrectnessOnlyStages, st.Name) {
			want = schema.Pass
		}
		assert.Equal(t, want, st.Status, "stage %s", st.Name)
	}
	require.NotNil(t, res.Correctness)
	assert.Equal(t, 1, res.Correctness.Executed)
	assert.Zero(t, res.Correctness.Skipped)
	assertEvidence(t, s, row.Name, res)
}

// The Docker engine restarted while the server serves: the row runs in a child test
// binary against an engine of its own (a second dockerd, so that the restart stops no
// other test's containers), which is restarted once AIPerf runs. The row fails as
// infrastructure, saying the engine went away; once the engine is back the run removes
// its container and image, and its evidence checks.
func TestEngineRestartedMidServe(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	needContainers(t)
	eng := dockertest.Start(t)
	// -test.v: the child says when its benchmark stage begins.
	c := startChild(t, t.TempDir(), "container", []string{"DOCKER_HOST=" + eng.Host()}, "-test.v")
	restarted := make(chan error, 1)
	go func() {
		// Mid-benchmark: the stage runs and the server has answered a request (its
		// records file has a line); AIPerf sends the next ones.
		benchmarking := c.waitFor(func() bool {
			if !strings.Contains(c.out.String(), "=== RUN   TestRefEdit/refedit-v1/benchmark") {
				return false
			}
			recs, _ := filepath.Glob(filepath.Join(c.root, "2*", "refedit-v1", schema.RecordsFile))
			b, _ := os.ReadFile(strings.Join(recs, ""))
			return len(recs) == 1 && bytes.Contains(b, []byte("\n"))
		})
		if !benchmarking {
			restarted <- fmt.Errorf("the child ended before its server answered a request of the benchmark")
			return
		}
		restarted <- eng.Restart()
	}()
	err := c.wait()
	require.NoError(t, <-restarted, "restart the engine")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the run must fail:\n%s", c.out)

	run := c.run(t)
	assert.Empty(t, leftoverProcesses(t, c.marker), "processes of the run")
	assert.Empty(t, c.tempLeft(t), "temp folders of the run")
	assert.Empty(t, eng.Leftovers(t, filepath.Base(run)), "containers and images of the run in the restarted engine")

	res := rowResult(t, run, c.out)
	assert.Equal(t, schema.StatusFailed, res.Status)
	assert.Equal(t, schema.KindInfrastructure, res.FailureKind, res.Reason)
	assert.Regexp(t, `^stage benchmark failed: infrastructure: the Docker engine is gone; the Docker engine was unreachable`, res.Reason)
	require.NoError(t, evidencecheck.Check(run, ""), "the run's evidence checks")
	t.Logf("%s (exit %d)", res.Reason, exit.ExitCode())
}

// The disk full while the row writes its evidence: the evidence root is a small tmpfs,
// filled to the last byte once AIPerf runs. The row fails as infrastructure ("the disk is
// full"); the run's reserve, given back, holds the evidence that says so; nothing is left.
func TestDiskFullWhileWritingEvidence(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	needContainers(t)
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts a small tmpfs as the evidence root, which needs root: run the tests as root (as make test and CI do), or with -run that leaves TestDiskFullWhileWritingEvidence out")
	}
	root, err := os.MkdirTemp("", "qk-full-")
	require.NoError(t, err)
	require.NoError(t, syscall.Mount("tmpfs", root, "tmpfs", 0, "size=64m"), "mount a tmpfs at %s", root)
	t.Cleanup(func() {
		if err := syscall.Unmount(root, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", root, err)
		}
		os.Remove(root)
	})
	c := startChild(t, root, *runtimeFlag, nil)
	filled := make(chan error, 1)
	go func() {
		if _, _, ok := c.waitForProcess("aiperf"); !ok {
			filled <- fmt.Errorf("the child ended before AIPerf ran")
			return
		}
		filled <- fill(filepath.Join(root, "filler"))
	}()
	err = c.wait()
	require.NoError(t, <-filled, "fill the evidence disk")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the run must fail:\n%s", c.out)

	run := c.run(t)
	c.assertNothingLeft(t, filepath.Base(run))
	left, _ := filepath.Glob(filepath.Join(root, ".qualkit-reserve-*"))
	assert.Empty(t, left, "the run's reserve")

	res := rowResult(t, run, c.out)
	assert.Equal(t, schema.StatusFailed, res.Status)
	assert.Equal(t, schema.KindInfrastructure, res.FailureKind, res.Reason)
	assert.Regexp(t, `^stage [a-z]+ failed: infrastructure: the disk is full; no space left on device`, res.Reason)
	require.NoError(t, os.Remove(filepath.Join(root, "filler")))
	require.NoError(t, evidencecheck.Check(run, ""), "the run's evidence checks")
	t.Logf("%s (exit %d)", res.Reason, exit.ExitCode())
}

// fill writes zeros to path until the file system has no space left.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// SIGINT and SIGTERM at every stage, in both runtimes: the reference row's suite is
// interrupted (as the signal handler does) as soon as the stage runs. The stage is cut,
// or, when it ends before it looks at its context, the next one fails before it begins;
// either way the row fails as interrupted, its lease is released, and nothing of it is
// left.
func TestInterruptAtEveryStage(t *testing.T) {
	runtimes := []string{harness.RuntimeProcess, harness.RuntimeContainer}
	if *runtimeFlag == harness.RuntimeProcess {
		runtimes = runtimes[:1]
		t.Log("the process runtime was asked for: the container runtime's cases do not run")
	}
	marker := fmt.Sprintf("every-stage-%d", time.Now().UnixNano())
	t.Setenv(negativeControlMarker, marker)
	stages := harness.StageNames()
	stages = stages[:len(stages)-1] // report is no stage a signal can cut: it is what runs after one
	var (
		mu    sync.Mutex
		runs  []string
		ports []int
	)
	t.Run("cases", func(t *testing.T) {
		for _, rt := range runtimes {
			for i, stage := range stages {
				sig := []string{"SIGINT", "SIGTERM"}[i%2]
				t.Run(rt+"/"+stage+"/"+sig, func(t *testing.T) {
					t.Parallel()
					row := controlRow("refedit-v1", "the reference row, interrupted", func(*harness.Checkpoint, *refedit.Faulty) {})
					trigger := &stageTrigger{row: row.Name, stage: stage}
					s := isolatedSuite(t, rt+"-"+stage, false, func(c *harness.SuiteConfig) {
						c.Runtime, c.Heartbeat, c.Progress = rt, 20*time.Millisecond, trigger
					})
					trigger.fire = func() { s.Interrupt(sig) }
					mu.Lock()
					runs = append(runs, s.Evidence.RunID)
					mu.Unlock()
					res, err := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
					if p, ok := serverPort(s, row.Name); ok {
						mu.Lock()
						ports = append(ports, p)
						mu.Unlock()
					}
					require.NotNil(t, res, "%v", err)
					require.True(t, trigger.fired(), "the row never ran stage %s: %s", stage, stageTimes(res))
					failed, _ := firstFailed(res)
					next := slices.Index(stages, stage) + 1
					assert.Contains(t, []string{stage, stages[min(next, len(stages)-1)]}, failed, "the stage cut: %s", stageTimes(res))
					assert.Equal(t, schema.StatusFailed, res.Status)
					assert.Equal(t, schema.KindInterrupted, res.FailureKind)
					assert.Regexp(t, `^stage `+failed+` failed: interrupted: `+sig+`, [0-9.]+ s into the stage$`, res.Reason)
					assert.NotNil(t, res.Lease, "the row's lease, released and recorded")
					assert.Equal(t, sig, strings.Fields(s.Interrupted())[0], "run.json's interrupted")
					assertEvidence(t, s, row.Name, res)
					t.Logf("signalled in %s, failed stage %s: %s", stage, failed, res.Reason)
				})
			}
		}
	})
	t.Run("no-leftovers", func(t *testing.T) {
		listening := listeningPorts(t)
		for _, p := range ports {
			assert.False(t, listening[p], "server port %d still listening", p)
		}
		assert.Empty(t, leftoverProcesses(t, marker), "processes the rows started")
		assert.Empty(t, dockerLeftovers(t, runs), "containers and images of the rows' runs")
	})
}

// stageTrigger is a suite's progress writer that fires once, at the first line of one
// row's stage (the heartbeat's, every 20 ms here). A build begun beside preflight (the
// overlapped order) prints build lines while preflight still runs: the build stage is
// known to run only once preflight said its order ("order: build early true|false"),
// and then, for a build begun early, at the line of the stage that takes it over.
type stageTrigger struct {
	row, stage string
	fire       func()
	once       sync.Once
	done       atomic.Bool
	mu         sync.Mutex
	order      string // "true" or "false" once preflight said whether the build began early
}

func (w *stageTrigger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if rest, ok := bytes.CutPrefix(p, []byte("qualkit: "+w.row+" preflight +")); ok {
		if _, after, ok := bytes.Cut(rest, []byte(": order: build early ")); ok {
			w.order, _, _ = strings.Cut(string(after), " ")
		}
	}
	if !bytes.HasPrefix(p, []byte("qualkit: "+w.row+" "+w.stage+" +")) {
		return len(p), nil
	}
	if w.stage == schema.StageBuild && (w.order == "" || w.order == "true" && !bytes.Contains(p, []byte("build: begun during preflight"))) {
		return len(p), nil
	}
	w.once.Do(func() { w.done.Store(true); w.fire() })
	return len(p), nil
}

func (w *stageTrigger) fired() bool { return w.done.Load() }

// Two runs of two processes on one bundle cache entry at once (two `make test` side by
// side; the cause of the refedit case's intermittent "1 failed" was one run replacing
// the entry while the other's case read it): each child run distrusts the other's entry
// (its evidence is under another root), so each builds; one takes the entry, the other
// waits or builds its own bundle in its work folder. Both cases pass.
func TestRunsShareABundleCacheEntry(t *testing.T) {
	t.Parallel() // its own child runs, run folders and markers (main_test.go: parallel tests)
	var kids []*child
	for range 2 {
		kids = append(kids, startChild(t, t.TempDir(), *runtimeFlag, nil, "-qualkit.correctness-only"))
	}
	keys := map[string]bool{}
	for i, c := range kids {
		require.NoError(t, c.wait(), "child run %d must pass:\n%s", i+1, c.out)
		run := c.run(t)
		res := rowResult(t, run, c.out)
		assert.Equal(t, schema.StatusCorrectnessOnly, res.Status, "child run %d: %s", i+1, res.Reason)
		require.NotNil(t, res.Bundle)
		keys[res.Bundle.CacheKey] = true
		t.Logf("child run %d: cached %t, private %q, built_by %q", i+1, res.Bundle.Cached, res.Bundle.Private, res.Bundle.BuiltBy)
		c.assertNothingLeft(t, filepath.Base(run))
	}
	assert.Len(t, keys, 1, "both runs used one cache key")
}
