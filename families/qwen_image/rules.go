package qwenimage

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

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
// image, judged with qualkit's own formula, and its parity case's metrics are judged
// again against its parity file at the run's commit (TRTMC's case's gates live in
// TRTMC's checkout: no CaseGates).
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
		return "the metric of a TRTMC layout (" + LayoutE9132e79 + ", " + LayoutFamilies + ")"

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
		return judge.TaskTime{Sources: []schema.TimingSource{ts}, Body: ts.Body, Records: ts.Body, RecordID: ts.RecordID}
	},
	ServerLog:      diffusersServerLine,
	NativeBatchLog: diffusersBatchLine,
	CaseGates:      "families/qwen_image/reference/parity.json",
	JudgeCase:      judgeParity,
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
		return judge.TaskTime{Sources: []schema.TimingSource{ts}, Records: ts.Records, RecordID: ts.RecordID}
	},
	NativeBatchLog: perfServeNativeBatchLine,
	CaseGates:      "families/qwen_image/reference/" + PerfServeReferenceParity,
	JudgeCase:      judgeParity,
}}

// judgeParity is the parity case's judge (reference/test_parity.py) in Go: the GPU
// output meets the gates of the result's thresholds key against the CPU's, the control
// (against the CPU output of the mirrored reference) fails them, the repeat is
// pixel-identical, and the mirrored reference moves the GPU output by at least the
// influence minimum.
func judgeParity(result, gates []byte) ([]string, error) {
	type comparison struct {
		PSNR *float64 `json:"psnr_db"` // null: identical
		SSIM float64  `json:"ssim"`
		Frac float64  `json:"frac_values_differing"`
		Mean float64  `json:"mean_abs_diff_levels"`
	}
	var res struct {
		Key     string                `json:"thresholds_key"`
		Metrics map[string]comparison `json:"metrics"`
	}
	type bound struct{ Min float64 }
	var g struct {
		Thresholds map[string]struct {
			PSNR      bound `json:"psnr_db"`
			SSIM      bound `json:"ssim"`
			Influence struct {
				Min float64 `json:"min_mean_abs_diff_levels"`
			} `json:"influence"`
		} `json:"thresholds"`
	}
	if err := json.Unmarshal(gates, &g); err != nil {
		return nil, fmt.Errorf("gates: %w", err)
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	th, ok := g.Thresholds[res.Key]
	if !ok {
		return []string{fmt.Sprintf("no thresholds for %q", res.Key)}, nil
	}
	failed := func(c comparison) []string {
		var out []string
		if c.PSNR != nil && *c.PSNR < th.PSNR.Min {
			out = append(out, fmt.Sprintf("PSNR %.2f dB < %g", *c.PSNR, th.PSNR.Min))
		}
		if c.SSIM < th.SSIM.Min {
			out = append(out, fmt.Sprintf("SSIM %.6f < %g", c.SSIM, th.SSIM.Min))
		}
		return out
	}
	m := res.Metrics
	var out []string
	for _, f := range failed(m["gpu_vs_cpu"]) {
		out = append(out, "GPU vs CPU float32: "+f)
	}
	if len(failed(m["gpu_vs_cpu_mirrored"])) == 0 {
		out = append(out, "control: the GPU output also passes against the CPU output of the mirrored reference")
	}
	if r, ok := m["gpu_vs_gpu_repeat"]; !ok || r.Frac != 0 {
		out = append(out, "the same request twice on the GPU gave different pixels")
	}
	if got := m["gpu_vs_gpu_mirrored"].Mean; got < th.Influence.Min {
		out = append(out, fmt.Sprintf("reference influence on the GPU: %.4f levels on average, want >= %g", got, th.Influence.Min))
	}
	return out, nil
}

// trtmcTaskTime: perf-serve's records on its task route; on the edit route what
// Config's defaults name (timingFromEnv).
func trtmcTaskTime(row judge.Row) judge.TaskTime {
	records := perfServeTiming
	if row.Protocol == wire.TRTMCTask {
		return judge.TaskTime{Sources: []schema.TimingSource{records}, Records: records.Records, RecordID: records.RecordID}
	}
	return judge.TaskTime{Sources: []schema.TimingSource{{Body: DefaultTimingBody}, records},
		Body: DefaultTimingBody, Records: records.Records, RecordID: records.RecordID}
}

func layoutNamed(name string) (Layout, bool) {
	i := slices.IndexFunc(layouts, func(l Layout) bool { return l.Name == name })
	if i < 0 {
		return Layout{}, false
	}
	return layouts[i], true
}
