package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"qualkit/families/refedit/edit"
)

const buildSynopsis = "build -o FILE [--width W --height H] [--num-inference-steps N] [--guidance-scale G] [--seed S]"

// cmdBuild writes the bundle and prints "<sha256>  <path>" like sha256sum.
func cmdBuild(args []string, stdout, stderr io.Writer) error {
	d := edit.BuiltinDefaults()
	c := newCommand("build", buildSynopsis, stderr)
	fs := c.fs
	out := fs.String("o", "", "write the bundle to `FILE` (required)")
	fs.IntVar(&d.Width, "width", d.Width, "default output width; 0 with --height 0 keeps the input size")
	fs.IntVar(&d.Height, "height", d.Height, "default output height")
	fs.IntVar(&d.NumInferenceSteps, "num-inference-steps", d.NumInferenceSteps, "default blur passes")
	fs.Float64Var(&d.GuidanceScale, "guidance-scale", d.GuidanceScale, "default guidance blend strength, (0, 3]")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "default grain seed")
	positional, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return usagef("build", "takes no positional arguments, got %q; name the output with -o FILE", positional)
	}
	if *out == "" {
		return usagef("build", "-o FILE is required: where to write the bundle")
	}
	if (d.Width == 0) != (d.Height == 0) {
		return usagef("build", "--width and --height go together (got %dx%d); give both, or neither for the input size", d.Width, d.Height)
	}
	data, err := edit.Build(d).Encode()
	if err != nil {
		return usagef("build", "%v", err)
	}
	if err := writeFileAtomic(*out, data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s  %s\n", edit.SHA256(data), *out)
	return nil
}

// writeFileAtomic writes via a temporary file and a rename, so a reader never sees a
// half-written bundle or image under the final name.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
