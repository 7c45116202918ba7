package harness

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// Interrupted is the cause a Suite's context carries once a signal stopped the run.
type Interrupted struct {
	Signal string // "SIGINT", "SIGTERM"
}

func (i Interrupted) Error() string { return "interrupted by " + i.Signal }

// errTestDeadline is the cause of a row context cut near go test's -timeout.
var errTestDeadline = errors.New("go test -timeout is near: the row was stopped to clean up and write its evidence")

// logSign is a log line that says what kind of failure a stage met.
type logSign struct {
	kind string
	re   *regexp.Regexp
	what string
}

// logSigns are the tools' own words (each has a real line in failure_test.go); what
// qualkit knows first-hand comes typed (serving.Failure).
var logSigns = []logSign{
	{schema.KindHardware, regexp.MustCompile(`CUDA out of memory|torch\.(cuda\.)?OutOfMemoryError`), "CUDA out of memory (PyTorch)"},
	{schema.KindHardware, regexp.MustCompile(`cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY`), "CUDA allocation failed"},
	{schema.KindHardware, regexp.MustCompile(`\[TRT\].*(Cuda Runtime \(out of memory\)|could not be allocated|OutOfMemory)`), "TensorRT out of memory"},
	{schema.KindHardware, regexp.MustCompile(`"OOMKilled":\s*true|OOMKilled`), "the container was OOM-killed"},
	{schema.KindHardware, regexp.MustCompile(`NVRM: Xid|Xid \(PCI:`), "a GPU Xid error"},
	{schema.KindHardware, regexp.MustCompile(`GPU has fallen off the bus|GPU is lost|cudaErrorDevicesUnavailable`), "the GPU was lost"},
	{schema.KindHardware, regexp.MustCompile(`std::bad_alloc|\bMemoryError\b|Cannot allocate memory`), "host out of memory"},
	{schema.KindInfrastructure, regexp.MustCompile(`(?i)no space left on device`), "the disk is full"},
	{schema.KindInfrastructure, regexp.MustCompile(`Cannot connect to the Docker daemon|docker\.sock: connect|Is the docker daemon running|error during connect`), "the Docker engine is gone"},
	{schema.KindInfrastructure, regexp.MustCompile(`(?i)read-only file system`), "a read-only file system"},
	// SIGKILL from outside the run (its own cancellations are classified by the context
	// first): an operator, or the kernel's OOM killer (dmesg says which).
	{schema.KindInfrastructure, regexp.MustCompile(`signal: killed`), "a process was killed from outside the run (an operator, or the kernel's OOM killer: see dmesg)"},
}

// Classify names why a stage failed, as a kind and a short reason: a signal or deadline
// of the row's context, else the first sign in the error's text (with its command's log
// tail), else correctness for the correctness stage and gate for the others.
func Classify(ctx context.Context, stage string, err error) (kind, why string) {
	var intr Interrupted
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &intr):
		return schema.KindInterrupted, intr.Signal
	case errors.Is(cause, errTestDeadline):
		return schema.KindTimeout, "go test -timeout"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return schema.KindTimeout, "the stage's deadline"
	}
	var f *serving.Failure
	if errors.As(err, &f) {
		return f.Kind, f.What
	}
	text := err.Error()
	for _, s := range logSigns {
		if s.re.MatchString(text) {
			return s.kind, s.what
		}
	}
	if stage == schema.StageCorrectness {
		return schema.KindCorrectness, "the family's correctness case"
	}
	return schema.KindGate, fmt.Sprintf("a gate of stage %s", stage)
}
