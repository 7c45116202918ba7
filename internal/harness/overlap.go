package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// overlapPlan is what the overlapped order begins early for one row, decided once
// preflight has read the host, and why not when it does not.
type overlapPlan struct {
	buildEarly  bool // the build starts during preflight, beside its slow checks
	buildWhy    string
	serverEarly bool // the server starts with the correctness case and loads beside it
	serverWhy   string
	aiperfEarly bool // AIPerf starts with the server and waits for the model
	aiperfWhy   string
	preload     bool // the native batch starts with the server and waits for its items
	preloadWhy  string
}

const serialWhy = "-qualkit.serial: the serial order, one thing at a time (to measure what overlapping gains)"

// planOverlap decides what the row begins early. AIPerf may start while the server
// loads only when the server lists the model in GET /v1/models once it can serve it,
// never before; the native batch may load beside the server only when its program can
// wait for its items and the row's memory holds both models at once.
func (r *row) planOverlap(rd Readiness) {
	p := &r.plan
	if r.s.cfg.Serial {
		p.serverWhy, p.aiperfWhy, p.preloadWhy = serialWhy, serialWhy, serialWhy
		return
	}
	p.serverEarly, p.serverWhy = r.serverFits(rd)
	if where := r.spec.ModelsWhenReady; where != "" {
		p.aiperfEarly = true
		p.aiperfWhy = "AIPerf started with the server and waited for GET /v1/models to list the model, which the server does only once it can serve (" + where + ")"
	} else {
		p.aiperfWhy = "the family does not state that its server lists the model in GET /v1/models only once it can serve (Spec.ModelsWhenReady): AIPerf starts once " +
			serving.ReadyPath + " answers"
	}
	if r.spec.NativeBatch == nil || !r.spec.BatchWaits {
		p.preloadWhy = "the family's batch program cannot load first and wait for its items (Spec.BatchWaits): it starts at identity"
		return
	}
	p.preload, p.preloadWhy = r.preloadFits(rd)
}

// serverFits says whether the server can load while the correctness case runs: the
// free memory (freeMemory) holds the server's resident size and the case's at once. Whether
// the bundle exists before the case is settled when the case starts (startServerEarly).
func (r *row) serverFits(rd Readiness) (bool, string) {
	srv, cs := r.c.Needs.ResidentBytes, r.c.Needs.CaseResidentBytes
	if srv == 0 || cs == 0 {
		return false, "the row states no resident size of the server or of the correctness case (Needs.ResidentBytes, Needs.CaseResidentBytes), so whether both fit at once is unknown: the server starts once the case passed"
	}
	need := srv + cs
	least, where, err := r.freeMemory(rd)
	if err != "" {
		return false, err + ": the server starts once the correctness case passed"
	}
	if least < need {
		return false, fmt.Sprintf("%s %s free, the server and the correctness case need %s + %s: the server starts once the case passed", where, gib(least), gib(srv), gib(cs))
	}
	return true, fmt.Sprintf("the server loaded beside the correctness case: %s %s free, both need %s + %s; the benchmark's first request still waited for the case to pass", where, gib(least), gib(srv), gib(cs))
}

// preloadFits says whether the server and the native batch fit in memory at once
// (freeMemory): twice the model's resident size the row states.
func (r *row) preloadFits(rd Readiness) (bool, string) {
	res := r.c.Needs.ResidentBytes
	if res == 0 {
		return false, "the row states no resident size (Needs.ResidentBytes), so whether the server and the native batch fit at once is unknown: it starts at identity"
	}
	need := 2 * res
	least, where, err := r.freeMemory(rd)
	if err != "" {
		return false, err + ": the native batch starts at identity"
	}
	if least < need {
		return false, fmt.Sprintf("%s %s free, the server and the native batch need 2 x %s: the native batch starts at identity", where, gib(least), gib(res))
	}
	return true, fmt.Sprintf("the native batch loaded beside the server: %s %s free, both need 2 x %s", where, gib(least), gib(res))
}

// freeMemory is the least free memory the row can load into: on each of its GPUs
// (NVML's free memory at preflight), or on the host for a row without GPUs
// (MemAvailable); where says which, whyNot why it is unknown.
func (r *row) freeMemory(rd Readiness) (least uint64, where, whyNot string) {
	if len(r.gpus) == 0 {
		avail, err := memAvailable()
		if err != nil {
			return 0, "", "the host's free memory is unknown (" + err.Error() + ")"
		}
		return avail, "the host had", ""
	}
	free := map[string]uint64{}
	if rd.GPU != nil {
		for _, d := range rd.GPU.Devices {
			free[d.UUID] = d.MemoryFreeBytes
		}
	}
	for i, g := range r.gpus {
		f, ok := free[g.UUID]
		if !ok {
			return 0, "", "NVML gave no free memory for GPU " + g.UUID
		}
		if i == 0 || f < least {
			least = f
		}
	}
	if len(r.gpus) == 1 {
		return least, "GPU " + r.gpus[0].UUID + " had (NVML, at preflight)", ""
	}
	return least, "each GPU of the row had at least (NVML, at preflight)", ""
}

func gib(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// memAvailable is the host's MemAvailable (/proc/meminfo) in bytes.
func memAvailable() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
}

// background is a command started in one stage and waited for in a later one.
type background struct {
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	rec     schema.CommandRecord
	err     error
}

// startJob starts c for stage while the stage during runs, on the row's GPUs, with its
// output in logRel; its record says During. The options (and the image) are settled
// here, in the calling stage; the goroutine only runs the command, then after (if not
// nil), before wait returns. after runs also when the job cannot start.
func (r *row) startJob(ctx context.Context, stage, during string, c Command, logRel string, limit time.Duration, after func(), mounts ...Mount) (*background, error) {
	if after == nil {
		after = func() {}
	}
	opts, err := r.optionsOn(ctx, stage, r.gpus, mounts...)
	if err != nil {
		after()
		return nil, err
	}
	opts = append(opts, serving.WithRecorder(duringRecorder{r.ev, during}, stage))
	ctx, cancel := context.WithTimeout(ctx, limit)
	b := &background{started: time.Now(), cancel: cancel, done: make(chan struct{})}
	log := r.ev.Path(logRel)
	go func() {
		defer close(b.done)
		defer after()
		b.rec, b.err = serving.Run(ctx, c, log, opts...)
	}()
	return b, nil
}

// wait waits for the command and returns what it did.
func (b *background) wait() (schema.CommandRecord, error) {
	<-b.done
	b.cancel()
	return b.rec, b.err
}

// stop ends the command, if it still runs, and waits for it.
func (b *background) stop() {
	if b != nil {
		b.cancel()
		<-b.done
	}
}

// stopBackground stops what the row started early and nothing waited for: a row that
// failed before the stage that needed it, or was interrupted.
func (r *row) stopBackground() {
	r.stopEarlyBuild()
	r.bench.stop()
	r.native.stop()
	r.early.stop()
	r.early = nil
}

// earlyServer is the server the overlapped order starts with the correctness case: it
// loads beside the case, and the serve stage takes it once the case passed.
type earlyServer struct {
	l      *serverLaunch
	cancel context.CancelFunc
	done   chan struct{}
	srv    serving.Server
	err    error
}

// startServerEarly starts the server as the correctness case begins, when the plan says
// it fits and the bundle already exists (a case that builds the bundle the server serves
// comes first); ctx is the row's, as the server outlives the case.
func (r *row) startServerEarly(ctx context.Context, byCase bool) error {
	switch {
	case !r.plan.serverEarly:
		return nil
	case byCase:
		r.plan.serverEarly, r.plan.serverWhy = false, "the correctness case builds the bundle the server serves: the server starts once the case passed"
		return nil
	case r.s.cfg.CorrectnessOnly:
		r.plan.serverEarly, r.plan.serverWhy = false, "a correctness-only run serves nothing"
		return nil
	}
	l, err := r.prepareServer(ctx, schema.StageCorrectness)
	if err != nil {
		return fmt.Errorf("the server's start beside the correctness case: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &earlyServer{l: l, cancel: cancel, done: make(chan struct{})}
	r.prog.printf("server: started now (%s runtime) to load beside the correctness case; the benchmark waits for the case", l.runtime)
	go func() {
		defer close(e.done)
		e.srv, e.err = serving.Start(ctx, l.ss, l.opts...)
	}()
	r.early = e
	return nil
}

// launch is what the early server was started with; nil when none was.
func (e *earlyServer) launch() *serverLaunch {
	if e == nil {
		return nil
	}
	return e.l
}

// wait waits until the server is ready, or failed to be.
func (e *earlyServer) wait() (serving.Server, error) {
	<-e.done
	return e.srv, e.err
}

// stop ends a start still waiting for readiness, and stops a server nothing took.
func (e *earlyServer) stop() {
	if e == nil {
		return
	}
	e.cancel()
	<-e.done
	if e.srv != nil {
		e.srv.Stop(context.Background())
	}
}

// duringRecorder records a command with the stage it started in.
type duringRecorder struct {
	serving.Recorder
	during string
}

func (d duringRecorder) Record(rec schema.CommandRecord) error {
	rec.During = d.during
	return d.Recorder.Record(rec)
}

// startRecorder is a duringRecorder that keeps the command's start, as written.
type startRecorder struct {
	duringRecorder
	start *time.Time
}

func (s startRecorder) Record(rec schema.CommandRecord) error {
	*s.start = rec.Start
	return s.duringRecorder.Record(rec)
}

// startNativePreload starts the family's batch program with the serve stage: it loads
// the model beside the server and waits for its items, which identity writes once the
// server has stopped.
func (r *row) startNativePreload(ctx context.Context) error {
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	wait := r.c.Deadline.Ready + time.Duration(total+3)*r.c.Deadline.Request + 10*time.Minute
	spec := r.batchSpec()
	spec.WaitItems = wait
	cmd, err := r.spec.NativeBatch(r.env, spec)
	if err != nil {
		return fmt.Errorf("native batch preload: %w", err)
	}
	for _, d := range []string{r.nativeInDir(), filepath.Dir(spec.Report)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	os.Remove(spec.Items)
	r.prog.printf("native batch: started now to load beside the server; it waits for its items until identity")
	b, err := r.startJob(ctx, schema.StageIdentity, schema.StageServe, cmd, schema.NativeBatchLog, wait+time.Duration(total+1)*r.c.Deadline.Native, nil, r.batchMounts(spec)...)
	if err != nil {
		return fmt.Errorf("native batch preload: %w", err)
	}
	r.native = b
	return nil
}

// earlyBuild is the build stage's work, begun during preflight: the build stage takes
// its outcome.
type earlyBuild struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error

	mu         sync.Mutex
	stageStart time.Time // when the build stage began; zero while preflight runs
	firstEarly time.Time // the start of the first command recorded During preflight
}

// began marks the build stage's start: a command of the build starting after it is no
// longer early.
func (b *earlyBuild) began(t time.Time) {
	b.mu.Lock()
	b.stageStart = t
	b.mu.Unlock()
}

// early says whether a command that started at t started before the build stage.
func (b *earlyBuild) early(t time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stageStart.IsZero() || t.Before(b.stageStart)
}

const buildEarlyWhy = "the build started beside preflight's slow checks (AIPerf's version, the family's own checks and probes), which it needs none of; a failed preflight stops it"

// startBuildEarly begins the build stage's work during preflight, once what the build
// needs of the host is known (the fixtures, the runtime, the GPUs), when the order allows
// and the build runs as processes: a build in the family's image waits for the image,
// which preflight's probes prepare.
func (r *row) startBuildEarly(ctx context.Context) {
	switch {
	case r.s.cfg.Serial:
		r.plan.buildWhy = serialWhy
		return
	case r.inImage(schema.StageBuild):
		r.plan.buildWhy = "the build runs in the family's image, which preflight's probes prepare: it starts once preflight passed"
		return
	case r.preparesImage():
		r.plan.buildWhy = "preflight prepares the family's image for its probes, whose context the build's tools may write: the build starts once preflight passed"
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &earlyBuild{cancel: cancel, done: make(chan struct{})}
	// Its own progress, whose lines the build stage's subtest logs once it begins.
	r.buildProg = r.newProgress(schema.StageBuild, nil, true)
	r.earlyBuild = b
	r.plan.buildEarly, r.plan.buildWhy = true, buildEarlyWhy
	r.prog.printf("build: started now, beside preflight's slow checks")
	go func() {
		defer close(b.done)
		b.err = r.buildNow(ctx)
	}()
}

// preparesImage says whether preflight prepares the family's image (to run its probes there).
func (r *row) preparesImage() bool {
	return r.spec.Probes != nil && r.inImage(schema.StagePreflight)
}

// stopEarlyBuild stops a build begun during preflight that nothing will take, and waits
// for it: its commands end, its partial bundle is removed.
func (r *row) stopEarlyBuild() {
	if b := r.earlyBuild; b != nil {
		b.cancel()
		<-b.done
	}
}

// buildRecorder records the build's commands, those begun before the build stage with
// During preflight.
type buildRecorder struct {
	serving.Recorder
	b *earlyBuild
}

func (d buildRecorder) Record(rec schema.CommandRecord) error {
	if d.b.early(rec.Start) {
		rec.During = schema.StagePreflight
		d.b.mu.Lock()
		if d.b.firstEarly.IsZero() || rec.Start.Before(d.b.firstEarly) {
			d.b.firstEarly = rec.Start
		}
		d.b.mu.Unlock()
	}
	return d.Recorder.Record(rec)
}

// firstEarlyStart is when the first command recorded During preflight started; zero for
// none (the build ran none before its stage began).
func (b *earlyBuild) firstEarlyStart() time.Time {
	if b == nil {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.firstEarly
}
