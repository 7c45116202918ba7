// Command trtmc-batch runs the identity stage's native replays through one TRTMC
// `trtmc_benchmark_worker --serve` (apps/benchmark/native/benchmark_worker.cpp) and
// writes the harness's batch report. Built static, it runs in any image.

package main

import (
	"flag"
	"fmt"
	"os"

	"qualkit/families/qwen_image/batch"
)

func main() {
	var o batch.Options
	flag.StringVar(&o.Worker, "worker", "", "trtmc_benchmark_worker")
	flag.StringVar(&o.Bundle, "bundle", "", "the bundle")
	flag.StringVar(&o.RuntimeRoot, "runtime-root", "", "the native runtime's build folder")
	flag.StringVar(&o.Items, "items", "", "ITEMS.jsonl: one replay per line")
	flag.StringVar(&o.Report, "report", "", "REPORT.jsonl to write")
	flag.StringVar(&o.Checkpoint, "checkpoint", "", "the checkpoint's snapshot folder (latent replay reads its configs)")
	flag.Parse()
	if err := batch.Run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "trtmc-batch:", err)
		os.Exit(1)
	}
}
