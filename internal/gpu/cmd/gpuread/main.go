// Command gpuread prints this host's GPU reading as JSON. It is the one program that
// links NVML (cgo), run by gpu.Read so that nothing else needs cgo. Without the driver
// it exits gpu.ExitNoDriver or gpu.ExitDriverNotLoaded, on any other failure 1.
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
