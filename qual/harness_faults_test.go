package qual

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// TestHarnessFaults proves the harness itself fails cleanly: bounded time, a clear
// error, the evidence kept, nothing left running.
func TestHarnessFaults(t *testing.T) {
	t.Run("aiperf-missing", func(t *testing.T) {
		cfg := baseConfig
		cfg.AIPerf.Bin = filepath.Join(t.TempDir(), "aiperf")
		res := runIsolated(t, cfg, controlRow("refedit-v1-no-aiperf", "harness fault: AIPerf missing", func(*harness.Checkpoint, *refedit.Faulty) {}))
		stage, msg := firstFailed(res)
		assert.Equal(t, "preflight", stage)
		assert.Contains(t, msg, "aiperf not found at")
		assert.Contains(t, msg, "make setup")
	})

	t.Run("aiperf-wrong-version", func(t *testing.T) {
		cfg := baseConfig
		cfg.AIPerf.Bin = filepath.Join(t.TempDir(), "aiperf")
		require.NoError(t, os.WriteFile(cfg.AIPerf.Bin, []byte("#!/bin/sh\necho 0.12.1\n"), 0o755))
		res := runIsolated(t, cfg, controlRow("refedit-v1-old-aiperf", "harness fault: AIPerf 0.12.1", func(*harness.Checkpoint, *refedit.Faulty) {}))
		stage, msg := firstFailed(res)
		assert.Equal(t, "preflight", stage)
		assert.Contains(t, msg, `version "0.12.1", the pin is 0.13.0`)
	})

	t.Run("evidence-not-writable", func(t *testing.T) {
		blocker := filepath.Join(t.TempDir(), "a-file")
		require.NoError(t, os.WriteFile(blocker, nil, 0o644))
		cfg := baseConfig
		cfg.EvidenceRoot, cfg.RunID = filepath.Join(blocker, "evidence"), "never-created"
		_, err := harness.NewSuite(cfg)
		require.ErrorContains(t, err, "-qualkit.evidence", "the error says which flag chooses another folder")
	})

	t.Run("cancelled-during-benchmark", func(t *testing.T) {
		marker := fmt.Sprintf("cancel-%d-%d", os.Getpid(), time.Now().UnixNano())
		t.Setenv(negativeControlMarker, marker)
		// The second request hangs for an hour: a run that waited for it would meet go
		// test's -timeout long before.
		const hang = time.Hour
		row := controlRow("refedit-v1-cancelled", "harness fault: the run is cancelled mid-benchmark", func(c *harness.Checkpoint, f *refedit.Faulty) {
			f.Fault, f.FaultDelay, c.Deadline.Request = "slow:2", hang, 2*hang
		})
		s := isolatedSuite(t, "cancelled", false)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cancelledAt := make(chan time.Time, 1)
		go func() {
			// Cancel once the server holds the hung request (its log says so).
			log := filepath.Join(s.Evidence.Dir, row.Name, "serve", "server.log")
			for ctx.Err() == nil {
				if b, _ := os.ReadFile(log); strings.Contains(string(b), "edit request 2 sleeps") {
					cancelledAt <- time.Now()
					cancel()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		res, err := s.Run(ctx, row, t.TempDir(), harness.Reproduce(t.Name()))
		ended := time.Now()
		require.NotNil(t, res, "%v", err)
		var took time.Duration
		select {
		case at := <-cancelledAt:
			took = ended.Sub(at)
		default:
			t.Fatalf("the run ended before the server held the hung request: %s", stageTimes(res))
		}
		stage, msg := firstFailed(res)
		assert.Equal(t, "benchmark", stage)
		assert.Contains(t, msg, "context canceled")
		assert.Less(t, took, hang, "a cancelled run ends without waiting for the hung request")
		assertEvidence(t, s, row.Name, res)
		_, statErr := os.Stat(filepath.Join(s.Evidence.Dir, row.Name, "serve", "server.log"))
		assert.NoError(t, statErr, "the server log is kept")
		assert.Empty(t, leftoverProcesses(t, marker), "processes of the cancelled run are still running")
		// The run's image stays until its suite ends (isolatedSuite's cleanup, as Finish);
		// its container must be gone now.
		var containers []string
		for _, l := range dockerLeftovers(t, []string{s.Evidence.RunID}) {
			if strings.HasPrefix(l, "container ") {
				containers = append(containers, l)
			}
		}
		assert.Empty(t, containers, "containers of the cancelled run are still there")
		t.Logf("cancelled run ended %s after the cancel, first failed stage %s", took.Round(time.Millisecond), stage)
	})
}

// runIsolated runs row in a suite of its own built from cfg.
func runIsolated(t *testing.T, cfg harness.SuiteConfig, row harness.Checkpoint) *schema.Result {
	t.Helper()
	cfg.EvidenceRoot, cfg.RunID = t.TempDir(), harness.NewRunID(time.Now())+"-hf-"+row.Name
	s, err := harness.NewSuite(cfg)
	require.NoError(t, err)
	res, err := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
	require.NotNil(t, res, "%v", err)
	require.Error(t, err)
	assertEvidence(t, s, row.Name, res)
	return res
}
