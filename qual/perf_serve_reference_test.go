package qual

import (
	"os"
	"time"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/harness"
)

// perfServeReferenceRows: TRTMC's own trtmc-perf-serve, `serve --backend reference`,
// serving the diffusers reference's smoke pipeline (tiny random weights saved as a
// folder), driven by the Qwen adapter's perf-serve contract (task route, AIPerf's raw
// endpoint, latent replay, Task time from the records, /v1/serving/info). A smoke row:
// it proves TRTMC's reference serving path and every stage on a GPU, never the
// checkpoint. It needs a CUDA GPU, QUALKIT_TRTMC_PERF_SERVE (a TRTMC checkout or
// ../shared/trtmc-perf-serve) and QUALKIT_QWEN_PYTHON with torch, diffusers and
// perf-serve's imports; scripts/h200/run.sh runs it on the H200.
var perfServeReferenceRows = harness.NewTable(
	harness.Checkpoint{
		Name:    "perf-serve-reference-smoke",
		Family:  "qwen_image",
		Model:   qwenimage.HFID,
		Profile: "qwen-image-edit-2511-perf-serve-reference-smoke",
		Smoke:   true,
		Reason:  "TRTMC's own perf-serve reference backend (what TRTMC's qualification serves its reference side with) on the diffusers reference's tiny random pipeline, through the Qwen adapter's perf-serve contract: TRTMC's serving code on a GPU, labelled smoke, never qualification of the checkpoint",
		Adapter: qwenimage.PerfServeReferenceFromEnv(os.Getenv),
		// The reference-smoke workload at 128x128 (5 + 1 requests, as every row): the
		// reference backend keeps every output as a float32 array, and a committed run
		// stays a few MB.
		Fixtures: "fixtures/qwen_perf_serve_reference/manifest.json",
		Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
		// The reference-smoke row's sizes (under 1 GiB, qual/reference_smoke_test.go): the
		// same pipeline, served by perf-serve's backend.
		Needs:    harness.Needs{GPU: gpu.Needs{Count: 1}, ResidentBytes: 1 << 30, CaseResidentBytes: 1 << 30},
		Deadline: family.Deadlines{Build: 5 * time.Minute, Correctness: 10 * time.Minute, Ready: 5 * time.Minute, Request: 2 * time.Minute, Native: 3 * time.Minute},
	},
)
