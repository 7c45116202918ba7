package harness

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"qualkit/internal/schema"
)

// timeBudget says where the row's wall time went. The wall ends at r.st.ended (every
// stage and process done, before the lease goes back), so it lies inside the lease the
// checker holds it to, however long the report's own writes take.
func (r *row) timeBudget(mk *made) *schema.TimeBudget {
	res := r.res
	end := r.st.ended
	if end.IsZero() {
		end = time.Now()
	}
	tb := &schema.TimeBudget{WallS: end.Sub(r.st.started).Seconds(), Stages: map[string]float64{}}
	var benchS float64
	for _, st := range res.Stages {
		tb.Stages[st.Name] = round3(st.WallS)
		if st.Name == schema.StageBenchmark {
			benchS = st.WallS
		}
	}
	m := &tb.Model
	tb.ToolsS = mk.bundle.toolsS // harness time: compiling the harness's and the family's programs
	if b := res.Bundle; b != nil && !b.Cached {
		m.BuildS = b.BuildS
	}
	m.CorrectnessS = mk.caseOut.wallS
	m.ServerLoadS = res.StartupS
	served := r.servedTaskMs(mk)
	for _, ms := range served {
		m.ServedTasks++
		m.ServedTaskS += ms / 1000
	}
	tb.NativeMode, tb.NativeLoads = r.nativeWork(mk.identity, m, served)
	if b := mk.benchmarked; b != nil {
		var clientS float64
		for _, p := range b.export.Profile {
			if ms, err := p.RequestLatencyMs(); err == nil {
				clientS += ms / 1000
			}
		}
		tb.AIPerfS = round3(math.Max(0, benchS-clientS))
	}
	tb.ModelWorkS = m.BuildS + m.CorrectnessS + m.ServerLoadS + m.NativeLoadS + m.ServedTaskS + m.NativeTaskS
	tb.HarnessS = tb.WallS - tb.ModelWorkS
	for _, v := range []*float64{&tb.ToolsS, &m.BuildS, &m.CorrectnessS, &m.ServerLoadS, &m.NativeLoadS, &m.ServedTaskS, &m.NativeTaskS,
		&tb.ModelWorkS, &tb.HarnessS, &tb.WallS} {
		*v = round3(*v)
	}
	r.order(mk, tb)
	// From the figures as written, so that a reader who divides them gets the ratio (a
	// row stopped early has little model work, where rounding moves the ratio most).
	if tb.ModelWorkS > 0 {
		tb.Ratio = round3(tb.WallS / tb.ModelWorkS)
	}
	return tb
}

// servedTaskMs are the server's Task times of every request it answered (warmup and probes too).
func (r *row) servedTaskMs(mk *made) map[string]float64 {
	out := map[string]float64{}
	ts := r.spec.Timing
	if ts.Body == "" {
		all, err := tasksFromRecords(ts, r.ev.Path(schema.RecordsFile))
		if err == nil {
			if c := r.res.Controls; c != nil {
				for _, p := range c.Probes {
					if p.Status != http.StatusOK {
						delete(all, p.RequestID) // refused: no Task ran
					}
				}
			}
			return all
		}
		return out
	}
	if b := mk.benchmarked; b != nil {
		for _, rec := range b.export.Raw {
			if ms, err := taskFromBody(ts, rec.Body()); err == nil && !rec.Failed() {
				out[rec.Metadata.XRequestID] = ms
			}
		}
	}
	for i, body := range mk.influence {
		if ms, err := taskFromBody(ts, body); err == nil {
			out[fmt.Sprintf("influence-%d", i)] = ms
		}
	}
	for i, body := range mk.controls {
		if ms, err := taskFromBody(ts, body); err == nil {
			out[fmt.Sprintf("controls-%d", i)] = ms
		}
	}
	return out
}

// nativeWork fills the native Task's share of model work: one load and every Task call.
// A one-shot replay's Task time is its own report, else the server's for the same
// request; only the smallest load counts: the others are loads qualification did not need.
func (r *row) nativeWork(id identityRun, m *schema.ModelWork, served map[string]float64) (mode string, loads int) {
	sum := id.sum
	if sum == nil || len(id.replays) == 0 {
		return "", 0
	}
	taskMs := func(rp *replay) float64 {
		if rp.taskMs > 0 {
			return rp.taskMs
		}
		return served[rp.req.RequestID]
	}
	if sum.Mode == schema.NativeBatch {
		for _, rp := range id.replays {
			if rp.err == nil {
				m.NativeTasks++
				m.NativeTaskS += taskMs(rp) / 1000
			}
		}
		// The load is all the batch did besides its Task calls and waiting for its items, as
		// a server's is its start-to-ready: the program's own load_ms leaves its imports out.
		m.NativeLoadS = math.Max(0, id.batchWallS-m.NativeTaskS-id.batchWaitedS)
		return sum.Mode, 1
	}
	first := true
	for _, rp := range id.replays {
		if rp.err != nil || rp.wallS == 0 {
			continue
		}
		t := taskMs(rp) / 1000
		m.NativeTasks++
		m.NativeTaskS += t
		loads++
		if load := math.Max(0, rp.wallS-t); first || load < m.NativeLoadS {
			m.NativeLoadS, first = load, false
		}
	}
	return sum.Mode, loads
}

// order states how the row's work was laid out: what began early, by how much (from the
// stage starts and command records as written, which the checker re-derives it from),
// and the critical path that follows.
func (r *row) order(mk *made, tb *schema.TimeBudget) {
	tb.Order = schema.OrderOverlapped
	if r.s.cfg.Serial {
		tb.Order = schema.OrderSerial
	}
	o := &schema.Overlap{BuildWhy: r.plan.buildWhy, ServerWhy: r.plan.serverWhy, AIPerfWhy: r.plan.aiperfWhy, NativeWhy: r.plan.preloadWhy}
	stageStart := map[string]time.Time{}
	for _, st := range r.res.Stages {
		stageStart[st.Name] = st.Start
	}
	ahead := func(started time.Time, stage string) float64 {
		t0, ok := stageStart[stage]
		if !ok || started.IsZero() {
			return 0
		}
		return round3(t0.Sub(started).Seconds())
	}
	// What began early claims what its command record says (stopped or waited for by now).
	early := func(f *future[schema.CommandRecord], stage string) (bool, float64) {
		if f == nil || !f.early {
			return false, 0
		}
		rec, _ := f.wait()
		return true, ahead(rec.Start, stage)
	}
	// The build's claim is what its command records say: one began during preflight.
	if t := mk.buildProg.earlyStart(); !t.IsZero() {
		o.BuildEarly, o.BuildAheadS = true, ahead(t, schema.StageBuild)
	} else if r.plan.buildEarly {
		o.BuildWhy = "begun during preflight, but no command of the build started before its stage: " + o.BuildWhy
	}
	// The claim is what the server's record says, written when it stopped (by now) or its
	// start failed; a row stopped before the start began has none.
	if !mk.serverStart.IsZero() {
		o.ServerEarly, o.ServerAheadS = true, ahead(mk.serverStart, schema.StageServe)
	} else if r.plan.serverEarly {
		o.ServerWhy = "planned beside the correctness case, but the row stopped before the server started: " + o.ServerWhy
	}
	o.AIPerfEarly, o.AIPerfAheadS = early(mk.bench, schema.StageBenchmark)
	o.NativePreload, o.NativeAheadS = early(mk.native, schema.StageIdentity)
	if tb.Order == schema.OrderOverlapped {
		tb.Overlap = o
	}
	// Serial, the critical path is all the model work, as written; overlapped, from the
	// rounded parts (the checker allows for their rounding).
	tb.CriticalPathS = tb.ModelWorkS
	if o.NativePreload || o.ServerEarly {
		tb.CriticalPathS = round3(schema.CriticalPath(tb.Model, o.NativePreload, o.ServerEarly))
	}
	tb.PhysicalLimitS = round3(schema.PhysicalLimit(tb.Model))
	if tb.PhysicalLimitS > 0 {
		tb.PhysicalRatio = round3(tb.WallS / tb.PhysicalLimitS)
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
