package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrNoDriver means NVML could not be loaded: go-nvml dlopens libnvidia-ml.so.1, which
// the driver installs.
var ErrNoDriver = errors.New("libnvidia-ml.so.1 not found: no NVIDIA driver on this host; " +
	"GPU discovery needs the NVIDIA driver installed on the host " +
	"(inside a container, the NVIDIA Container Toolkit must mount libnvidia-ml.so.1)")

// ErrDriverNotLoaded means libnvidia-ml.so.1 is present but the kernel driver is not running.
var ErrDriverNotLoaded = errors.New("libnvidia-ml.so.1 loaded but the NVIDIA kernel driver is not running on this host; " +
	"GPU discovery needs the nvidia kernel module loaded (nvidia-smi must work)")

// Exit codes of the gpuread program beside 0 (a reading on stdout) and 1 (any other
// failure, explained on stderr).
const (
	ExitNoDriver        = 3 // ErrNoDriver
	ExitDriverNotLoaded = 4 // ErrDriverNotLoaded
)

// readTimeout bounds one reading: NVML answers in well under a second.
const readTimeout = time.Minute

// Read runs the gpuread program and returns its reading. Without the NVIDIA driver the
// error matches ErrNoDriver or ErrDriverNotLoaded (errors.Is), as NVML's own would.
func Read(ctx context.Context, program string) (Reading, error) {
	if program == "" {
		return Reading{}, errors.New("discover GPUs: no gpuread program given")
	}
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, program)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stderr.String()), "gpuread: "))
	var ee *exec.ExitError
	switch {
	case err == nil:
		r, err := ParseReading(stdout.Bytes())
		if err != nil {
			return Reading{}, fmt.Errorf("discover GPUs: %s printed %w", program, err)
		}
		return r, nil
	case errors.As(err, &ee) && ee.ExitCode() == ExitNoDriver:
		return Reading{}, fmt.Errorf("discover GPUs: %w", ErrNoDriver)
	case errors.As(err, &ee) && ee.ExitCode() == ExitDriverNotLoaded:
		return Reading{}, fmt.Errorf("discover GPUs: %w", ErrDriverNotLoaded)
	case msg != "":
		return Reading{}, fmt.Errorf("discover GPUs: %s: %s", program, msg)
	default:
		return Reading{}, fmt.Errorf("discover GPUs: %s: %w", program, err)
	}
}
