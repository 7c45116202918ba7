package harness

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// serverRecord is the server's command record in the row's commands.jsonl.
func serverRecord(t *testing.T, s *Suite, row string) schema.CommandRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Evidence.Dir, row, schema.CommandsFile))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		var rec schema.CommandRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Stage == schema.StageServe && rec.Log == schema.ServerLog {
			return rec
		}
	}
	t.Fatalf("no server record in %s's commands.jsonl:\n%s", row, b)
	return schema.CommandRecord{}
}

// The overlapped order starts the server with the correctness case when the row states
// both resident sizes and the host holds them: its command starts during correctness, it
// is ready before the slow case ends, the benchmark still waits for the case, and the
// critical path takes the longer of the case and the load, not both. The evidence checks.
func TestServerLoadsBesideTheCorrectnessCase(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	c := p.row("early", faultSlowCase)
	c.Needs.ResidentBytes, c.Needs.CaseResidentBytes = 1<<20, 1<<20
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	require.Equal(t, schema.StatusQualified, res.Status, res.Reason)
	tb := res.TimeBudget
	require.NotNil(t, tb.Overlap)
	assert.True(t, tb.Overlap.ServerEarly, tb.Overlap.ServerWhy)
	assert.Contains(t, tb.Overlap.ServerWhy, "the server loaded beside the correctness case: the host had")
	assert.Greater(t, tb.Overlap.ServerAheadS, 0.9, "started as the one-second case began")

	rec := serverRecord(t, s, "early")
	assert.Equal(t, schema.StageCorrectness, rec.During)
	corr, _ := res.Stage(schema.StageCorrectness)
	serve, _ := res.Stage(schema.StageServe)
	corrEnd := corr.Start.Add(time.Duration(corr.WallS * float64(time.Second)))
	assert.False(t, rec.Start.Before(corr.Start), "the server starts with the case, not before it")
	assert.True(t, rec.Start.Before(corrEnd), "the server starts while the case runs")
	assert.False(t, serve.Start.Before(corrEnd), "the serve stage, and the benchmark after it, wait for the case")

	m := tb.Model
	assert.InDelta(t, m.BuildS+max(m.CorrectnessS, m.ServerLoadS)+m.ServedTaskS+m.NativeLoadS+m.NativeTaskS, tb.CriticalPathS, 0.002)
	assert.InDelta(t, schema.CriticalPath(m, false, true), tb.CriticalPathS, 0.002)
	assert.Less(t, tb.CriticalPathS, tb.ModelWorkS, "the load beside the case is off the critical path")

	// The checker's side of this order, forgeries included: qual's TestSerialAndOverlappedOrders
	// (the fake family's evidence is not a whole run).
}

// Where the server cannot start early, it starts at serve and the evidence says why: no
// resident sizes, too little memory, a case that builds the bundle, the serial order.
func TestServerStartsAfterTheCaseWhenItMust(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	for _, tc := range []struct {
		name   string
		adjust func(*Checkpoint)
		why    string
	}{
		{"no-sizes", func(c *Checkpoint) { c.Needs.ResidentBytes = 1 << 20 }, "the row states no resident size of the server or of the correctness case"},
		{"too-big", func(c *Checkpoint) { c.Needs.ResidentBytes, c.Needs.CaseResidentBytes = 1<<20, 1<<60 }, "the server and the correctness case need"},
		{"by-case", func(c *Checkpoint) {
			c.Adapter = FakeServing{ByCase: true, ToolsOK: "ok", Probe: "ok", Ident: "ok"}
			c.Needs.ResidentBytes, c.Needs.CaseResidentBytes = 1<<20, 1<<20
		}, "the correctness case builds the bundle the server serves"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := p.row(tc.name, "")
			tc.adjust(&c)
			res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
			require.NoError(t, err)
			require.Equal(t, schema.StatusQualified, res.Status, res.Reason)
			o := res.TimeBudget.Overlap
			require.NotNil(t, o)
			assert.False(t, o.ServerEarly)
			assert.Contains(t, o.ServerWhy, tc.why)
			assert.Zero(t, o.ServerAheadS)
			assert.Empty(t, serverRecord(t, s, tc.name).During, "the server started in its own stage")
		})
	}
	_, _, err := s.Finish(context.Background())
	require.NoError(t, err)
}

// A case that fails stops the server started beside it: the row fails at correctness as
// in the serial order, no later stage runs, and nothing listens on the server's port.
func TestFailedCaseStopsTheEarlyServer(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	c := p.row("early-fails", faultCaseFails)
	c.Needs.ResidentBytes, c.Needs.CaseResidentBytes = 1<<20, 1<<20
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.Error(t, err)
	assert.Equal(t, schema.StatusFailed, res.Status)
	assert.Equal(t, "correctness:fail", stageStatuses(res)[2])
	assert.Equal(t, "serve:not-run", stageStatuses(res)[3])
	rec := serverRecord(t, s, "early-fails")
	assert.Equal(t, schema.StageCorrectness, rec.During)
	i := slices.Index(rec.Args, "-port")
	require.Positive(t, i, "%v", rec.Args)
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+rec.Args[i+1], time.Second)
	if err == nil {
		conn.Close()
	}
	assert.Error(t, err, "the server started beside the failed case still listens")
	require.NotNil(t, res.TimeBudget.Overlap)
	assert.True(t, res.TimeBudget.Overlap.ServerEarly)
}

// gatedChecks is the fake family whose preflight checks (its Requirements) last until the
// build's command has begun: they wait for the gated build's start marker under the
// bundle cache, then pass (opening the build's gate) or fail. The build began during
// preflight exactly when the checks see the marker.
type gatedChecks struct {
	FakeFamily
	fail bool
}

func (g gatedChecks) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := g.FakeFamily.Describe(env, row)
	spec.Requirements = g.requirements
	return spec, err
}

func (g gatedChecks) requirements(env family.Env) []family.Requirement {
	// Bounded only so that a build that never began early fails the test, not hangs it.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); {
		started, _ := filepath.Glob(filepath.Join(env.Root, ".cache", "bundles", "*", ".partial-*", "*.started"))
		if len(started) > 0 {
			if g.fail {
				return []family.Requirement{{What: "a slow check found a fault on purpose, while the build ran", Fix: "nothing: a test fault"}}
			}
			os.WriteFile(strings.TrimSuffix(started[0], ".started")+".release", nil, 0o644)
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return []family.Requirement{{What: "the build's command never began while preflight's checks ran", Fix: "nothing: the test's finding"}}
}

// buildRecords are the build stage's command records of the row.
func buildRecords(t *testing.T, s *Suite, row string) []schema.CommandRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Evidence.Dir, row, schema.CommandsFile))
	require.NoError(t, err)
	var out []schema.CommandRecord
	for line := range strings.Lines(string(b)) {
		var rec schema.CommandRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		if rec.Stage == schema.StageBuild {
			out = append(out, rec)
		}
	}
	return out
}

// The overlapped order starts the build as soon as preflight knows what the build needs
// (fixtures, runtime, GPUs), beside its slow checks: the build's command starts during
// preflight, the build stage takes its outcome, and the time budget says how far ahead
// it began. The serial order builds in the build stage.
func TestBuildBesidePreflightsSlowChecks(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	c := p.row("build-early", "")
	c.Adapter = gatedChecks{FakeFamily: FakeFamily{Fault: faultGatedBuild}}
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	require.Equal(t, schema.StatusQualified, res.Status, res.Reason)
	o := res.TimeBudget.Overlap
	require.NotNil(t, o)
	assert.True(t, o.BuildEarly, o.BuildWhy)
	assert.Equal(t, buildEarlyWhy, o.BuildWhy)
	recs := buildRecords(t, s, "build-early")
	require.Len(t, recs, 1)
	assert.Equal(t, schema.StagePreflight, recs[0].During)
	pre, _ := res.Stage(schema.StagePreflight)
	build, _ := res.Stage(schema.StageBuild)
	assert.False(t, recs[0].Start.Before(pre.Start), "the build starts within preflight")
	assert.True(t, recs[0].Start.Before(build.Start), "... before the build stage")
	assert.InDelta(t, build.Start.Sub(recs[0].Start).Seconds(), o.BuildAheadS, 0.002)
	entries, err := filepath.Glob(filepath.Join(p.root, ".cache", "bundles", "*", ".partial-*"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the partial folder became the cache entry")

	p.cfg.Serial = true
	s2 := p.start(t)
	c = p.row("build-serial", "")
	c.Adapter = FakeFamily{Settings: map[string]string{"edit": "invert", "order": "serial"}} // another bundle: built, not taken from the cache
	res, err = s2.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	require.Equal(t, schema.StatusQualified, res.Status, res.Reason)
	assert.Nil(t, res.TimeBudget.Overlap, "the serial order begins nothing early")
	for _, rec := range buildRecords(t, s2, "build-serial") {
		assert.Empty(t, rec.During, "the serial order builds in the build stage")
	}
}

// A preflight that fails stops the build it began: the build's command ends before
// preflight does, no partial bundle is left in the cache, the row fails at preflight
// with the check's message, and the build stage does not run.
func TestFailedPreflightStopsTheEarlyBuild(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	c := p.row("build-stopped", "")
	c.Adapter = gatedChecks{FakeFamily: FakeFamily{Fault: faultGatedBuild}, fail: true}
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.Error(t, err)
	assert.Equal(t, []string{"preflight:fail", "build:not-run"}, stageStatuses(res)[:2])
	pre, _ := res.Stage(schema.StagePreflight)
	assert.Contains(t, pre.Error, "a slow check found a fault on purpose")
	recs := buildRecords(t, s, "build-stopped")
	require.Len(t, recs, 1)
	assert.Equal(t, schema.StagePreflight, recs[0].During)
	assert.NotZero(t, recs[0].ExitCode, "the gated build never finished: it was stopped")
	preEnd := pre.Start.Add(time.Duration(pre.WallS * float64(time.Second)))
	assert.False(t, recs[0].Start.Add(time.Duration(recs[0].WallS*float64(time.Second))).After(preEnd), "stopped before preflight ended")
	entries, err := filepath.Glob(filepath.Join(p.root, ".cache", "bundles", "*", ".partial-*"))
	require.NoError(t, err)
	assert.Empty(t, entries, "no partial bundle left")
	require.NotNil(t, res.TimeBudget.Overlap)
	assert.True(t, res.TimeBudget.Overlap.BuildEarly)
}

// Every stage's heartbeat ends with its stage, the build's begun during preflight too:
// once the row reported, no progress line comes (a heartbeat left running would log into
// a subtest that has ended, and print on forever).
func TestNoHeartbeatOutlivesItsStage(t *testing.T) {
	p := newPipeline(t, false)
	var out lockedLines
	p.cfg.Progress, p.cfg.Heartbeat = &out, 20*time.Millisecond
	s := p.start(t)
	c := p.row("heartbeats", "")
	c.Adapter = gatedChecks{FakeFamily: FakeFamily{Fault: faultGatedBuild}}
	res, err := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)
	require.True(t, res.TimeBudget.Overlap.BuildEarly, res.TimeBudget.Overlap.BuildWhy)
	n := len(out.all())
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, out.all()[:n], out.all(), "no line after the row reported")
}

// The pipeline wires exactly schema.Stages, in order: the subtests (StageNames) and the
// rule that a passing row passed every stage read that list.
func TestPipelineWiresSchemaStages(t *testing.T) {
	var names []string
	for _, st := range (&row{res: &schema.Result{}}).stages(&made{}) {
		names = append(names, st.name)
	}
	assert.Equal(t, schema.Stages, names)
	assert.Equal(t, append(slices.Clone(schema.Stages), schema.StageReport), StageNames())
}
