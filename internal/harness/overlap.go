package harness

import (
	"context"
	"fmt"
	"os"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// overlapPlan is what the overlapped order begins early for one row, and why (not).
type overlapPlan struct {
	buildEarly, serverEarly, aiperfEarly, preload bool
	buildWhy, serverWhy, aiperfWhy, preloadWhy    string
}

const serialWhy = "-qualkit.serial: the serial order, one thing at a time (to measure what overlapping gains)"

// planOverlap decides what the row begins early. AIPerf may start while the server loads
// only when the server lists the model in GET /v1/models once it can serve, never before.
func (r *row) planOverlap(rd Readiness) {
	p := &r.plan
	if r.s.cfg.Serial {
		p.serverWhy, p.aiperfWhy, p.preloadWhy = serialWhy, serialWhy, serialWhy
		return
	}
	n := r.c.Needs
	p.serverEarly, p.serverWhy = r.fits(rd, n.ResidentBytes, n.CaseResidentBytes, "the row states no resident size of the server or of the correctness case (Needs.ResidentBytes, Needs.CaseResidentBytes), so whether both fit at once is unknown: the server starts once the case passed",
		"the server and the correctness case", "the server starts once the case passed")
	if p.serverEarly {
		p.serverWhy = "the server loaded beside the correctness case: " + p.serverWhy + "; the benchmark's first request still waited for the case to pass"
	}
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
	p.preload, p.preloadWhy = r.fits(rd, n.ResidentBytes, n.ResidentBytes, "the row states no resident size (Needs.ResidentBytes), so whether the server and the native batch fit at once is unknown: it starts at identity",
		"the server and the native batch", "the native batch starts at identity")
	if p.preload {
		p.preloadWhy = "the native batch loaded beside the server: " + p.preloadWhy
	}
}

// fits says whether the free memory (freeMemory) holds what both parts need at once,
// the server and what loads beside it (the correctness case's or the native batch's
// size, zero: unknown, so never): why says so in words, late what then starts later.
func (r *row) fits(rd Readiness, server, beside uint64, unknown, both, late string) (bool, string) {
	if server == 0 || beside == 0 {
		return false, unknown
	}
	need := fmt.Sprintf("%s + %s", gib(server), gib(beside))
	if server == beside {
		need = "2 x " + gib(server)
	}
	least, where, err := r.freeMemory(rd)
	switch {
	case err != "":
		return false, err + ": " + late
	case least < server+beside:
		return false, fmt.Sprintf("%s %s free, %s need %s: %s", where, gib(least), both, need, late)
	}
	return true, fmt.Sprintf("%s %s free, both need %s", where, gib(least), need)
}

// freeMemory is the least free memory the row can load into: on each of its GPUs (NVML,
// at preflight), or the host's MemAvailable; where says which, whyNot why it is unknown.
func (r *row) freeMemory(rd Readiness) (least uint64, where, whyNot string) {
	gpus := r.env.GPUs
	if len(gpus) == 0 {
		b, err := os.ReadFile("/proc/meminfo")
		if avail := memInfo(b, "MemAvailable"); avail > 0 {
			return uint64(avail), "the host had", ""
		}
		return 0, "", fmt.Sprintf("the host's free memory is unknown (/proc/meminfo: %v, no MemAvailable)", err)
	}
	free := map[string]uint64{}
	if rd.GPU != nil {
		for _, d := range rd.GPU.Devices {
			free[d.UUID] = d.MemoryFreeBytes
		}
	}
	for i, g := range gpus {
		f, ok := free[g.UUID]
		if !ok {
			return 0, "", "NVML gave no free memory for GPU " + g.UUID
		}
		if i == 0 || f < least {
			least = f
		}
	}
	if len(gpus) == 1 {
		return least, "GPU " + gpus[0].UUID + " had (NVML, at preflight)", ""
	}
	return least, "each GPU of the row had at least (NVML, at preflight)", ""
}

func gib(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// serverEarly says whether the server starts with the correctness case: when it fits,
// the bundle exists before the case, and the run serves at all.
func (r *row) serverEarly(b bundle) bool {
	switch {
	case !r.plan.serverEarly:
	case b.info != nil && b.info.ByCorrectness:
		r.plan.serverEarly, r.plan.serverWhy = false, "the correctness case builds the bundle the server serves: the server starts once the case passed"
	case r.s.cfg.CorrectnessOnly:
		r.plan.serverEarly, r.plan.serverWhy = false, "a correctness-only run serves nothing"
	}
	return r.plan.serverEarly
}

const buildEarlyWhy = "the build started beside preflight's slow checks (AIPerf's version, the family's own checks and probes), which it needs none of; a failed preflight stops it"

// buildEarly says whether the build begins during preflight: when the order allows and
// it runs as processes (the image, which preflight's probes prepare, comes first).
func (r *row) buildEarly() bool {
	switch {
	case r.s.cfg.Serial:
		r.plan.buildWhy = serialWhy
	case r.inImage(schema.StageBuild):
		r.plan.buildWhy = "the build runs in the family's image, which preflight's probes prepare: it starts once preflight passed"
	case r.spec.Probes != nil && r.inImage(schema.StagePreflight):
		r.plan.buildWhy = "preflight prepares the family's image for its probes, whose context the build's tools may write: the build starts once preflight passed"
	default:
		r.plan.buildEarly, r.plan.buildWhy = true, buildEarlyWhy
	}
	return r.plan.buildEarly
}

// command settles now how c runs for stage (options, image) and returns the run, for a
// future: on the row's GPUs, output in logRel, within limit, recorded as begun during.
func (r *row) command(ctx context.Context, stage, during string, c family.Command, logRel string, limit time.Duration, mounts ...family.Mount) (func(context.Context) (schema.CommandRecord, error), error) {
	opts, err := r.options(ctx, stage, r.env.GPUs, duringRecorder{r.ev, during, nil}, mounts...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (schema.CommandRecord, error) {
		ctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		return serving.Run(ctx, c, r.ev.Path(logRel), opts...)
	}, nil
}

type duringRecorder struct {
	serving.Recorder
	during string
	start  *time.Time
}

func (d duringRecorder) Record(rec schema.CommandRecord) error {
	rec.During = d.during
	if d.start != nil {
		*d.start = rec.Start
	}
	return d.Recorder.Record(rec)
}
