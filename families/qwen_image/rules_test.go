package qwenimage

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/judge"
)

// The Task time sources the checker allows are the ones the adapters give a row, by
// its protocol: perf-serve's records on the task route, the edit route's configured
// default, the diffusers server's body (its records state the same field).
func TestCheckerTaskTimeIsTheAdapters(t *testing.T) {
	trtmc, ok := judge.Find(Rules, BackendTRTMC)
	require.True(t, ok)
	perf := New(Config{Checkout: checkout(t, LayoutFamilies)})
	edit := New(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute)})
	for _, a := range []TRTMC{perf, edit} {
		tt := trtmc.TaskTime(judge.Row{Protocol: a.protocol().Name()})
		assert.Contains(t, tt.Sources, a.timing(), a.protocol().Name())
	}
	assert.Len(t, trtmc.TaskTime(judge.Row{Protocol: perf.protocol().Name()}).Sources, 1, "perf-serve: its records alone")

	diffusers, ok := judge.Find(Rules, BackendDiffusers)
	require.True(t, ok)
	tt := diffusers.TaskTime(judge.Row{})
	assert.Equal(t, smokeAdapter().timing(), tt.Sources[0])
	assert.Equal(t, "timing.task_ms", tt.Records, "the records line states the body's timing.task_ms (reference/server.py § record)")
}

// The per-request lines the checker reads are the ones these programs write (lines from
// the committed H200 run, docs/evidence/h200-orders/serial, and batch/batch.go's format).
func TestCheckerLogLinesAreThePrograms(t *testing.T) {
	diffusers, _ := judge.Find(Rules, BackendDiffusers)
	re := diffusers.ServerLog
	m := re.FindStringSubmatch("2026-12-04T14:00:40.425+00:00 3634700e-2cce-4bd6-9676-45c8ddf74e05 200 task 1062.7 ms queue 0.3 ms")
	require.NotNil(t, m)
	assert.Equal(t, []string{"3634700e-2cce-4bd6-9676-45c8ddf74e05", "200", "1062.7"},
		[]string{m[re.SubexpIndex("id")], m[re.SubexpIndex("status")], m[re.SubexpIndex("task_ms")]})
	for _, other := range []string{
		"2026-12-04T14:00:32.255+00:00 ready: runtime {\"cuda\": \"13.0\"}",
		"2026-12-04T14:00:16.144+00:00 serving Qwen/Qwen-Image-Edit-2511 (smoke, bundle sha256 4204) on http://127.0.0.1:42075 with aiohttp",
		"[transformers] Model config: bos_token_id must be `None` or an integer within the vocabulary (between 0 and 299), got 151643.",
	} {
		assert.Nil(t, re.FindStringSubmatch(other), other)
	}
	m = diffusers.NativeBatchLog.FindStringSubmatch("native.py: batch 1/6 3634700e-2cce-4bd6-9676-45c8ddf74e05: a042f133f212 (1034.6 ms)")
	require.NotNil(t, m)
	assert.Equal(t, "a042f133f212", m[diffusers.NativeBatchLog.SubexpIndex("sha")])

	trtmc, _ := judge.Find(Rules, BackendTRTMC)
	assert.Nil(t, trtmc.ServerLog, "TRTMC's servers write no per-request line to join on")
	m = trtmc.NativeBatchLog.FindStringSubmatch("trtmc-batch: 3/6 req-3: 0123456789ab (12.5 ms)")
	require.NotNil(t, m)
	assert.Equal(t, []string{"3", "6", "req-3", "0123456789ab"}, []string{m[1], m[2], m[3], m[4]})
}

// The checker's parity judge is the case's own (reference/test_parity.py): the committed
// H200 smoke row's result meets parity.json; a GPU output below the PSNR gate, or a
// control that passes too, does not.
func TestJudgeParityIsTheCases(t *testing.T) {
	gates, err := os.ReadFile("reference/parity.json")
	require.NoError(t, err)
	result, err := os.ReadFile("../../docs/evidence/h200-reference-smoke/parity-result.json")
	require.NoError(t, err)
	missed, err := judgeParity(result, gates)
	require.NoError(t, err)
	assert.Empty(t, missed)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(result, &doc))
	m := doc["metrics"].(map[string]any)
	m["gpu_vs_cpu"].(map[string]any)["psnr_db"] = 40.0
	m["gpu_vs_cpu_mirrored"].(map[string]any)["ssim"] = 1.0
	m["gpu_vs_cpu_mirrored"].(map[string]any)["psnr_db"] = nil
	edited, err := json.Marshal(doc)
	require.NoError(t, err)
	missed, err = judgeParity(edited, gates)
	require.NoError(t, err)
	assert.Equal(t, []string{"GPU vs CPU float32: PSNR 40.00 dB < 55", "control: the GPU output also passes against the CPU output of the mirrored reference"}, missed)
}
