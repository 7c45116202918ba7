package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/harness/serving"
	"qualkit/internal/schema"
)

// overlapPlan is what the overlapped order begins early for one row, decided once
// preflight has read the host, and why not when it does not.
type overlapPlan struct {
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
		p.aiperfWhy, p.preloadWhy = serialWhy, serialWhy
		return
	}
	where := ""
	if m, ok := r.c.Adapter.(ModelsWhenReady); ok {
		where = m.ModelsListedWhenReady()
	}
	if where != "" {
		p.aiperfEarly = true
		p.aiperfWhy = "AIPerf started with the server and waited for GET /v1/models to list the model, which the server does only once it can serve (" + where + ")"
	} else {
		p.aiperfWhy = "the family does not state that its server lists the model in GET /v1/models only once it can serve (harness.ModelsWhenReady): AIPerf starts once " +
			serving.ReadyPath + " answers"
	}
	nb, ok := r.c.Adapter.(NativePreloader)
	if !ok || !nb.NativeBatchWaits() {
		p.preloadWhy = "the family's batch program cannot load first and wait for its items (harness.NativePreloader): it starts at identity"
		return
	}
	p.preload, p.preloadWhy = r.preloadFits(rd)
}

// preloadFits says whether the server and the native batch fit in memory at once: on
// each of the row's GPUs (NVML's free memory at preflight), or on the host for a row
// without GPUs (MemAvailable), twice the model's resident size the row states.
func (r *row) preloadFits(rd Readiness) (bool, string) {
	res := r.c.Needs.ResidentBytes
	if res == 0 {
		return false, "the row states no resident size (Needs.ResidentBytes), so whether the server and the native batch fit at once is unknown: it starts at identity"
	}
	need := 2 * res
	if len(r.gpus) == 0 {
		avail, err := memAvailable()
		if err != nil {
			return false, "the host's free memory is unknown (" + err.Error() + "): the native batch starts at identity"
		}
		if avail < need {
			return false, fmt.Sprintf("the host has %s available, the server and the native batch need 2 x %s: the native batch starts at identity", gib(avail), gib(res))
		}
		return true, fmt.Sprintf("the native batch loaded beside the server: the host had %s available, both need 2 x %s", gib(avail), gib(res))
	}
	free := map[string]uint64{}
	if rd.GPU != nil {
		for _, d := range rd.GPU.Devices {
			free[d.UUID] = d.MemoryFreeBytes
		}
	}
	var least uint64
	for i, g := range r.gpus {
		f, ok := free[g.UUID]
		if !ok {
			return false, "NVML gave no free memory for GPU " + g.UUID + ": the native batch starts at identity"
		}
		if f < need {
			return false, fmt.Sprintf("GPU %s had %s free, the server and the native batch need 2 x %s: the native batch starts at identity", g.UUID, gib(f), gib(res))
		}
		if i == 0 || f < least {
			least = f
		}
	}
	return true, fmt.Sprintf("the native batch loaded beside the server: each GPU of the row had at least %s free (NVML, at preflight), both need 2 x %s", gib(least), gib(res))
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
	r.bench.stop()
	r.native.stop()
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

// startNativePreload starts the family's batch program with the serve stage: it loads
// the model beside the server and waits for its items, which identity writes once the
// server has stopped.
func (r *row) startNativePreload(ctx context.Context) error {
	nb, ok := r.c.Adapter.(NativeBatcher)
	if !ok {
		return nil
	}
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	wait := r.c.Deadline.Ready + time.Duration(total+3)*r.c.Deadline.Request + 10*time.Minute
	spec := r.batchSpec()
	spec.WaitItems = wait
	cmd := nb.NativeBatch(r.env, spec)
	if len(cmd.Args) == 0 {
		r.plan.preload, r.plan.preloadWhy = false, "the family has no batch mode for this row"
		return nil
	}
	for _, d := range []string{r.nativeInDir(), filepath.Dir(spec.Report)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	os.Remove(spec.Items)
	r.prog.printf("native batch: started now to load beside the server; it waits for its items until identity")
	b, err := r.startJob(ctx, schema.StageIdentity, schema.StageServe, cmd, "identity/native-batch.log", wait+time.Duration(total+1)*r.c.Deadline.Native, nil, r.batchMounts(spec)...)
	if err != nil {
		return fmt.Errorf("native batch preload: %w", err)
	}
	r.native = b
	return nil
}
