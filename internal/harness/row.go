package harness

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// row is the state one checkpoint row threads through its stages.
type row struct {
	s    *Suite
	c    Checkpoint
	spec family.Spec // the family's facts for the row (Describe), as of the last env
	ev   *RowEvidence
	env  family.Env
	fx   *fixtures.Workload

	describeErr error        // what the family's Describe said was wrong, failed in preflight
	gpus        []gpu.Device // chosen in preflight, passed to the server by UUID
	bundle      string
	bundleSHA   string
	entry       *entryLock // the read lock on the bundle's cache entry, held until the row ends
	caseDir     string     // the case's scratch folder in Spec.BundleDir, removed when the row ends
	server      serving.Server
	scratch     string           // the server's scratch folder (ServeSpec.Scratch)
	proto       wire.Protocol    // how requests travel (the family's, else wire.OpenAI)
	img         *serving.Image   // the family's image, once prepared
	benchmarked *benchmarkResult // what the benchmark stage hands to quality and identity
	failed      string           // first stage that failed
	why         string           // what Classify said of it
	failedAt    time.Duration    // how far into that stage
	skipReason  string
	result      *schema.Result
	prog        *progress // the running stage's; nil between stages
	sumsSHA     string    // sha256 of the row's SHA256SUMS, once reported
	lease       *gpu.Lease
	leaseWaitS  float64

	// For the time budget.
	started          time.Time
	ended            time.Time // set once, when the row's work ended (writeReport)
	toolsS           float64   // the family's tool commands
	caseS            float64   // the correctness case's command
	replays          []*replay // the identity stage's native Tasks
	nativeBatchWallS float64
	influenceBodies  [][]byte // the influence responses, for their Task times
	controlsBodies   [][]byte // the controls probes' 200 responses, for their Task times
	nativeWaitedS    float64  // how long a preloaded batch waited for its items

	// The overlapped order: what begins early, and the commands it began.
	plan       overlapPlan
	earlyBuild *earlyBuild  // the build, begun during preflight when plan.buildEarly
	buildProg  *progress    // the build's progress, from its start (early or not)
	early      *earlyServer // the server, started with the correctness case when plan.serverEarly
	// earlyStart is that server's start as its command record states it (once recorded).
	earlyStart time.Time
	bench      *background // AIPerf, started with the server when plan.aiperfEarly
	native     *background // the native batch, started with the server when plan.preload
}

// stage is one named step of the pipeline.
type stage struct {
	name string
	run  func(r *row, ctx context.Context) error
}

// Stages is the pipeline, in order. Influence and controls run while the server is still
// up, since they need HTTP; controls stops it when done, so the native Task has the GPU to
// itself.
var stages = []stage{
	{schema.StagePreflight, (*row).preflight},
	{schema.StageBuild, (*row).build},
	{schema.StageCorrectness, (*row).correctness},
	{schema.StageServe, (*row).serve},
	{schema.StageBenchmark, (*row).benchmark},
	{schema.StageQuality, (*row).quality},
	{schema.StageInfluence, (*row).influence},
	{schema.StageControls, (*row).controls},
	{schema.StageIdentity, (*row).identity},
}

// StageNames lists the subtests every row runs, in order (the report last).
func StageNames() []string {
	names := make([]string, 0, len(stages)+1)
	for _, st := range stages {
		names = append(names, st.name)
	}
	return append(names, schema.StageReport)
}

// runName is the row's name for this run of it: the row's own the first time, then
// <row>.2, <row>.3, ... (go test -count=N): no row is ever written twice into one folder.
func (s *Suite) runName(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rowRuns == nil {
		s.rowRuns = map[string]int{}
	}
	s.rowRuns[name]++
	if n := s.rowRuns[name]; n > 1 {
		return fmt.Sprintf("%s.%d", name, n)
	}
	return name
}

// newRow opens the row's evidence folder and registers its result with the suite.
func (s *Suite) newRow(c Checkpoint, work, reproduce string) (*row, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Name = s.runName(c.Name)
	ev, err := s.Evidence.Row(c.Name)
	if err != nil {
		return nil, err
	}
	r := &row{s: s, c: c.withDefaults(), ev: ev, env: family.Env{Root: s.cfg.Root, Work: work, Python: s.cfg.Python}, started: time.Now()}
	// A family that cannot describe the row fails its preflight, saying why
	// (r.describeErr); the rest of the row reads the facts it did state.
	r.describeErr = r.describe()
	r.result = &schema.Result{
		Schema: schema.ResultSchema, RunID: s.Evidence.RunID, Row: c.Name, Status: schema.StatusFailed,
		Checkpoint: schema.CheckpointRef{Name: c.Name, Family: c.Family, Backend: r.spec.Backend, Model: c.Model,
			Profile: c.Profile, Revision: c.Revision, Smoke: c.Smoke, Double: c.Double},
		Measured: c.Bench.Measured, Warmup: c.Bench.Warmup,
		Command: reproduce, Provenance: s.provenance,
		NativeOutputPattern: r.spec.NativeOutputPattern,
	}
	r.proto = r.spec.Wire
	if r.proto == nil {
		r.proto = wire.OpenAI{}
	}
	s.register(r.result)
	return r, nil
}

// describe asks the family for its facts on the row's env as it stands, and checks them.
func (r *row) describe() error {
	spec, err := r.c.Adapter.Describe(r.env, r.c.Row())
	if err == nil {
		err = spec.Validate()
	}
	r.spec = spec
	if err != nil {
		return fmt.Errorf("family %s cannot describe row %s: %w", r.c.Family, r.c.Name, err)
	}
	return nil
}

// Qualify runs every stage of one row as a subtest of t, then the report. A row runs
// whole or not at all: a -run or -skip that selects only some of its stages fails the
// row at once, saying how to select it whole, since part of a row proves nothing.
func (s *Suite) Qualify(t *testing.T, c Checkpoint) {
	t.Helper()
	if err := wholeRow(t.Name()); err != nil {
		t.Fatal(err)
	}
	r, err := s.start(t.Context(), c, t.TempDir(), Reproduce(t.Name()), func(line string) { t.Log(line) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.end)
	ctx, cancel := s.rowContext(t.Context(), t)
	defer cancel()
	r.drive(ctx, subtests{t: t, r: r})
}

// Run qualifies one row without subtests, the same way: the stages in order, each after
// a failure recorded "not-run", then the report. reproduce is the command results.json
// gives to run the row again (Reproduce, for a test's own name). Negative controls use
// it to prove which stage catches a fault.
func (s *Suite) Run(ctx context.Context, c Checkpoint, work, reproduce string) (*schema.Result, error) {
	ctx, cancel := s.rowContext(ctx, nil)
	defer cancel()
	r, err := s.start(ctx, c, work, reproduce, nil)
	if err != nil {
		return nil, err
	}
	defer r.end()
	return r.result, r.drive(ctx, calls{})
}

// start leases what the row needs and opens it; on an error nothing is held.
func (s *Suite) start(ctx context.Context, c Checkpoint, work, reproduce string, say func(string)) (*row, error) {
	lease, waitS := s.lease(ctx, c, say)
	r, err := s.newRow(c, work, reproduce)
	if err != nil {
		releaseLease(lease)
		return nil, err
	}
	r.lease, r.leaseWaitS = lease, waitS
	return r, nil
}

// end stops what the row started, in the one order both drivers use: what runs beside
// the stages, the server, the bundle cache entry's lock, then the lease. Each step is
// idempotent: the report has usually done them.
func (r *row) end() {
	r.stopBackground()
	r.stopServer()
	r.unlockEntry()
	r.removeCaseDir()
	r.release()
}

// removeCaseDir removes the correctness case's scratch folder made in the family's
// BundleDir (the bundle it built lives there): the row's work folder is not its home.
func (r *row) removeCaseDir() {
	if r.caseDir == "" {
		return
	}
	if err := os.RemoveAll(r.caseDir); err != nil {
		fmt.Fprintf(os.Stderr, "qualkit: %s: could not remove the case's folder: %v\n", r.c.Name, err)
	}
	r.caseDir = ""
}

// stageRunner runs a row's stages and its report: as subtests under go test (subtests),
// or as plain calls (calls). Each says whether the body ran: a -run/-skip selection can
// leave a subtest out.
type stageRunner interface {
	stage(name string, body func(say func(string)) error) (ran bool)
	report(body func() error) (ran bool)
	// skipped ends the row's test as skipped (a row that is not run, and says why).
	skipped(why string)
	// missed fails the row's test: a stage or the report did not run.
	missed(format string, args ...any)
}

// drive runs the row's stages in order, then its report, through run. A stage after a
// failure, or beyond a correctness-only run, is recorded "not-run" without a subtest, so
// the one failure that matters is not buried under a FAIL line per later stage.
func (r *row) drive(ctx context.Context, run stageRunner) error {
	for _, st := range stages {
		if r.failed != "" || r.beyondCorrectnessOnly(st.name) {
			r.runStage(ctx, st, nil)
			continue
		}
		if !run.stage(st.name, func(say func(string)) error { return r.runStage(ctx, st, say) }) {
			// wholeRow predicted otherwise; the row still never reads as passed.
			r.notSelected(st.name)
			run.missed("stage %s of %s did not run: the -run/-skip selection left it out, so the row fails", st.name, r.c.Name)
		}
		if r.skipReason != "" {
			err := r.report()
			run.skipped("not run (not a qualification run): " + r.skipReason)
			return err
		}
	}
	var err error
	if !run.report(func() error { err = r.report(); return err }) {
		err = r.report()
		run.missed("the report of %s did not run: the -run/-skip selection left it out, so the row fails", r.c.Name)
	}
	return err
}

// subtests runs each stage as a subtest of t and the report as its last.
type subtests struct {
	t *testing.T
	r *row
}

func (s subtests) stage(name string, body func(say func(string)) error) (ran bool) {
	s.t.Run(name, func(t *testing.T) {
		ran = true
		err := body(func(line string) { t.Log(line) })
		switch {
		case s.r.skipReason != "":
			t.Skipf("%s %s: %s", name, s.r.c.Name, s.r.skipReason)
		case err != nil:
			t.Fatalf("%v\nevidence: %s", err, s.r.ev.Dir)
		}
	})
	return ran
}

func (s subtests) report(body func() error) (ran bool) {
	s.t.Run(schema.StageReport, func(t *testing.T) {
		ran = true
		err := body()
		r := s.r
		r.attrs(t)
		t.Logf("%s%s", schema.RowMarkdownHeader(), MarkdownRow(r.result))
		t.Logf("sha256 of %s/%s: %s (the anchor that proves every file of the row)", r.ev.Dir, schema.ChecksumFile, r.sumsSHA)
		if err != nil {
			t.Fatal(err)
		}
	})
	return ran
}

func (s subtests) skipped(why string)                { s.t.Skip(why) }
func (s subtests) missed(format string, args ...any) { s.t.Errorf(format, args...) }

// calls runs each stage and the report as a plain call.
type calls struct{}

func (calls) stage(_ string, body func(say func(string)) error) bool { body(nil); return true }
func (calls) report(body func() error) bool                          { body(); return true }
func (calls) skipped(string)                                         {}
func (calls) missed(string, ...any)                                  {}

// wholeRow is nil when go test's -run and -skip select every stage subtest of the row
// named rowTest, or none; else an error naming what runs and how to select the row whole.
func wholeRow(rowTest string) error {
	sel, err := TestSelection()
	if err != nil {
		return err
	}
	var on, off []string
	for _, name := range StageNames() {
		if sel.Runs(rowTest + "/" + name) {
			on = append(on, name)
		} else {
			off = append(off, name)
		}
	}
	if len(off) == 0 {
		return nil
	}
	selected := "none of its stages"
	if len(on) > 0 {
		selected = "only " + strings.Join(on, ", ")
	}
	return fmt.Errorf("the -run/-skip selection runs %s of row %s, not %s: a row runs whole or proves nothing, so it did not start. "+
		"Run it whole with: %s (to check only what it needs of this host: make doctor RUN='%s')",
		selected, rowTest, strings.Join(off, ", "), Reproduce(rowTest), runPattern(rowTest))
}

// notSelected records a stage that did not run because go test left it out.
func (r *row) notSelected(name string) {
	r.result.Stages = append(r.result.Stages, schema.StageResult{Name: name, Status: schema.NotRun,
		Error: "not selected by -run/-skip: a row runs whole"})
	if r.failed == "" {
		r.failed = name
	}
}

func (r *row) stopServer() {
	if r.server != nil {
		r.server.Stop(context.Background())
	}
}

func (c Checkpoint) withDefaults() Checkpoint {
	c.Deadline = c.Deadlines()
	return c
}

// beyondCorrectnessOnly says whether a correctness-only run leaves stage out.
func (r *row) beyondCorrectnessOnly(stage string) bool {
	return r.s.cfg.CorrectnessOnly && !slices.Contains(schema.CorrectnessOnlyStages, stage)
}

// runStage runs one stage unless an earlier one failed (then it is a failure too, never
// a skip), times it and records its outcome. The error names stage and row.
func (r *row) runStage(ctx context.Context, st stage, say func(string)) error {
	start := time.Now()
	res := schema.StageResult{Name: st.name, Status: schema.NotRun, Start: start.UTC()}
	defer func() {
		res.WallS = time.Since(start).Seconds()
		r.result.Stages = append(r.result.Stages, res)
	}()
	if r.failed != "" {
		res.Error = fmt.Sprintf("not run because stage %q failed", r.failed)
		return fmt.Errorf("%s %s: %s", st.name, r.c.Name, res.Error)
	}
	if r.skipReason != "" {
		return nil
	}
	if r.beyondCorrectnessOnly(st.name) {
		res.Error = "not run: a correctness-only run (-qualkit.correctness-only) runs preflight, build and the correctness case alone"
		return nil
	}
	if ctx.Err() != nil {
		// Interrupted, or out of time, before it began: it fails as what stopped it, and
		// what began early for a later stage ends with it, as with any failed stage
		// (nothing will wait for it; the checker bounds it by the stages it ran across).
		r.stopBackground()
		res.Status, r.failed = schema.Fail, st.name
		res.Kind, r.why = Classify(ctx, st.name, ctx.Err())
		res.Error = fmt.Sprintf("%s (%s) before the stage began", res.Kind, r.why)
		return fmt.Errorf("%s %s: %s", st.name, r.c.Name, res.Error)
	}
	p := r.beginStage(st.name, say)
	err := st.run(r, ctx)
	p.end()
	r.prog = nil
	switch {
	case r.skipReason != "":
		return nil
	case err != nil:
		// What began early for a later stage ends with this one: nothing will wait for it.
		r.stopBackground()
		if r.server != nil {
			// A server that died took the stage with it: its end is the cause.
			if died := r.server.Died(context.WithoutCancel(ctx)); died != nil {
				err = fmt.Errorf("%w\n%w", died, err)
			}
		}
		if full := r.s.Evidence.diskFull(); full != nil {
			err = fmt.Errorf("%v\n%w", full, err)
		}
		res.Status, res.Error, r.failed = schema.Fail, err.Error(), st.name
		res.Kind, r.why = Classify(ctx, st.name, err)
		r.failedAt = time.Since(start)
		return fmt.Errorf("%s %s (%s: %s): %w", st.name, r.c.Name, res.Kind, r.why, err)
	}
	res.Status = schema.Pass
	return nil
}

// report settles the row's status and writes results.json, row.md, what the Reporter
// derives, and the row's SHA256SUMS. The server stops first: a row's files are final
// once it reports, and a running server still writes its log.
func (r *row) report() error {
	return r.s.Evidence.writeEvidence(r.writeReport)
}

func (r *row) writeReport() error {
	r.stopBackground()
	r.stopServer()
	if r.ended.IsZero() {
		r.ended = time.Now()
	}
	r.release()
	if err := r.ev.Flush(); err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	res := r.result
	switch {
	case r.skipReason != "":
		res.Status, res.Reason = schema.StatusNotRun, r.skipReason
	case r.failed != "":
		res.Status, res.Reason, res.FailureKind = schema.StatusFailed, r.failureReason(), r.failedKind()
	case r.s.cfg.CorrectnessOnly:
		res.Status, res.Reason = schema.StatusCorrectnessOnly, "correctness-only run: the row's unchanged correctness case passed alone "+
			"(beside a public run whose row met a hardware limit, make merge-evidence keeps it as the local verification); it qualifies nothing"
		for _, st := range res.Stages {
			if slices.Contains(schema.CorrectnessOnlyStages, st.Name) && st.Status != schema.Pass {
				res.Status, res.Reason = schema.StatusFailed, "not every stage of the correctness-only run ran and passed"
			}
		}
	case !everyStagePassed(res):
		// A passing status is earned by every stage passing, not by none failing.
		res.Status, res.Reason = schema.StatusFailed, "not every stage ran and passed"
	case r.c.Double:
		res.Status, res.Reason = schema.StatusDouble, "served by a contract double of the serving stack: proves the adapter's wiring, never the checkpoint"
	case r.c.Smoke:
		res.Status, res.Reason = schema.StatusSmoke, "smoke profile: never qualification of the full checkpoint"
	case !r.s.cfg.Qualification:
		res.Status, res.Reason = schema.StatusPassedNQ, "run with -qualkit.not-qualification: it qualifies nothing"
	case res.Provenance.Dirty:
		res.Status, res.Reason = schema.StatusDirty, dirtyReason(res.Provenance)
	default:
		res.Status, res.Reason = schema.StatusQualified, ""
	}
	res.TimeBudget = r.timeBudget()
	if err := r.ev.WriteJSON(schema.ResultsFile, res); err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	if err := r.ev.WriteFile(schema.RowMarkdown, []byte(schema.RowMarkdownHeader()+MarkdownRow(res))); err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	if rep := r.s.cfg.Reporter; rep != nil {
		if err := rep.Row(r.ev.Dir); err != nil {
			return fmt.Errorf("report %s: derived reports: %w", r.c.Name, err)
		}
	}
	// The row is final: its checksum list, whose sha256 goes into JUnit and the log.
	sum, err := WriteChecksums(r.ev.Dir)
	if err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	r.sumsSHA = sum
	if !schema.Passing(res.Status) && res.Status != schema.StatusCorrectnessOnly {
		return fmt.Errorf("report %s: %s (%s); evidence %s", r.c.Name, res.Status, res.Reason, r.ev.Dir)
	}
	return nil
}

// everyStagePassed says whether res lists exactly the pipeline's stages, in order, each passed.
func everyStagePassed(res *schema.Result) bool {
	if len(res.Stages) != len(schema.Stages) {
		return false
	}
	for i, st := range res.Stages {
		if st.Name != schema.Stages[i] || st.Status != schema.Pass {
			return false
		}
	}
	return true
}

// attrs puts the headline numbers into JUnit as properties of the report test case.
func (r *row) attrs(t *testing.T) {
	res := r.result
	t.Attr("qualkit.status", res.Status)
	if res.Reason != "" {
		t.Attr("qualkit.reason", res.Reason)
	}
	if res.FailureKind != "" {
		t.Attr("qualkit.failure_kind", res.FailureKind)
	}
	t.Attr("qualkit.evidence", r.ev.Dir)
	t.Attr("qualkit.sha256sums", r.sumsSHA)
	if res.ClientErrors != nil {
		t.Attr("qualkit.client_errors", fmt.Sprint(*res.ClientErrors))
	}
	if res.Bundle != nil {
		t.Attr("qualkit.bundle_sha256", res.Bundle.SHA256)
	}
	if res.Identity != nil {
		t.Attr("qualkit.native_http_matches", fmt.Sprintf("%d/%d", res.Identity.PixelMatches, res.Identity.Total))
	}
	if res.HTTP != nil && res.Task != nil {
		t.Attr("qualkit.http_p50_ms", fmt.Sprintf("%.3f", res.HTTP.P50))
		t.Attr("qualkit.http_p95_ms", fmt.Sprintf("%.3f", res.HTTP.P95))
		t.Attr("qualkit.task_p50_ms", fmt.Sprintf("%.3f", res.Task.P50))
		t.Attr("qualkit.task_p95_ms", fmt.Sprintf("%.3f", res.Task.P95))
		t.Attr("qualkit.images_per_s", fmt.Sprintf("%.4f", res.ImagesPerS))
	}
}

// Reproduce is the command that reruns exactly the qual test named testName (a row, or a
// test that runs rows through Suite.Run).
func Reproduce(testName string) string {
	return fmt.Sprintf("go test ./qual/ -count=1 -v -run '%s'", runPattern(testName))
}

// runPattern is the -run pattern that selects exactly the test named testName.
func runPattern(testName string) string {
	parts := strings.Split(testName, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// lease takes from the run's pool what the row needs for its whole life: its GPUs by UUID
// (the host's GPUs are read once, by the first row that needs one), or a CPU row slot.
// It waits while other rows hold them, saying so once through say. It returns nil when
// the GPUs can never come (too few on this host, or none readable): preflight then names
// what is missing.
func (s *Suite) lease(ctx context.Context, c Checkpoint, say func(string)) (*gpu.Lease, float64) {
	if c.Needs.GPU != (gpu.Needs{}) {
		s.poolGPUs.Do(func() {
			if reading, err := gpu.Read(ctx, s.cfg.GPURead); err == nil {
				s.pool.SetDevices(reading.Devices)
			}
		})
	}
	start := time.Now()
	onWait := func(holders []string) {
		if say != nil {
			say(fmt.Sprintf("qualkit: %s waits for %s, held by %s", c.Name, c.Needs.GPU.Wanted(), strings.Join(holders, ", ")))
		}
	}
	l, err := s.pool.Acquire(ctx, c.Name, c.Needs.GPU, c.Needs.ShareGPU, onWait)
	if err != nil {
		return nil, 0
	}
	return l, time.Since(start).Seconds()
}

func releaseLease(l *gpu.Lease) {
	if l != nil {
		l.Release()
	}
}

// release gives the row's lease back and records it with the rows that ran beside it;
// a second call does nothing.
func (r *row) release() {
	if r.lease == nil || r.result.Lease != nil {
		return
	}
	r.lease.Release()
	l := &schema.Lease{GPUs: r.lease.UUIDs(), Shared: r.lease.Shared, Start: r.lease.Start.UTC(), End: r.lease.End.UTC(),
		WaitS: round6(r.leaseWaitS), RanBeside: []schema.Neighbour{}}
	for _, n := range r.lease.Beside() {
		nb := schema.Neighbour{Row: n.Row, GPUs: n.GPUs, Start: n.Start.UTC()}
		if !n.End.IsZero() {
			nb.End = n.End.UTC()
		}
		l.RanBeside = append(l.RanBeside, nb)
	}
	r.result.Lease = l
}

// failedKind is the kind recorded for the failed stage.
func (r *row) failedKind() string {
	for _, st := range r.result.Stages {
		if st.Name == r.failed {
			return st.Kind
		}
	}
	return ""
}

// failureReason is the row's reason when a stage failed: the stage, the kind and what
// happened, so that a reader of the table needs no log. A hardware limit also says what
// the seed's rule needs next: the unchanged correctness case, alone, on capable hardware.
func (r *row) failureReason() string {
	kind := r.failedKind()
	detail := r.why
	switch kind {
	case schema.KindInterrupted, schema.KindTimeout:
		detail = fmt.Sprintf("%s, %.1f s into the stage", r.why, r.failedAt.Seconds())
	case schema.KindHardware:
		detail = r.why + "; next (a hardware limit is no wrong answer): run the row's unchanged correctness case alone on a host that has the memory, " +
			"and keep its non-skipped pass beside this run (make merge-evidence takes that run as the local verification): " +
			r.result.Command + " -args -qualkit.correctness-only"
	default:
		for _, st := range r.result.Stages {
			if st.Name == r.failed {
				detail = reasonLine(st.Error)
			}
		}
		if kind == schema.KindInfrastructure {
			detail = r.why + "; " + detail
		}
	}
	return "stage " + r.failed + " failed: " + kind + ": " + detail
}

// reasonLine is a stage's error as the row's one-line reason, whole, what to do first:
// a list of unmet requirements (Missing) leads with their fixes, then says every
// requirement; any other error is its first line, with the next when the first only
// announces a list ("2 problem(s):"). What follows is a log's tail, left to the log.
func reasonLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimLeft(strings.TrimSpace(lines[i]), "- ")
	}
	if strings.HasSuffix(lines[0], "requirement(s) not met:") {
		var fixes, what []string
		for _, l := range lines[1:] {
			if f, ok := strings.CutPrefix(l, "fix:"); ok {
				if f = strings.TrimSpace(f); f != "" {
					fixes = append(fixes, f)
				}
			} else if l != "" {
				what = append(what, l)
			}
		}
		s = lines[0] + " " + strings.Join(what, "; ")
		if len(fixes) > 0 {
			s = "fix: " + strings.Join(fixes, "; ") + "; " + s
		}
		return s
	}
	s = lines[0]
	if strings.HasSuffix(s, ":") && len(lines) > 1 {
		s += " " + lines[1]
		if len(lines) > 2 {
			s += fmt.Sprintf(" (+%d more lines)", len(lines)-2)
		}
	}
	return s
}

// rowContext is a row's context: cancelled when the suite is interrupted, and, under go
// test, ending a margin before the test binary's -timeout, so that the row stops as a
// failure it reports (kind timeout) rather than as the testing package's panic. The
// margin is what cleaning up and writing the evidence needs.
func (s *Suite) rowContext(parent context.Context, t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	if s.ctx.Err() != nil {
		cancel(context.Cause(s.ctx))
	}
	release := func() { stop(); cancel(nil) }
	if t == nil {
		return ctx, release
	}
	deadline, ok := t.Deadline()
	if !ok {
		return ctx, release
	}
	margin := min(max(time.Until(deadline)/5, 3*time.Second), 2*time.Minute)
	dctx, dcancel := context.WithDeadlineCause(ctx, deadline.Add(-margin), errTestDeadline)
	return dctx, func() { dcancel(); release() }
}
