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

// The lines this package's programs write per request: reference/server.py's per-edit
// line, and the batch native Tasks' line per replay (reference/native.py,
// reference/perfserve_native.py, batch/batch.go: "<prog>: batch? n/total id: sha12 (ms)").
// TRTMC's servers write no line per request the checker can join on.
var (
	diffusersServerLine      = regexp.MustCompile(`^\S+ (?P<id>\S+) (?P<status>\d{3})(?: task (?P<task_ms>[0-9.]+) ms)?\b`)
	diffusersBatchLine       = batchLine(`native\.py: batch`)
	trtmcBatchLine           = batchLine(`trtmc-batch:`)
	perfServeNativeBatchLine = batchLine(`perfserve_native\.py: batch`)
)

func batchLine(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`^` + prefix + ` (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
}

// diffusersPairReference is where the diffusers reference's correctness case writes the
// quality pair's reference image (its CPU float32 run), under its artifacts folder.
const diffusersPairReference = "cpu.png"

// Rules are what the checker holds this package's backends to (families/all lists
// them): TRTMC's from its layout table; the diffusers reference's pair is its CPU image,
// and its parity metrics are judged again against its parity file at the run's commit.
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
	// PerfServeReference: the parity case's pair and judge, perf-serve's records.
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

// judgeParity is reference/test_parity.py's judge in Go: the GPU meets the gates
// against the CPU, the mirrored control fails them, the repeat is pixel-identical, and
// the mirrored reference moves the output by at least the influence minimum.
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
