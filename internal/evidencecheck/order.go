package evidencecheck

import (
	"fmt"
	"math"
	"time"

	"qualkit/internal/schema"
)

// batchHead: a preloaded batch's wait for its items, and when it read them.
type batchHead struct {
	WaitedMs    float64   `json:"waited_ms"`
	ItemsReadAt time.Time `json:"items_read_at"`
}

// stageWindow: ok is false in runs made before the overlapped order (no start).
func (r *rowCheck) stageWindow(name string) (start, end time.Time, ok bool) {
	for _, st := range r.res.Stages {
		if st.Name == name && !st.Start.IsZero() {
			return st.Start, st.Start.Add(time.Duration(st.WallS * float64(time.Second))), true
		}
	}
	return time.Time{}, time.Time{}, false
}

// checkEarlyCommand: only three commands start early: the server during the case, and
// AIPerf and the native batch during serve, each ending within its own stage.
func (r *rowCheck) checkEarlyCommand(c schema.CommandRecord) {
	const f = schema.CommandsFile
	what := c.Stage + " command " + baseName(firstArg(c.Args))
	if c.Stage == schema.StageBuild {
		// The build starts within preflight and ends within its stage (or preflight, failed).
		if !r.truth(c.During == schema.StagePreflight, f, what+" during", "a build command starts early only during preflight", c.During) {
			return
		}
		from, pend, ok := r.stageWindow(schema.StagePreflight)
		if !r.truth(ok, schema.ResultsFile, "stages[preflight].start", "present (a build command started during it)", "absent") {
			return
		}
		to, where := pend, "preflight's end (the build stage did not run: preflight stopped the build)"
		if _, bend, ok := r.stageWindow(schema.StageBuild); ok && r.stageRan(schema.StageBuild) {
			to, where = bend, "stage build's end"
		}
		r.truth(!c.Start.Before(from.Add(-windowSlack)) && !c.Start.After(pend.Add(windowSlack)) && !c.End().After(to.Add(windowSlack)), f, what,
			"starting within stage preflight ("+from.Format(time.RFC3339Nano)+" to "+pend.Format(time.RFC3339Nano)+"), ending by "+where+" ("+to.Format(time.RFC3339Nano)+")",
			c.Start.Format(time.RFC3339Nano)+" to "+c.End().Format(time.RFC3339Nano))
		return
	}
	if c.IsServer() {
		if !r.truth(c.During == schema.StageCorrectness, f, what+" during", "the server starts early only during correctness", c.During) {
			return
		}
		from, to, ok := r.stageWindow(schema.StageCorrectness)
		if !r.truth(ok, schema.ResultsFile, "stages[correctness].start", "present (the server started during it)", "absent") {
			return
		}
		r.truth(!c.Start.Before(from.Add(-windowSlack)) && !c.Start.After(to.Add(windowSlack)), f, what+" start",
			"within stage correctness ("+from.Format(time.RFC3339Nano)+" to "+to.Format(time.RFC3339Nano)+")", c.Start.Format(time.RFC3339Nano))
		return
	}
	aiperf := c.Stage == schema.StageBenchmark && len(c.Args) > 1 && c.Args[1] == "profile"
	batch := c.Stage == schema.StageIdentity && c.Log == schema.NativeBatchLog
	if !r.truth((aiperf || batch) && c.During == schema.StageServe, f, what+" during",
		"only the server (during correctness), AIPerf or the native batch (during serve) start early", c.During) {
		return
	}
	from, _, ok1 := r.stageWindow(c.During)
	_, to, ok2 := r.stageWindow(c.Stage)
	if !r.truth(ok1 && ok2, schema.ResultsFile, "stages[].start", "the start of stages "+c.During+" and "+c.Stage+" (a command ran across them)", "absent") {
		return
	}
	r.truth(!c.Start.Before(from.Add(-windowSlack)) && !c.End().After(to.Add(windowSlack)), f, what,
		"from stage "+c.During+"'s start ("+from.Format(time.RFC3339Nano)+") to stage "+c.Stage+"'s end ("+to.Format(time.RFC3339Nano)+")",
		c.Start.Format(time.RFC3339Nano)+" to "+c.End().Format(time.RFC3339Nano))
}

// checkOrder: the order is what the commands did, its overlap figures and critical path
// re-derived, and a preloaded batch read its items only after the server stopped.
func (r *rowCheck) checkOrder() {
	tb := r.res.TimeBudget
	early := func(c *schema.CommandRecord) *schema.CommandRecord {
		if c != nil && c.During == schema.StageServe {
			return c
		}
		return nil
	}
	aiperf, batch := early(r.aiperfCmd), early(r.batchCmd)
	var server, build *schema.CommandRecord
	for i, c := range r.cmds {
		if c.IsServer() && c.During == schema.StageCorrectness {
			server = &r.cmds[i]
		}
		if c.Stage == schema.StageBuild && c.During == schema.StagePreflight && (build == nil || c.Start.Before(build.Start)) {
			build = &r.cmds[i]
		}
	}
	for i := 1; i < len(r.res.Stages); i++ {
		prev, st := r.res.Stages[i-1], r.res.Stages[i]
		if prev.Start.IsZero() || st.Start.IsZero() {
			continue
		}
		end := prev.Start.Add(time.Duration(prev.WallS * float64(time.Second)))
		r.truth(!st.Start.Before(end.Add(-windowSlack)), schema.ResultsFile, "stages["+st.Name+"].start",
			"at or after stage "+prev.Name+"'s end ("+end.Format(time.RFC3339Nano)+")", st.Start.Format(time.RFC3339Nano))
	}
	switch tb.Order {
	case "":
		// A run from before there was a choice: serial, and it says nothing more.
		r.truth(build == nil && server == nil && aiperf == nil && batch == nil && tb.Overlap == nil, schema.ResultsFile, "time_budget.order",
			"stated whenever a command started early (commands.jsonl during)", "absent")
		return
	case schema.OrderSerial:
		r.truth(tb.Overlap == nil, schema.ResultsFile, "time_budget.overlap", "absent in the serial order", "present")
		r.truth(build == nil && server == nil && aiperf == nil && batch == nil, schema.CommandsFile, "during", "no command started early (time_budget.order serial)", "one did")
	case schema.OrderOverlapped:
		o := tb.Overlap
		if !r.truth(o != nil, schema.ResultsFile, "time_budget.overlap", "present in the overlapped order", "absent") {
			return
		}
		r.same(schema.ResultsFile, "time_budget.overlap.build_early", fmt.Sprint(build != nil), fmt.Sprint(o.BuildEarly), "the build commands' during in commands.jsonl")
		r.same(schema.ResultsFile, "time_budget.overlap.server_early", fmt.Sprint(server != nil), fmt.Sprint(o.ServerEarly), "the server command's during in commands.jsonl")
		r.same(schema.ResultsFile, "time_budget.overlap.aiperf_early", fmt.Sprint(aiperf != nil), fmt.Sprint(o.AIPerfEarly), "the AIPerf command's during in commands.jsonl")
		r.same(schema.ResultsFile, "time_budget.overlap.native_preload", fmt.Sprint(batch != nil), fmt.Sprint(o.NativePreload), "the native batch command's during in commands.jsonl")
		if r.stageRan(schema.StageBuild) {
			r.checkAhead("build_ahead_s", build, schema.StageBuild, o.BuildAheadS)
		}
		r.checkAhead("server_ahead_s", server, schema.StageServe, o.ServerAheadS)
		r.checkAhead("aiperf_ahead_s", aiperf, schema.StageBenchmark, o.AIPerfAheadS)
		r.checkAhead("native_ahead_s", batch, schema.StageIdentity, o.NativeAheadS)
		if batch != nil {
			r.checkItemsRead()
		}
	default:
		r.fail(schema.ResultsFile, "time_budget.order", schema.OrderSerial+" or "+schema.OrderOverlapped, tb.Order)
		return
	}
	cp := schema.CriticalPath(tb.Model, batch != nil, server != nil)
	r.truth(math.Abs(cp-tb.CriticalPathS) < 0.01, schema.ResultsFile, "time_budget.critical_path_s",
		fmt.Sprintf("%.3f, the longest chain of model_work's parts (server load beside the case: %v; native load beside the server: %v)", cp, server != nil, batch != nil), fmt.Sprintf("%.3f", tb.CriticalPathS))
	r.truth(tb.WallS+0.01 >= tb.CriticalPathS, schema.ResultsFile, "time_budget.wall_s",
		fmt.Sprintf("at least the critical path, %.3f s (no row runs faster than its longest chain of dependent work)", tb.CriticalPathS), fmt.Sprintf("%.3f", tb.WallS))
	// The physical limit (absent in older runs) and the wall's ratio to it.
	if tb.PhysicalLimitS != 0 || tb.PhysicalRatio != 0 {
		pl := schema.PhysicalLimit(tb.Model)
		r.truth(math.Abs(pl-tb.PhysicalLimitS) < 0.01, schema.ResultsFile, "time_budget.physical_limit_s",
			fmt.Sprintf("%.3f, model_work's build, case, served and native Tasks", pl), fmt.Sprintf("%.3f", tb.PhysicalLimitS))
		if tb.PhysicalLimitS > 0 {
			r.truth(math.Abs(tb.WallS/tb.PhysicalLimitS-tb.PhysicalRatio) < 0.002, schema.ResultsFile, "time_budget.physical_ratio",
				fmt.Sprintf("%.3f, wall_s over physical_limit_s", tb.WallS/tb.PhysicalLimitS), fmt.Sprintf("%.3f", tb.PhysicalRatio))
		}
	}
}

func (r *rowCheck) checkAhead(claim string, c *schema.CommandRecord, stage string, got float64) {
	want := 0.0
	if c != nil {
		start, _, ok := r.stageWindow(stage)
		if !r.truth(ok, schema.ResultsFile, "stages["+stage+"].start", "present (a command of it started early)", "absent") {
			return
		}
		want = start.Sub(c.Start).Seconds()
	}
	r.truth(math.Abs(want-got) < 0.002, schema.ResultsFile, "time_budget.overlap."+claim,
		fmt.Sprintf("%.3f, stage %s's start less its early command's start", want, stage), fmt.Sprintf("%.3f", got))
}

// checkItemsRead: no replay ran beside the server. A batch stopped before identity read
// none: nothing to check, unless identity passed.
func (r *rowCheck) checkItemsRead() {
	read := r.batch.head.ItemsReadAt
	if read.IsZero() {
		r.truth(!r.passed(schema.StageIdentity), schema.NativeBatchFile, "line 1 items_read_at", "when the preloaded batch read its items (stage identity passed)", "absent")
		return
	}
	if start, _, ok := r.stageWindow(schema.StageIdentity); ok {
		r.truth(!read.Before(start.Add(-windowSlack)), schema.NativeBatchFile, "items_read_at",
			"at or after stage identity's start ("+start.Format(time.RFC3339Nano)+")", read.Format(time.RFC3339Nano))
	}
	for _, c := range r.cmds {
		if c.Stage == schema.StageServe && c.Log == schema.ServerLog {
			r.truth(!read.Before(c.End().Add(-windowSlack)), schema.NativeBatchFile, "items_read_at",
				"after the server stopped ("+c.End().Format(time.RFC3339Nano)+", commands.jsonl): no replay beside the server", read.Format(time.RFC3339Nano))
		}
	}
}

func (r *rowCheck) stageRan(name string) bool {
	for _, st := range r.res.Stages {
		if st.Name == name {
			return st.Status == schema.Pass || st.Status == schema.Fail
		}
	}
	return false
}
