// Command gpuread prints this host's GPU reading as indented JSON, the form
// the harness keeps as evidence. Without a usable NVIDIA driver it prints
// why to stderr and exits 1.
package main

import (
	"fmt"
	"io"
	"os"

	"qualkit/internal/harness/gpu"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gpuread: %v\n", err)
		os.Exit(1)
	}
}

func run(w io.Writer) error {
	r, err := gpu.Discover()
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
