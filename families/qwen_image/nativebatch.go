package qwenimage

import (
	"bytes"
	"os"
	"path/filepath"

	"qualkit/families/qwen_image/batch"
	"qualkit/internal/family"
)

// workerSource is where the newer layout keeps the persistent worker's source
// (TRTMC-SERVING.md section 4: apps/benchmark/native/benchmark_worker.cpp, which has
// --serve at ca938e40 and not at d4a4aa37 or 08b8f334).
const workerSource = "apps/benchmark/native/benchmark_worker.cpp"

// WorkerServes says whether the checkout's persistent worker has the --serve mode:
// its source names the flag. TRTMC main e9132e79 has no such worker at all.
func WorkerServes(checkout string) bool {
	b, err := os.ReadFile(filepath.Join(checkout, workerSource))
	return err == nil && bytes.Contains(b, []byte(`"--serve"`))
}

// nativeBatch runs every identity replay through one `trtmc_benchmark_worker --serve`,
// driven by qualkit's trtmc-batch (cmd/trtmcbatch), built into the row's work folder.
func (a TRTMC) nativeBatch(env family.Env, spec family.NativeBatchSpec) (family.Command, error) {
	n, err := a.native(env)
	if err != nil {
		return family.Command{}, err
	}
	driver := filepath.Join(env.Work, "bin", "trtmc-batch")
	if err := batch.Build(env.Root, driver); err != nil {
		return family.Command{}, err
	}
	return family.Command{Args: []string{driver, "--worker", filepath.Join(n.dir, "trtmc_benchmark_worker"),
		"--bundle", spec.Bundle, "--runtime-root", n.dir, "--items", spec.Items, "--report", spec.Report,
		"--checkpoint", SnapshotDir(a.Config.HFHome)}, Env: a.env(env), Dir: a.Config.Checkout}, nil

}
