package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testdata/aiperf-0.13.0 is what real AIPerf 0.13.0 wrote for 3 measured + 1 warmup
// image_edit requests against a stub server on loopback (16x16 PNGs, two prompts).
func TestReadExportOfRealAIPerf(t *testing.T) {
	ex, err := ReadExport("testdata/aiperf-0.13.0")
	require.NoError(t, err)
	require.Len(t, ex.Raw, 4)
	assert.Len(t, ex.Phase(schema.PhaseWarmup), 1)
	assert.Len(t, ex.Phase(schema.PhaseProfiling), 3)
	// 0.13.0 writes warmup records into profile_export.jsonl too: callers must filter.
	assert.Len(t, ex.Profile, 4)
	assert.Equal(t, schema.PhaseWarmup, ex.Profile[0].Metadata.BenchmarkPhase)

	w := ex.Raw[0]
	sent, err := wire.OpenAI{}.Decode(w.Payload)
	require.NoError(t, err)
	assert.Equal(t, "make it grayscale", sent.Prompt)
	assert.Equal(t, map[string]string{"size": "16x16", "seed": "42", "num_inference_steps": "3"}, sent.Settings)
	assert.Equal(t, []byte("\x89PNG\r\n\x1a\n"), sent.Image[:8])
	assert.False(t, w.Failed())
	png, err := wire.OpenAI{}.Output(w.Body(), "", nil)
	require.NoError(t, err)
	out, err := judge.DecodePNG(png)
	require.NoError(t, err)
	assert.Equal(t, "8x8", judge.ImageSize(out))

	lat, err := ex.Profile[1].RequestLatencyMs()
	require.NoError(t, err)
	assert.Greater(t, lat, 0.0)
}

func TestReadExportNeedsRawExport(t *testing.T) {
	_, err := ReadExport(t.TempDir())
	require.ErrorContains(t, err, "profile_export_raw.jsonl")
}

func TestAIPerfCommandIsPinned(t *testing.T) {
	a := AIPerf{Bin: "/v/bin/aiperf", HFHome: "/v/hf"}
	cmd := a.Command(AIPerfRun{URL: "http://127.0.0.1:9", Model: "m", Input: "in.jsonl",
		Endpoint: wire.OpenAI{}.AIPerfEndpoint(`{"seed":42,"size":"512x512"}`), Measured: 5, Warmup: 1, Seed: 0,
		ArtifactDir: "art", RequestTimeout: time.Minute})
	want := []string{"/v/bin/aiperf", "profile", "--endpoint-type", "image_edit", "--custom-dataset-type", "single_turn",
		"--extra-inputs", `{"seed":42,"size":"512x512"}`, "--prompt-corpus", "random", "--url", "http://127.0.0.1:9",
		"--model", "m", "--tokenizer", "qualkit/offline-word-tokenizer", "--input-file", "in.jsonl",
		"--dataset-sampling-strategy", "sequential", "--request-count", "5", "--warmup-request-count", "1", "--concurrency", "1", "--random-seed", "0",
		"--request-timeout-seconds", "60", "--artifact-dir", "art", "--export-level", "raw", "--ui", "none",
		"--no-server-metrics", "--no-gpu-telemetry"}
	assert.Equal(t, want, cmd.Args)
	// The tokenizer comes from the private cache, with the hub off: no prefetch, no network.
	assert.Subset(t, cmd.Env, []string{"HF_HOME=/v/hf", "HF_HUB_OFFLINE=1"})
	// AIPerf's own bounds on its services' start and silence are lifted: a loaded host
	// passes them. Each is one AIPerf reads, at the value the command's limit covers.
	assert.Subset(t, cmd.Env, aiperfBounds)
	for _, e := range aiperfBounds {
		name, v, _ := strings.Cut(e, "=")
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		if name == "AIPERF_SERVICE_HEARTBEAT_MISSED_THRESHOLD" {
			n *= 5 // AIPERF_SERVICE_HEARTBEAT_INTERVAL's default, left as is
		}
		assert.Equal(t, aiperfStartBound, time.Duration(n)*time.Second, name)
	}
}

func TestAIPerfVersionCheck(t *testing.T) {
	_, err := AIPerf{Bin: filepath.Join(t.TempDir(), "aiperf")}.CheckVersion(t.Context())
	require.ErrorContains(t, err, "run `make setup`")

	bin := writeTemp(t, "aiperf", "#!/bin/sh\necho 0.12.1\n")
	require.NoError(t, chmodX(bin))
	got, err := AIPerf{Bin: bin}.CheckVersion(t.Context())
	assert.Equal(t, "0.12.1", got)
	require.ErrorContains(t, err, `version "0.12.1", the pin is 0.13.0`)

	// One that never answers is stopped at the bound, and the error says so, not "killed".
	defer func(w time.Duration) { versionWait = w }(versionWait)
	versionWait = 200 * time.Millisecond
	hung := writeTemp(t, "aiperf", "#!/bin/sh\nexec sleep 60\n")
	require.NoError(t, chmodX(hung))
	_, err = AIPerf{Bin: hung}.CheckVersion(t.Context())
	require.ErrorContains(t, err, "aiperf --version: did not exit in 200ms (hung, or a host too loaded to start Python), stopped")
}

// AIPerf's sockets live in its temp folder: a long TMPDIR would make their paths longer
// than a Unix socket allows, so AIPerf's folder goes to /tmp then.
func TestAIPerfTempBaseLeavesRoomForItsSockets(t *testing.T) {
	t.Setenv("TMPDIR", "/tmp/short")
	assert.Equal(t, "/tmp/short", aiperfTempBase())
	long := "/tmp/TestStoppedRunsLeaveNothing-test.timeout_8s3424151917/002"
	t.Setenv("TMPDIR", long)
	assert.Equal(t, "/tmp", aiperfTempBase())
	// The longest socket path AIPerf 0.13.0 makes in a folder from the longest base kept.
	sock := filepath.Join(strings.Repeat("x", 32), "aiperf-1234567890", "tmpabcdefgh", "aiperf", "dataset_manager_proxy_frontend.ipc")
	assert.LessOrEqual(t, len(sock), 107, sock)
}

// AIPerf ignores an environment variable it does not know: each bound is one its
// settings read, at the value set (the project's venv, as `make setup` made it).
func TestAIPerfReadsItsBounds(t *testing.T) {
	root, err := FindRoot(".")
	require.NoError(t, err)
	var names, want []string
	for _, e := range aiperfBounds {
		setting := strings.TrimPrefix(e, "AIPERF_SERVICE_")
		name, _, _ := strings.Cut(setting, "=")
		names, want = append(names, name), append(want, setting)
	}
	script := `import sys
from aiperf.common.environment import Environment
print(" ".join(f"{n}={getattr(Environment.SERVICE, n):g}" for n in sys.argv[1:]))`
	cmd := exec.Command(filepath.Join(root, ".venv", "bin", "python"), append([]string{"-B", "-c", script}, names...)...)
	cmd.Env = append(os.Environ(), aiperfBounds...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make setup makes .venv: %s", out)
	assert.Equal(t, strings.Join(want, " "), strings.TrimSpace(string(out)))
}
