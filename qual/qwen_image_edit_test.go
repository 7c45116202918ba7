package qual

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/family"
	"qualkit/internal/gpu"
	"qualkit/internal/harness"
	"qualkit/internal/serving"
)

// qwenImageEditRows is the image-edit group's one full checkpoint, served by TRTMC. Its
// adapter is configured from QUALKIT_TRTMC_* and the HF cache variables
// (families/qwen_image/README.md); a host without them fails in preflight, listing each.
var qwenImageEditRows = harness.NewTable(
	harness.Checkpoint{
		Name:     "qwen-image-edit-2511",
		Family:   "qwen_image",
		Model:    qwenimage.HFID,
		Profile:  "qwen-image-edit-2511",
		Revision: qwenimage.Revision,
		Reason:   "the one full image-edit checkpoint of TRTMC's qwen_image family (testcase qwen-image-edit-2511; task_mode edit at e9132e79, task image_edit in the families layout), served by trtmc-server",
		Adapter:  qwenimage.FromEnv(os.Getenv),
		Fixtures: "fixtures/qwen_image_edit/manifest.json",
		Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
		Needs: harness.Needs{
			GPU: gpu.Needs{
				Count: 1,
				// ~57.7 GB (53.7 GiB) of BF16 weights (20B DiT + Qwen2.5-VL-7B text encoder) stay
				// resident, plus 1024x1024 activations: an 80 GB-class GPU. The gate is 75 GiB,
				// not 80, because an H100 80GB reports 81559 MiB (79.6 GiB) of total memory.
				MinMemoryBytes: 75 << 30,
				// BF16 tensor cores start with Ampere (sm_80); the 80 GB-class parts are
				// A100 (8.0), H100/H200 (9.0) and Blackwell (10.0).
				MinComputeCapability: "8.0",
			},
			Container: true, // every stage runs in TRTMC's dev image (TensorRT, CUDA 13 stack)
		},
		Deadline: family.Deadlines{Build: 2 * time.Hour, Correctness: time.Hour, Ready: 30 * time.Minute, Request: 10 * time.Minute, Native: 10 * time.Minute},
	},
)

// TestTRTMCRowPreflightOnThisHost runs only the row's preflight and checks that a host
// without the row's pieces gets one message naming every missing piece with its fix. The
// family's pieces are judged on an empty configuration (no QUALKIT_* variables, an empty
// home), so the test means the same wherever it runs; the GPU and the Docker daemon are
// this host's.
func TestTRTMCRowPreflightOnThisHost(t *testing.T) {
	require.Len(t, qwenImageEditRows, 1)
	row := qwenImageEditRows[0]
	home := t.TempDir()
	row.Adapter = qwenimage.FromEnv(func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	})
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	env := family.Env{Root: root, Work: t.TempDir(), Python: filepath.Join(root, ".venv", "bin", "python")}

	rd := suite.Preflight(t.Context(), row, env)
	err = harness.Missing(rd.Requirements)
	require.Error(t, err, "an unconfigured host cannot have every piece of the Qwen row")
	t.Logf("preflight of %s on this host:\n%s", row.Name, err)

	for _, q := range rd.Requirements {
		assert.NotEmpty(t, q.What)
		assert.NotEmpty(t, q.Fix, "requirement %q has no fix", q.What)
	}
	msg := err.Error()
	for piece, want := range map[string]string{
		"TRTMC checkout":   "TRTMC checkout: QUALKIT_TRTMC_DIR is not set",
		"image":            "image: QUALKIT_TRTMC_IMAGE is not set",
		"checkpoint":       "checkpoint Qwen/Qwen-Image-Edit-2511 at revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9 is not in the Hugging Face cache",
		"download command": "hf download Qwen/Qwen-Image-Edit-2511 --revision 6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9",
		"clone command":    "git clone https://github.com/NVIDIA/TensorRT-Model-Connect.git",
	} {
		assert.Contains(t, msg, want, "the message must name the %s", piece)
	}
	switch daemon, derr := serving.Docker(t.Context()); {
	case *runtimeFlag == harness.RuntimeProcess:
		assert.Contains(t, msg, "can only be served from a container, and the run asked for RUNTIME=process")
	case derr != nil:
		assert.Contains(t, msg, "is served from a container, and no Docker daemon answers", "no daemon here: the message must say so")
	case !daemon.NvidiaRuntime:
		assert.Contains(t, msg, "has no nvidia runtime", "the daemon here has no NVIDIA runtime: the message must say so")
		assert.Contains(t, msg, "install the NVIDIA Container Toolkit")
	}
	if rd.GPUError != "" {
		assert.Contains(t, msg, "the row needs 1 GPU with memory total >= 75.0 GiB", "GPU discovery failed here (%s): the message must say what GPU the row needs", rd.GPUError)
		assert.Contains(t, msg, "run on a host with NVIDIA GPUs and the NVIDIA driver")
	} else if len(rd.Selected) == 0 {
		assert.Contains(t, msg, "select GPUs: need 1 GPU", "no GPU of this host matches: the message must say so")
	}
	for _, q := range rd.Requirements {
		if strings.Contains(q.What, "QUALKIT_TRTMC_DIR is not set") || strings.Contains(q.What, "GPU") {
			assert.True(t, q.Absent, "%q is a host piece: only those may be skipped in a non-qualification run", q.What)
		}
	}
}
