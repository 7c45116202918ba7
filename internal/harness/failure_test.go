package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// Each detector on the tools' own words: the lines are as PyTorch, TensorRT, the NVIDIA
// driver, Docker and the Go and Docker clients print them.
func TestClassifyByTheLogsOwnWords(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		stage, line, kind string
	}{
		{"correctness", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB of which 3.06 MiB is free. Process 1234 has 79.18 GiB memory in use.", schema.KindHardware},
		{"serve", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at some other API call, cudaErrorMemoryAllocation", schema.KindHardware},
		{"build", "[12/03/2026-15:05:53] [TRT] [E] 1: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)", schema.KindHardware},
		{"build", "[TRT] [E] Requested amount of GPU memory (1073741824 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.", schema.KindHardware},
		{"identity", `"State": {"Status": "exited", "OOMKilled": true, "ExitCode": 137}`, schema.KindHardware},
		{"benchmark", "the server container exited with code 143 (oom_killed=false) while the row ran", schema.KindGate},
		{"benchmark", "the server container exited with code 137 (oom_killed=true) while the row ran", schema.KindGate}, // qualkit's own words name no kind: its errors are typed
		{"benchmark", "the Docker engine was unreachable 2.1 s after the server was ready (restarted or stopped: its containers stop with it): Cannot connect to the Docker daemon at unix:///tmp/qk/docker.sock. Is the docker daemon running?", schema.KindInfrastructure},
		{"benchmark", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.", schema.KindHardware},
		{"correctness", "terminate called after throwing an instance of 'std::bad_alloc'", schema.KindHardware},
		{"benchmark", "write /work/evidence/x/aiperf/artifacts/profile_export_raw.jsonl: no space left on device", schema.KindInfrastructure},
		{"serve", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?", schema.KindInfrastructure},
		{"serve", "error during connect: Get \"http://%2Fvar%2Frun%2Fdocker.sock/v1.45/containers/json\": EOF", schema.KindInfrastructure},
		{"benchmark", "aiperf exited -1: signal: killed; log /work/evidence/r/aiperf/aiperf.log:", schema.KindInfrastructure},
		{"correctness", "1 failed, 36 passed in 2.21s", schema.KindCorrectness},
		{"identity", "request 03: native and HTTP PNGs differ in 412 pixels", schema.KindGate},
	} {
		kind, why := Classify(bg, tc.stage, errors.New(tc.line))
		assert.Equal(t, tc.kind, kind, "%s: %s (%s)", tc.stage, tc.line, why)
		assert.NotEmpty(t, why)
	}
}

// What the serving layer knows first-hand comes typed (serving.Failure): its kind holds
// however the message is worded, through %w wraps and joined errors.
func TestClassifyTypedFailures(t *testing.T) {
	bg := context.Background()
	for _, f := range []*serving.Failure{
		{Kind: schema.KindHardware, What: "the container was OOM-killed", Err: errors.New("exited 137, reworded")},
		{Kind: schema.KindInfrastructure, What: "the Docker engine is gone", Err: errors.New("no engine, reworded")},
		{Kind: schema.KindInfrastructure, What: "the server was stopped from outside the run", Err: errors.New("stopped, reworded")},
	} {
		for _, err := range []error{f, fmt.Errorf("start server (container): %w", f), fmt.Errorf("%w\n%w", f, errors.New("aiperf exited 1"))} {
			kind, why := Classify(bg, "benchmark", err)
			assert.Equal(t, f.Kind, kind, "%v", err)
			assert.Equal(t, f.What, why)
		}
	}
}

// What stopped the row's context comes first: a signal, go test's -timeout, a deadline.
func TestClassifyByTheContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupted{Signal: "SIGINT"})
	kind, why := Classify(ctx, "benchmark", fmt.Errorf("aiperf exited -1: %w", context.Canceled))
	assert.Equal(t, schema.KindInterrupted, kind)
	assert.Equal(t, "SIGINT", why)

	ctx, cancel2 := context.WithDeadlineCause(context.Background(), time.Now().Add(-time.Second), errTestDeadline)
	defer cancel2()
	kind, _ = Classify(ctx, "serve", errors.New("CUDA out of memory"))
	assert.Equal(t, schema.KindTimeout, kind, "the deadline is what stopped it, whatever the log says after")

	kind, why = Classify(context.Background(), "correctness", fmt.Errorf("pytest exited -1: %w (signal: killed)", context.DeadlineExceeded))
	assert.Equal(t, schema.KindTimeout, kind)
	assert.Equal(t, "the stage's deadline", why)
}
