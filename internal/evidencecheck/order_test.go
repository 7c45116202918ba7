package evidencecheck

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The H200 pair of issue 28: the same row serial and overlapped in one lease. Both check
// whole (TestCommittedOrderRunsPass); each forgery of the order, edited with the row's
// checksums recomputed, fails on the claim it touched.
var orderRuns = map[string]string{
	"serial":     "h200-orders/serial/20261205T180948Z-2707",
	"overlapped": "h200-orders/overlapped/20261205T181148Z-3952",
}

func TestCommittedOrderRunsPass(t *testing.T) {
	for name, dir := range orderRuns {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, Verify(committed(t, dir), "").Err())
		})
	}
}

func TestOrderForgeriesFail(t *testing.T) {
	const row = "reference-smoke"
	budget := func(t *testing.T, dir string, edit func(tb map[string]any)) {
		editJSON(t, filepath.Join(dir, row, "results.json"), func(d map[string]any) { edit(d["time_budget"].(map[string]any)) })
	}
	for _, tc := range []struct {
		name, run string
		edit      func(t *testing.T, dir string)
		want      []string
	}{
		{"the critical path shortened", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) { tb["critical_path_s"] = 40.0 })
		}, []string{row + "/results.json: time_budget.critical_path_s: evidence says 68.811"}},
		{"a physical limit claimed short and the wall's ratio to it", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) { tb["physical_limit_s"] = 80.0; tb["physical_ratio"] = 1.0 })
		}, []string{row + "/results.json: time_budget.physical_limit_s: evidence says 58.129", "time_budget.physical_ratio: evidence says"}},
		{"the preloaded native batch hidden", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) { tb["overlap"].(map[string]any)["native_preload"] = false })
		}, []string{row + "/results.json: time_budget.overlap.native_preload: evidence says true"}},
		{"a serial run relabelled overlapped, its critical path cut", "serial", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) {
				tb["order"] = "overlapped"
				tb["overlap"] = map[string]any{"aiperf_early": true, "aiperf_ahead_s": 10.0, "native_preload": true, "native_ahead_s": 20.0}
				tb["critical_path_s"] = 60.0
			})
		}, []string{"time_budget.overlap.native_preload: evidence says false", "time_budget.overlap.aiperf_early: evidence says false",
			"time_budget.critical_path_s: evidence says 102.391"}},
		{"the batch said to have read its items while the server ran", "overlapped", func(t *testing.T, dir string) {
			replaceAllRe(t, filepath.Join(dir, row, "identity/native-batch.jsonl"), `"items_read_at": "[^"]+"`, `"items_read_at": "2026-12-04T14:02:00.000000Z"`)
		}, []string{"identity/native-batch.jsonl: items_read_at: evidence says after the server stopped", "no replay beside the server"}},
		{"the native batch's early start removed from its record", "overlapped", func(t *testing.T, dir string) {
			editJSONL(t, filepath.Join(dir, row, "commands.jsonl"), func(d map[string]any) { delete(d, "during") })
		}, []string{"stages[identity].wall_s: evidence says at least the span of its commands", "time_budget.overlap.native_preload: evidence says false"}},
		{"the identity stage's start moved earlier", "overlapped", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, row, "results.json"), func(d map[string]any) {
				for _, st := range d["stages"].([]any) {
					if m := st.(map[string]any); m["name"] == "identity" {
						m["start"] = "2026-12-04T14:01:40Z"
					}
				}
			})
		}, []string{"stages[identity].start: evidence says at or after stage influence's end", "time_budget.overlap.native_ahead_s: evidence says"}},
		{"a serial run's build said to have begun during preflight", "serial", func(t *testing.T, dir string) {
			editJSONL(t, filepath.Join(dir, row, "commands.jsonl"), func(d map[string]any) {
				if d["stage"] == "build" {
					d["during"] = "preflight"
				}
			})
		}, []string{"build command python: evidence says starting within stage preflight", "commands.jsonl: during: evidence says no command started early (time_budget.order serial)"}},
		{"the early build hidden", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) { tb["overlap"].(map[string]any)["build_early"] = false })
		}, []string{"time_budget.overlap.build_early: evidence says true"}},
		{"the build's head start stretched", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) { tb["overlap"].(map[string]any)["build_ahead_s"] = 30.0 })
		}, []string{"time_budget.overlap.build_ahead_s: evidence says 4.026"}},
		{"a wall below the critical path", "overlapped", func(t *testing.T, dir string) {
			budget(t, dir, func(tb map[string]any) {
				tb["wall_s"] = 50.0
				tb["harness_s"] = 50.0 - tb["model_work_s"].(float64)
				tb["ratio"] = 50.0 / tb["model_work_s"].(float64)
			})
		}, []string{"time_budget.wall_s: evidence says at least the critical path, 68.811 s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := committedCopy(t, orderRuns[tc.run])
			tc.edit(t, dir)
			resum(t, dir)
			failsWith(t, Verify(dir, "").Err(), tc.want...)
		})
	}
}
