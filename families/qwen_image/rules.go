package qwenimage

import (
	"regexp"
	"strings"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// The lines this package's programs write per request: the diffusers reference server's
// per-edit line (reference/server.py: "<time> <request id> <status> task <ms> ms ..."),
// the batch native Tasks' line per replay (reference/native.py: "native.py: batch
// %d/%d %s: %s (%.1f ms)"; batch/batch.go: "trtmc-batch: %d/%d %s: %x (%.1f ms)", both
// the PNG's sha256 cut to 12 hex digits). TRTMC's servers write no line per request
// the checker can join on.
var (
	diffusersServerLine = regexp.MustCompile(`^\S+ (?P<id>\S+) (?P<status>\d{3})(?: task (?P<task_ms>[0-9.]+) ms)?\b`)
	diffusersBatchLine  = regexp.MustCompile(`^native\.py: batch (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
	trtmcBatchLine      = regexp.MustCompile(`^trtmc-batch: (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
	// reference/perfserve_native.py: "perfserve_native.py: batch %d/%d %s: %s (%.1f ms)".
	perfServeNativeBatchLine = regexp.MustCompile(`^perfserve_native\.py: batch (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
)

// diffusersPairReference is where the diffusers reference's correctness case writes the
// quality pair's reference image (its CPU float32 run), under its artifacts folder.
const diffusersPairReference = "cpu.png"

// Rules are what the checker holds this package's backends to (families/all lists
// them). TRTMC's come from its layout table (layouts: the file each layout's case
// writes, the formula its thresholds bound); the diffusers reference's pair is its CPU
// image, judged with qualkit's own formula. Their cases' gates live in other checkouts
// (TRTMC's, the reference's parity file), so no CaseGates.
var Rules = []judge.Rules{{
	Backend: BackendTRTMC,
	PairReference: func(layout, _ string) string {
		if l, ok := layoutNamed(layout); ok {
			return l.PairReference
		}
		return ""
	},
	PairMetric: func(layout string) string {
		if l, ok := layoutNamed(layout); ok {
			return l.PairMetric
		}
		return "the metric of a TRTMC layout (" + strings.Join(layoutNames(), ", ") + ")"
	},
	TaskTime:       trtmcTaskTime,
	NativeBatchLog: trtmcBatchLine,
}, {
	Backend:       BackendDiffusers,
	PairReference: func(string, string) string { return diffusersPairReference },
	PairMetric:    func(string) string { return "" },
	// The server states timing.task_ms in the body and in its records line alike
	// (reference/server.py § success_body, record); the row reads the body.
	TaskTime: func(judge.Row) judge.TaskTime {
		ts := Diffusers{}.timing()
		return judge.TaskTime{Sources: []schema.TimingSource{*ts.Schema()}, Body: ts.Body, Records: ts.Body, RecordID: ts.RecordID}
	},
	ServerLog:      diffusersServerLine,
	NativeBatchLog: diffusersBatchLine,
}, {
	// TRTMC's perf-serve serving the diffusers reference's pipeline (PerfServeReference):
	// the pair is the same parity case's, judged the same way; the Task time is perf-serve's
	// records line (uvicorn at warning level writes no line per request); the batch native
	// Task writes reference/perfserve_native.py's line per replay.
	Backend:       BackendPerfServeReference,
	PairReference: func(string, string) string { return diffusersPairReference },
	PairMetric:    func(string) string { return "" },
	TaskTime: func(judge.Row) judge.TaskTime {
		ts := perfServeTiming
		return judge.TaskTime{Sources: []schema.TimingSource{*ts.Schema()}, Records: ts.Records, RecordID: ts.RecordID}
	},
	NativeBatchLog: perfServeNativeBatchLine,
}}

// trtmcTaskTime: perf-serve's records (timing.model_call_ms by request_id) on its task
// route; on the edit route what Config's defaults name (the body's
// trtmc_timing.model_call_ms, or the records' timing.model_call_ms: timingFromEnv).
func trtmcTaskTime(row judge.Row) judge.TaskTime {
	records := schema.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID}
	if row.Protocol == wire.TRTMCTask {
		return judge.TaskTime{Sources: []schema.TimingSource{records}, Records: records.Records, RecordID: records.RecordID}
	}
	return judge.TaskTime{Sources: []schema.TimingSource{{Body: DefaultTimingBody}, records},
		Body: DefaultTimingBody, Records: records.Records, RecordID: records.RecordID}
}

func layoutNamed(name string) (Layout, bool) {
	for _, l := range layouts {
		if l.Name == name {
			return l, true
		}
	}
	return Layout{}, false
}

func layoutNames() []string {
	var out []string
	for _, l := range layouts {
		out = append(out, l.Name)
	}
	return out
}
