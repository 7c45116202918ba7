// Command gpuread prints this host's GPU reading as indented JSON, the form the harness
// keeps as evidence. It is the one program that links NVML (cgo); the harness runs it
// (gpu.Read) so that the harness and the test binaries need no cgo. Without the NVIDIA
// driver it exits 3 (no libnvidia-ml.so.1) or 4 (driver not loaded), any other failure
// exits 1; the reason goes to stderr.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"qualkit/internal/gpu"
	"qualkit/internal/gpu/nvmlread"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gpuread: %v\n", err)
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	switch {
	case errors.Is(err, gpu.ErrNoDriver):
		return gpu.ExitNoDriver
	case errors.Is(err, gpu.ErrDriverNotLoaded):
		return gpu.ExitDriverNotLoaded
	}
	return 1
}

func run(w io.Writer) error {
	r, err := nvmlread.Discover()
	if err != nil {
		return err
	}
	b, err := r.JSON()
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write reading: %w", err)
	}
	return nil
}
