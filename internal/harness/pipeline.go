// Package harness is the family-agnostic machinery that qualifies one checkpoint row:
// its stages (pipeline.go), each a subtest, all of it written to an evidence folder.
// Everything family-specific reaches it through family.Family.
package harness

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// row is what every stage of one checkpoint row shares; what a stage makes, the pipeline
// (stages, below) hands to the stages that need it.
type row struct {
	s     *Suite
	c     Checkpoint
	spec  family.Spec // Describe's, as of the last env
	env   family.Env
	ev    *RowEvidence
	lease *gpu.Lease
	prog  *progress // the running stage's; nil between stages
	plan  overlapPlan
	res   *schema.Result
	img   *rowImage // the family's image, once prepared
	stops cleanup
	st    rowState
}

type rowState struct {
	started, ended time.Time
	failed, why    string        // the first stage that failed, and Classify's why
	failedAt       time.Duration // into that stage
	skip           string        // why the row is not run (a host that lacks what it needs)
	sumsSHA        string        // of the row's SHA256SUMS, once reported
	leaseWaitS     float64
}

// made is what the stages made, for the stages after them and the report.
type made struct {
	fx          *fixtures.Workload
	build       *future[bundle]
	buildProg   *progress // the build's progress when it began during preflight
	bundle      bundle
	caseOut     caseRun
	launch      *serverLaunch
	server      *future[serving.Server]
	serverStart time.Time // the early server's, as its command record states it
	served      serving.Server
	bench       *future[schema.CommandRecord] // AIPerf
	native      *future[schema.CommandRecord] // the family's batch program
	benchmarked *benchmarkResult
	influence   [][]byte // the probes' responses, for their Task times
	controls    [][]byte
	identity    identityRun
}

// stage is one named step; held is the progress of its work begun before it (the build).
type stage struct {
	name string
	held **progress
	run  func(ctx context.Context) error
}

// StageNames lists the subtests every row runs, the report last.
func StageNames() []string { return append(slices.Clone(schema.Stages), schema.StageReport) }

// stages wires the pipeline, the one place results.json is assembled. Influence and
// controls need the server; controls stops it, so the native Task has the GPU to itself.
func (r *row) stages(m *made) []stage {
	res := r.res
	return []stage{
		{schema.StagePreflight, nil, func(ctx context.Context) (err error) {
			m.fx, m.build, m.buildProg, err = r.preflight(ctx)
			if err != nil && m.build != nil {
				// A build begun early and cut with preflight: its tool commands ran and are
				// recorded, so the time budget counts them (the checker holds it to them).
				m.build.stop(func(b bundle) { m.bundle.toolsS = b.toolsS })
			}
			if err == nil && m.fx != nil {
				res.Settings = m.fx.FormSettings()
			}
			return err
		}},
		{schema.StageBuild, &m.buildProg, func(ctx context.Context) (err error) {
			if m.build.early {
				r.prog.printf("build: begun during preflight; waiting for it")
			}
			m.bundle, err = m.build.wait()
			res.Bundle = m.bundle.info
			return err
		}},
		{schema.StageCorrectness, nil, func(ctx context.Context) (err error) {
			early := r.serverEarly(m.bundle)
			if early {
				if m.launch, err = r.prepareServer(ctx, m.bundle, m.fx, schema.StageCorrectness, &m.serverStart); err != nil {
					return fmt.Errorf("the server's start beside the correctness case: %w", err)
				}
				res.Output, res.Protocol = r.proto().OutputSource(), r.proto().Name()
				r.prog.printf("server: started now (%s runtime) to load beside the correctness case; the benchmark waits for the case", m.launch.runtime)
			}
			m.server = start(ctx, early, func(ctx context.Context) (serving.Server, error) {
				return serving.Start(ctx, m.launch.ss, m.launch.opts...)
			})
			m.caseOut, err = r.correctness(ctx, m.bundle)
			res.Correctness, m.bundle = m.caseOut.corr, m.caseOut.bundle
			// Stopped before the case's folder goes, which may hold the bundle it serves.
			r.stops.add(func() {
				m.server.stop(func(srv serving.Server) {
					if srv != nil {
						srv.Stop(context.Background())
					}
				})
			})
			return err
		}},
		{schema.StageServe, nil, func(ctx context.Context) (err error) {
			if m.launch == nil {
				if m.launch, err = r.prepareServer(ctx, m.bundle, m.fx, "", nil); err != nil {
					return err
				}
				res.Output, res.Protocol = r.proto().OutputSource(), r.proto().Name()
			}
			r.prog.watch(m.launch.ss.Log)
			if m.native, err = r.nativeBatch(ctx, m.bundle, r.plan.preload); err != nil {
				return err
			}
			if m.bench, err = r.aiperf(ctx, m.fx, m.launch.ss.URL(), r.plan.aiperfEarly); err != nil {
				return err
			}
			srv, err := r.serve(ctx, m.launch, m.server)
			if srv != nil {
				m.served = srv
				res.Runtime, res.StartupS = srv.Runtime(), srv.Startup().Seconds()
			}
			if err == nil {
				res.ServerIdentity = r.spec.Identity.Path
			}
			return err
		}},
		{schema.StageBenchmark, nil, func(ctx context.Context) (err error) {
			m.benchmarked, err = r.benchmark(ctx, m.fx, m.served, m.bench)
			if b := m.benchmarked; b != nil {
				res.ClientErrors = &b.clientErrors
				if t := b.timing; t != nil && t.HTTP != nil {
					res.HTTP, res.Task, res.TaskSource = t.HTTP, t.Task, t.Source
					res.Overhead, res.ImagesPerS, res.FirstRequest = t.Overhead, t.ImagesPerS, t.FirstRequest
				}
			}
			return err
		}},
		{schema.StageQuality, nil, func(ctx context.Context) (err error) {
			res.Quality, err = r.quality(m.fx, m.caseOut.scratch, m.benchmarked)
			return err
		}},
		{schema.StageInfluence, nil, func(ctx context.Context) (err error) {
			res.Influence, m.influence, err = r.influence(ctx, m.fx, m.served)
			return err
		}},
		{schema.StageControls, nil, func(ctx context.Context) (err error) {
			res.Controls, m.controls, err = r.controls(ctx, m.fx, m.served, m.benchmarked)
			return err
		}},
		{schema.StageIdentity, nil, func(ctx context.Context) (err error) {
			m.identity, err = r.identity(ctx, m.fx, m.bundle, m.benchmarked, m.native)
			res.Identity = m.identity.sum
			return err
		}},
	}
}

// drive runs the stages in order, then the report. A stage after a failure, or beyond a
// correctness-only run, is recorded "not-run" without a subtest: one FAIL line per row.
func (r *row) drive(ctx context.Context, run runner) error {
	m := &made{}
	for _, st := range r.stages(m) {
		if r.st.failed != "" || r.beyondCorrectnessOnly(st.name) {
			r.runStage(ctx, m, st, nil)
			continue
		}
		if !run.stage(st.name, func(say func(string)) error { return r.runStage(ctx, m, st, say) }) {
			r.res.Stages = append(r.res.Stages, schema.StageResult{Name: st.name, Status: schema.NotRun,
				Error: "not selected by -run/-skip: a row runs whole"})
			if r.st.failed == "" {
				r.st.failed = st.name
			}
			run.missed("stage %s of %s did not run: the -run/-skip selection left it out, so the row fails", st.name, r.c.Name)
		}
		if r.st.skip != "" {
			err := r.report(m)
			if run.t != nil {
				run.t.Skip("not run (not a qualification run): " + r.st.skip)
			}
			return err
		}
	}
	var err error
	if !run.report(func() error { err = r.report(m); return err }) {
		err = r.report(m)
		run.missed("the report of %s did not run: the -run/-skip selection left it out, so the row fails", r.c.Name)
	}
	return err
}

// runStage runs one stage unless an earlier one failed (then it fails too, never skips).
func (r *row) runStage(ctx context.Context, m *made, st stage, say func(string)) error {
	start := time.Now()
	res := schema.StageResult{Name: st.name, Status: schema.NotRun, Start: start.UTC()}
	defer func() {
		res.WallS = time.Since(start).Seconds()
		r.res.Stages = append(r.res.Stages, res)
	}()
	if r.st.failed != "" {
		res.Error = fmt.Sprintf("not run because stage %q failed", r.st.failed)
		return fmt.Errorf("%s %s: %s", st.name, r.c.Name, res.Error)
	}
	if r.st.skip != "" {
		return nil
	}
	if r.beyondCorrectnessOnly(st.name) {
		res.Error = "not run: a correctness-only run (-qualkit.correctness-only) runs preflight, build and the correctness case alone"
		return nil
	}
	if ctx.Err() != nil {
		// Interrupted or out of time before it began: it fails as what stopped it.
		r.stops.run()
		res.Status, r.st.failed = schema.Fail, st.name
		res.Kind, r.st.why = Classify(ctx, st.name, ctx.Err())
		res.Error = fmt.Sprintf("%s (%s) before the stage began", res.Kind, r.st.why)
		return fmt.Errorf("%s %s: %s", st.name, r.c.Name, res.Error)
	}
	var p *progress
	if st.held != nil && *st.held != nil {
		p = *st.held // its work began during an earlier stage
		p.attach(say)
	} else {
		p = r.newProgress(st.name, say, false)
	}
	r.prog = p
	err := st.run(ctx)
	p.end()
	r.prog = nil
	if r.img != nil {
		r.res.Container = r.img.info
	}
	switch {
	case r.st.skip != "":
		return nil
	case err != nil:
		if m.served != nil {
			// A server that died took the stage with it: its end is the cause.
			if died := m.served.Died(context.WithoutCancel(ctx)); died != nil {
				err = fmt.Errorf("%w\n%w", died, err)
			}
		}
		// What began early for a later stage ends with this one: nothing will wait for it.
		r.stops.run()
		if full := r.s.Evidence.diskFull(); full != nil {
			err = fmt.Errorf("%v\n%w", full, err)
		}
		res.Status, res.Error, r.st.failed = schema.Fail, err.Error(), st.name
		res.Kind, r.st.why = Classify(ctx, st.name, err)
		r.st.failedAt = time.Since(start)
		return fmt.Errorf("%s %s (%s: %s): %w", st.name, r.c.Name, res.Kind, r.st.why, err)
	}
	res.Status = schema.Pass
	return nil
}

// future is work that may begin before the stage that takes it: at once when early,
// else at the first wait. stop ends it, begun or not.
type future[T any] struct {
	early  bool
	run    func(context.Context) (T, error)
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	begun  time.Time
	done   chan struct{}
	val    T
	err    error
}

func start[T any](ctx context.Context, early bool, run func(context.Context) (T, error)) *future[T] {
	f := &future[T]{early: early, run: run, done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(ctx)
	if early {
		f.begin()
	}
	return f
}

// later is a future whose work prepare settles: now and begun when early, else at the first wait.
func later[T any](ctx context.Context, early bool, prepare func(context.Context) (func(context.Context) (T, error), error)) (*future[T], error) {
	if !early {
		return start(ctx, false, func(ctx context.Context) (T, error) {
			run, err := prepare(ctx)
			if err != nil {
				var zero T
				return zero, err
			}
			return run(ctx)
		}), nil
	}
	run, err := prepare(ctx)
	if err != nil {
		return nil, err
	}
	return start(ctx, true, run), nil
}

func (f *future[T]) begin() {
	f.once.Do(func() {
		f.begun = time.Now()
		go func() {
			defer close(f.done)
			f.val, f.err = f.run(f.ctx)
		}()
	})
}

func (f *future[T]) wait() (T, error) {
	f.begin()
	<-f.done
	return f.val, f.err
}

// stop ends the work unless done, and waits for it; then release, if any, gets what it made.
func (f *future[T]) stop(release func(T)) {
	if f == nil {
		return
	}
	select {
	case <-f.done:
	default:
		f.cancel()
		f.once.Do(func() { f.err = context.Canceled; close(f.done) })
		<-f.done
	}
	if release != nil {
		release(f.val)
	}
	f.cancel()
}

// cleanup is what a row started and must stop, run last first; each runs once.
type cleanup struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanup) add(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, f)
}

func (c *cleanup) run() {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// report settles the row's status and writes its evidence files and SHA256SUMS; what the
// row started stops first (a running server still writes its log).
func (r *row) report(m *made) error {
	return r.s.Evidence.writeEvidence(func() error { return r.writeReport(m) })
}

func (r *row) writeReport(m *made) error {
	r.stops.run()
	if r.st.ended.IsZero() {
		r.st.ended = time.Now()
	}
	r.release()
	if err := r.ev.Flush(); err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	res := r.res
	res.Status, res.Reason = r.status()
	if res.Status == schema.StatusFailed && r.st.failed != "" {
		res.FailureKind = r.failedKind()
	}
	res.TimeBudget = r.timeBudget(m)
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
	sum, err := WriteChecksums(r.ev.Dir)
	if err != nil {
		return fmt.Errorf("report %s: %w", r.c.Name, err)
	}
	r.st.sumsSHA = sum
	if !schema.Passing(res.Status) && res.Status != schema.StatusCorrectnessOnly {
		return fmt.Errorf("report %s: %s (%s); evidence %s", r.c.Name, res.Status, res.Reason, r.ev.Dir)
	}
	return nil
}

func (r *row) status() (string, string) {
	res := r.res
	switch {
	case r.st.skip != "":
		return schema.StatusNotRun, r.st.skip
	case r.st.failed != "":
		return schema.StatusFailed, r.failureReason()
	case r.s.cfg.CorrectnessOnly:
		for _, st := range res.Stages {
			if slices.Contains(schema.CorrectnessOnlyStages, st.Name) && st.Status != schema.Pass {
				return schema.StatusFailed, "not every stage of the correctness-only run ran and passed"
			}
		}
		return schema.StatusCorrectnessOnly, "correctness-only run: the row's unchanged correctness case passed alone " +
			"(beside a public run whose row met a hardware limit, make merge-evidence keeps it as the local verification); it qualifies nothing"
	case !everyStagePassed(res):
		return schema.StatusFailed, "not every stage ran and passed"
	case r.c.Double:
		return schema.StatusDouble, "served by a contract double of the serving stack: proves the adapter's wiring, never the checkpoint"
	case r.c.Smoke:
		return schema.StatusSmoke, "smoke profile: never qualification of the full checkpoint"
	case !r.s.cfg.Qualification:
		return schema.StatusPassedNQ, "run with -qualkit.not-qualification: it qualifies nothing"
	case res.Provenance.Dirty:
		return schema.StatusDirty, dirtyReason(res.Provenance)
	}
	return schema.StatusQualified, ""
}

// everyStagePassed: res lists exactly the pipeline's stages, in order, each passed.
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
