package qual

import (
	"os"
	"testing"
	"time"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/harness"
	"qualkit/internal/harness/gpu"
)

// qwenReferenceRows is the diffusers reference backend of Qwen-Image-Edit-2511
// (families/qwen_image/reference/). Its one row is the smoke profile: tiny random weights
// built in code, so it runs on any CUDA GPU with nothing downloaded and proves the
// serving code path and every stage on a GPU, never the checkpoint. Its interpreter is
// QUALKIT_QWEN_PYTHON (torch, torchvision, transformers, diffusers 0.40.0, pytest).
var qwenReferenceRows = harness.NewTable(
	harness.Checkpoint{
		Name:     "reference-smoke",
		Family:   "qwen_image",
		Model:    qwenimage.HFID,
		Profile:  "qwen-image-edit-2511-reference-smoke",
		Smoke:    true,
		Reason:   "diffusers' QwenImageEditPlusPipeline (the reference TRTMC's correctness case compares against) served over the same HTTP contract, with tiny random weights: the pipeline path and the harness on a GPU, labelled smoke, never qualification of the checkpoint",
		Adapter:  qwenimage.DiffusersFromEnv(qwenimage.DiffusersSmoke(), os.Getenv),
		Fixtures: "fixtures/qwen_reference_smoke/manifest.json",
		Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
		// Under 1 GiB of GPU memory (the probe peaked at 0.43 GiB): any CUDA GPU will do.
		Needs:    harness.Needs{GPU: gpu.Needs{Count: 1}},
		Deadline: harness.Deadlines{Build: 5 * time.Minute, Correctness: 10 * time.Minute, Ready: 5 * time.Minute, Request: 2 * time.Minute, Native: 3 * time.Minute},
	},
)

// TestQwenReference qualifies the smoke row. It needs a CUDA GPU and QUALKIT_QWEN_PYTHON;
// a CPU host fails it in preflight, so `make test` leaves it out
// (-skip '^TestQwenReference$'). scripts/h200/run.sh runs it on the H200.
func TestQwenReference(t *testing.T) {
	for _, c := range qwenReferenceRows {
		t.Run(c.Name, func(t *testing.T) { suite.Qualify(t, c) })
	}
}
