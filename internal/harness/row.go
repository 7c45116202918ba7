package harness

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// newRow opens the row's evidence folder and registers its result. A row's second run
// (go test -count=N) is <row>.2, and so on: no folder is written twice.
func (s *Suite) newRow(c Checkpoint, work, reproduce string) (*row, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rowRuns[c.Name]++
	if n := s.rowRuns[c.Name]; n > 1 {
		c.Name = fmt.Sprintf("%s.%d", c.Name, n)
	}
	s.mu.Unlock()
	ev, err := s.Evidence.Row(c.Name)
	if err != nil {
		return nil, err
	}
	c.Deadline = c.Deadlines()
	r := &row{s: s, c: c, ev: ev, env: family.Env{Root: s.cfg.Root, Work: work, Python: s.cfg.Python}, st: rowState{started: time.Now()}}
	r.describe() // an error fails preflight, which asks again
	r.res = &schema.Result{
		Schema: schema.ResultSchema, RunID: s.Evidence.RunID, Row: c.Name, Status: schema.StatusFailed,
		Checkpoint: schema.CheckpointRef{Name: c.Name, Family: c.Family, Backend: r.spec.Backend, Model: c.Model,
			Profile: c.Profile, Revision: c.Revision, Smoke: c.Smoke, Double: c.Double},
		Measured: c.Bench.Measured, Warmup: c.Bench.Warmup,
		Command: reproduce, Provenance: s.provenance,
		NativeOutputPattern: r.spec.NativeOutputPattern,
	}
	s.mu.Lock()
	s.results = append(s.results, r.res)
	s.mu.Unlock()
	return r, nil
}

// describe asks the family for its facts on the row's env as it stands, and checks them.
func (r *row) describe() (err error) {
	r.spec, err = describe(r.c, r.env)
	return err
}

func describe(c Checkpoint, env family.Env) (family.Spec, error) {
	spec, err := c.Adapter.Describe(env, c.Row())
	if err == nil {
		err = spec.Validate()
	}
	if err != nil {
		return spec, fmt.Errorf("family %s cannot describe row %s: %w", c.Family, c.Name, err)
	}
	return spec, nil
}

// Qualify runs every stage of one row as a subtest of t, then the report. A row runs
// whole or not at all: a -run or -skip that selects only some of its stages fails it.
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
	r.drive(ctx, runner{t: t, r: r})
}

// Run qualifies one row without subtests (negative controls prove with it which stage
// catches a fault); reproduce is results.json's command to run it again (Reproduce).
func (s *Suite) Run(ctx context.Context, c Checkpoint, work, reproduce string) (*schema.Result, error) {
	ctx, cancel := s.rowContext(ctx, nil)
	defer cancel()
	r, err := s.start(ctx, c, work, reproduce, nil)
	if err != nil {
		return nil, err
	}
	defer r.end()
	return r.res, r.drive(ctx, runner{r: r})
}

// start leases what the row needs and opens it; on an error nothing is held.
func (s *Suite) start(ctx context.Context, c Checkpoint, work, reproduce string, say func(string)) (*row, error) {
	lease, waitS := s.lease(ctx, c, say)
	r, err := s.newRow(c, work, reproduce)
	if err != nil {
		if lease != nil {
			lease.Release()
		}
		return nil, err
	}
	r.lease, r.st.leaseWaitS = lease, waitS
	return r, nil
}

// end stops what the row started, then gives its lease back.
func (r *row) end() {
	r.stops.run()
	r.release()
}

// runner runs a row's stages and its report: as subtests of t under go test, else (t
// nil) as plain calls. Each says whether the body ran: a -run/-skip selection can leave
// a subtest out.
type runner struct {
	t *testing.T
	r *row
}

func (s runner) stage(name string, body func(say func(string)) error) (ran bool) {
	if s.t == nil {
		body(nil)
		return true
	}
	s.t.Run(name, func(t *testing.T) {
		ran = true
		err := body(func(line string) { t.Log(line) })
		switch {
		case s.r.st.skip != "":
			t.Skipf("%s %s: %s", name, s.r.c.Name, s.r.st.skip)
		case err != nil:
			t.Fatalf("%v\nevidence: %s", err, s.r.ev.Dir)
		}
	})
	return ran
}

func (s runner) report(body func() error) (ran bool) {
	if s.t == nil {
		body()
		return true
	}
	s.t.Run(schema.StageReport, func(t *testing.T) {
		ran = true
		err := body()
		r := s.r
		r.attrs(t)
		t.Logf("%s%s", schema.RowMarkdownHeader(), MarkdownRow(r.res))
		t.Logf("sha256 of %s/%s: %s (the anchor that proves every file of the row)", r.ev.Dir, schema.ChecksumFile, r.st.sumsSHA)
		if err != nil {
			t.Fatal(err)
		}
	})
	return ran
}

// skipped ends the row's test as skipped (a row that is not run, and says why).
func (s runner) skipped(why string) {
	if s.t != nil {
		s.t.Skip(why)
	}
}

// missed fails the row's test: a stage or the report did not run.
func (s runner) missed(format string, args ...any) {
	if s.t != nil {
		s.t.Errorf(format, args...)
	}
}

// wholeRow is nil when -run and -skip select every stage of the row rowTest, else an
// error naming what runs and how to select the row whole.
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
	r.res.Stages = append(r.res.Stages, schema.StageResult{Name: name, Status: schema.NotRun,
		Error: "not selected by -run/-skip: a row runs whole"})
	if r.st.failed == "" {
		r.st.failed = name
	}
}

// beyondCorrectnessOnly says whether a correctness-only run leaves stage out.
func (r *row) beyondCorrectnessOnly(stage string) bool {
	return r.s.cfg.CorrectnessOnly && !slices.Contains(schema.CorrectnessOnlyStages, stage)
}

// attrs puts the headline numbers into JUnit, on the report test case.
func (r *row) attrs(t *testing.T) {
	res := r.res
	t.Attr("qualkit.status", res.Status)
	if res.Reason != "" {
		t.Attr("qualkit.reason", res.Reason)
	}
	if res.FailureKind != "" {
		t.Attr("qualkit.failure_kind", res.FailureKind)
	}
	t.Attr("qualkit.evidence", r.ev.Dir)
	t.Attr("qualkit.sha256sums", r.st.sumsSHA)
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

// Reproduce is the command that reruns exactly the qual test named testName.
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

// lease takes from the run's pool what the row needs for its whole life: its GPUs by
// UUID, or a CPU row slot, waiting while other rows hold them. It is nil when the GPUs
// can never come: preflight then names what is missing.
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

// release gives the row's lease back and records it with the rows that ran beside it, once.
func (r *row) release() {
	if r.lease == nil || r.res.Lease != nil {
		return
	}
	r.lease.Release()
	l := &schema.Lease{GPUs: r.lease.UUIDs(), Shared: r.lease.Shared, Start: r.lease.Start.UTC(), End: r.lease.End.UTC(),
		WaitS: round6(r.st.leaseWaitS), RanBeside: []schema.Neighbour{}}
	for _, n := range r.lease.Beside() {
		nb := schema.Neighbour{Row: n.Row, GPUs: n.GPUs, Start: n.Start.UTC()}
		if !n.End.IsZero() {
			nb.End = n.End.UTC()
		}
		l.RanBeside = append(l.RanBeside, nb)
	}
	r.res.Lease = l
}

// failedKind is the kind recorded for the failed stage.
func (r *row) failedKind() string {
	for _, st := range r.res.Stages {
		if st.Name == r.st.failed {
			return st.Kind
		}
	}
	return ""
}

// failureReason is the row's reason when a stage failed: the stage, the kind and what
// happened; a hardware limit also says what the seed's rule needs next.
func (r *row) failureReason() string {
	kind := r.failedKind()
	detail := r.st.why
	switch kind {
	case schema.KindInterrupted, schema.KindTimeout:
		detail = fmt.Sprintf("%s, %.1f s into the stage", r.st.why, r.st.failedAt.Seconds())
	case schema.KindHardware:
		detail = r.st.why + "; next (a hardware limit is no wrong answer): run the row's unchanged correctness case alone on a host that has the memory, " +
			"and keep its non-skipped pass beside this run (make merge-evidence takes that run as the local verification): " +
			r.res.Command + " -args -qualkit.correctness-only"
	default:
		for _, st := range r.res.Stages {
			if st.Name == r.st.failed {
				detail = reasonLine(st.Error)
			}
		}
		if kind == schema.KindInfrastructure {
			detail = r.st.why + "; " + detail
		}
	}
	return "stage " + r.st.failed + " failed: " + kind + ": " + detail
}

// reasonLine is a stage's error as one line: unmet requirements (Missing) lead with their
// fixes; any other error is its first line, with the next when the first only announces
// a list ("2 problem(s):"). What follows is a log's tail, left to the log.
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

// rowContext is a row's context: cancelled when the suite is interrupted, and under go
// test ending a margin before -timeout, so that the row reports a timeout rather than
// the testing package's panic.
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
