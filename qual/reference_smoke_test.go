package qual

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/harness"
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
		// ResidentBytes bounds it: the native batch preloads beside the server when the
		// GPU has 2 GiB free. The correctness case runs the same tiny pipeline (its own
		// peak not measured apart): 1 GiB bounds it too, so the server loads beside the
		// case when the GPU has 2 GiB free.
		Needs:    harness.Needs{GPU: gpu.Needs{Count: 1}, ResidentBytes: 1 << 30, CaseResidentBytes: 1 << 30},
		Deadline: family.Deadlines{Build: 5 * time.Minute, Correctness: 10 * time.Minute, Ready: 5 * time.Minute, Request: 2 * time.Minute, Native: 3 * time.Minute},
	},
)

// qwenReferencePoolRows are the smoke row twice, under two names, one GPU each: on a
// host with two GPUs or more they run side by side through the run's GPU pool, each on a
// GPU of its own; on one GPU the second waits for the first (issue 17's run:
// `RUN_TESTS='^(TestReferenceSmoke|TestReferenceSmokePool)$' bash scripts/h200/run.sh`
// gives the pair's wall against one row alone on the same host).
var qwenReferencePoolRows = harness.NewTable(poolRow("reference-smoke-a"), poolRow("reference-smoke-b"))

func poolRow(name string) harness.Checkpoint {
	c := qwenReferenceRows[0]
	c.Name = name
	c.Reason = "the smoke row again, to run two rows through the GPU pool: " + c.Reason
	return c
}

// TestReferenceSmokePreflightOnThisHost runs only the smoke row's preflight: on a host
// without a GPU it must fail with the GPU it needs and how to get one, and every missing
// piece must carry a fix.
func TestReferenceSmokePreflightOnThisHost(t *testing.T) {
	require.Len(t, qwenReferenceRows, 1)
	row := qwenReferenceRows[0]
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	env := family.Env{Root: root, Work: t.TempDir(), Python: filepath.Join(root, ".venv", "bin", "python")}
	rd := suite.Preflight(t.Context(), row, env)
	for _, q := range rd.Requirements {
		assert.NotEmpty(t, q.Fix, "requirement %q has no fix", q.What)
	}
	if rd.GPUError == "" {
		t.Logf("this host has a GPU (%d device(s)); requirements: %v", len(rd.GPU.Devices), rd.Requirements)
		return
	}
	err = harness.Missing(rd.Requirements)
	require.Error(t, err, "a host without a GPU cannot run the GPU smoke row")
	assert.Contains(t, err.Error(), "the row needs 1 GPU")
	assert.Contains(t, err.Error(), "run on a host with NVIDIA GPUs and the NVIDIA driver")
	t.Logf("preflight of %s on this host:\n%s", row.Name, err)
}
