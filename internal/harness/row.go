package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// newRow opens the row's evidence folder and registers its result; a row's second run
// (go test -count=N) is <row>.2, and so on.
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

// Run qualifies one row without subtests (negative controls use it).
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

// runner runs a row's stages and its report as subtests of t, or (t nil) as plain calls;
// each says whether the body ran, as -run/-skip can leave a subtest out.
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

func (r *row) beyondCorrectnessOnly(stage string) bool {
	return r.s.cfg.CorrectnessOnly && !slices.Contains(schema.CorrectnessOnlyStages, stage)
}

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

func runPattern(testName string) string {
	parts := strings.Split(testName, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// lease takes the row's GPUs (or a CPU row slot) for its whole life, waiting while other
// rows hold them; nil when the GPUs can never come (preflight then names what is missing).
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

// rowContext is cancelled when the suite is interrupted, and ends a margin before go
// test's -timeout so that the row reports a timeout rather than the testing panic.
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

// Interrupted is the cause a Suite's context carries once a signal stopped the run.
type Interrupted struct {
	Signal string // "SIGINT", "SIGTERM"
}

func (i Interrupted) Error() string { return "interrupted by " + i.Signal }

// errTestDeadline is the cause of a row context cut near go test's -timeout.
var errTestDeadline = errors.New("go test -timeout is near: the row was stopped to clean up and write its evidence")

type logSign struct {
	kind string
	re   *regexp.Regexp
	what string
}

// logSigns are the tools' own words (each has a real line in failure_test.go); what
// qualkit knows first-hand comes typed (serving.Failure).
var logSigns = []logSign{
	{schema.KindHardware, regexp.MustCompile(`CUDA out of memory|torch\.(cuda\.)?OutOfMemoryError`), "CUDA out of memory (PyTorch)"},
	{schema.KindHardware, regexp.MustCompile(`cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY`), "CUDA allocation failed"},
	{schema.KindHardware, regexp.MustCompile(`\[TRT\].*(Cuda Runtime \(out of memory\)|could not be allocated|OutOfMemory)`), "TensorRT out of memory"},
	{schema.KindHardware, regexp.MustCompile(`"OOMKilled":\s*true|OOMKilled`), "the container was OOM-killed"},
	{schema.KindHardware, regexp.MustCompile(`NVRM: Xid|Xid \(PCI:`), "a GPU Xid error"},
	{schema.KindHardware, regexp.MustCompile(`GPU has fallen off the bus|GPU is lost|cudaErrorDevicesUnavailable`), "the GPU was lost"},
	{schema.KindHardware, regexp.MustCompile(`std::bad_alloc|\bMemoryError\b|Cannot allocate memory`), "host out of memory"},
	{schema.KindInfrastructure, regexp.MustCompile(`(?i)no space left on device`), "the disk is full"},
	{schema.KindInfrastructure, regexp.MustCompile(`Cannot connect to the Docker daemon|docker\.sock: connect|Is the docker daemon running|error during connect`), "the Docker engine is gone"},
	{schema.KindInfrastructure, regexp.MustCompile(`(?i)read-only file system`), "a read-only file system"},
	// SIGKILL from outside the run (its own cancellations are classified by the context
	// first): an operator, or the kernel's OOM killer (dmesg says which).
	{schema.KindInfrastructure, regexp.MustCompile(`signal: killed`), "a process was killed from outside the run (an operator, or the kernel's OOM killer: see dmesg)"},
}

// Classify names why a stage failed, as a kind and a short reason: a signal or deadline
// of the row's context, else the first sign in the error's text (with its command's log
// tail), else correctness for the correctness stage and gate for the others.
func Classify(ctx context.Context, stage string, err error) (kind, why string) {
	var intr Interrupted
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &intr):
		return schema.KindInterrupted, intr.Signal
	case errors.Is(cause, errTestDeadline):
		return schema.KindTimeout, "go test -timeout"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return schema.KindTimeout, "the stage's deadline"
	}
	var f *serving.Failure
	if errors.As(err, &f) {
		return f.Kind, f.What
	}
	text := err.Error()
	for _, s := range logSigns {
		if s.re.MatchString(text) {
			return s.kind, s.what
		}
	}
	if stage == schema.StageCorrectness {
		return schema.KindCorrectness, "the family's correctness case"
	}
	return schema.KindGate, fmt.Sprintf("a gate of stage %s", stage)
}

func newOverhead(client, task schema.Quantiles) *schema.Overhead {
	d := client.P50 - task.P50
	return &schema.Overhead{P50DiffMs: d, Fraction: d / client.P50}
}

// MarkdownRow renders a result as one line of row.md's table (schema.RowColumns).
func MarkdownRow(r *schema.Result) string {
	dash := "-"
	sha, counts, errs, identity, httpq, taskq, ips, corr := dash, dash, dash, dash, dash, dash, dash, dash
	if r.Bundle != nil && len(r.Bundle.SHA256) >= 12 {
		sha = "`" + r.Bundle.SHA256[:12] + "`"
	}
	if r.ClientErrors != nil {
		// The request counts and errors are what AIPerf recorded; a row that never got
		// that far shows none.
		counts, errs = fmt.Sprintf("%d + %d", r.Measured, r.Warmup), fmt.Sprint(*r.ClientErrors)
	}
	if r.Identity != nil {
		identity = fmt.Sprintf("%d/%d", r.Identity.PixelMatches, r.Identity.Total)
	}
	if r.HTTP != nil {
		httpq = fmt.Sprintf("%.4f / %.4f", r.HTTP.P50/1000, r.HTTP.P95/1000)
	}
	if r.Task != nil {
		taskq = fmt.Sprintf("%.4f / %.4f", r.Task.P50/1000, r.Task.P95/1000)
	}
	if r.ImagesPerS > 0 {
		ips = fmt.Sprintf("%.4g", r.ImagesPerS)
	}
	if r.Correctness != nil {
		corr = fmt.Sprintf("%d / %d", r.Correctness.Executed, r.Correctness.Skipped)
	}
	qual := dash
	if r.Quality != nil {
		qual = quality.Worst(r.Quality.Requests, r.Quality.Pair)
	}
	status := r.Status
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	cells := []string{r.Checkpoint.Name, r.Checkpoint.Profile, r.Checkpoint.Backend, orDash(r.Runtime), sha,
		settingsText(r.Settings), counts, identity, qual, errs, httpq, taskq, ips, corr, status}
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Selection is go test's -run and -skip, matched as the testing package does (which
// exports no matcher; TestSelectionAgreesWithGoTest holds this one to it).
type Selection struct {
	run, skip [][]*regexp.Regexp // alternatives of slash-separated elements; nil run selects all
}

func NewSelection(run, skip string) (Selection, error) {
	var s Selection
	var err error
	if s.run, err = compilePattern(run); err != nil {
		return s, fmt.Errorf("-run %q: %w", run, err)
	}
	if s.skip, err = compilePattern(skip); err != nil {
		return s, fmt.Errorf("-skip %q: %w", skip, err)
	}
	return s, nil
}

// TestSelection is this test binary's -test.run and -test.skip.
func TestSelection() (Selection, error) {
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return NewSelection(value("test.run"), value("test.skip"))
}

// Runs says whether the test of that full name ("TestX/row/stage") runs: some -run
// alternative matches each of its elements (a deeper pattern still runs it, for its
// subtests), and no -skip alternative matches it whole.
func (s Selection) Runs(name string) bool {
	elems := strings.Split(name, "/")
	if s.run != nil {
		if ok, _ := matchAny(s.run, elems); !ok {
			return false
		}
	}
	if s.skip != nil {
		if ok, partial := matchAny(s.skip, elems); ok && !partial {
			return false
		}
	}
	return true
}

func matchAny(alts [][]*regexp.Regexp, elems []string) (ok, partial bool) {
	for _, alt := range alts {
		if ok, partial := matchElems(alt, elems); ok {
			return ok, partial
		}
	}
	return false, false
}

func matchElems(pattern []*regexp.Regexp, elems []string) (ok, partial bool) {
	for i, e := range elems {
		if i >= len(pattern) {
			break
		}
		if !pattern[i].MatchString(e) {
			return false, false
		}
	}
	return true, len(elems) < len(pattern)
}

// compilePattern splits a pattern as the testing package does: at '|' and '/' outside
// brackets and parentheses, into alternatives of per-level elements. "" is nil.
func compilePattern(p string) ([][]*regexp.Regexp, error) {
	if p == "" {
		return nil, nil
	}
	var alts [][]*regexp.Regexp
	var cur []*regexp.Regexp
	add := func(elem string) error {
		re, err := regexp.Compile(elem)
		if err != nil {
			return err
		}
		cur = append(cur, re)
		return nil
	}
	brackets, parens, start := 0, 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0)
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets != 0 || parens != 0 {
				continue
			}
			if err := add(p[start:i]); err != nil {
				return nil, err
			}
			start = i + 1
			if p[i] == '|' {
				alts, cur = append(alts, cur), nil
			}
		}
	}
	if err := add(p[start:]); err != nil {
		return nil, err
	}
	return append(alts, cur), nil
}
