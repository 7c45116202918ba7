// Command trtmc-batch runs the identity stage's native replays through TRTMC's
// persistent worker, `trtmc_benchmark_worker --serve SESSION.json` (JSON lines on stdin
// and stdout; apps/benchmark/native/benchmark_worker.cpp in TRTMC's newer layout): one
// load, then each replay as one request line, through the same dispatch and timing as a
// one-shot call. It writes the harness's batch report (schema.NativeBatchFile).
//
//	trtmc-batch --worker W --bundle B --runtime-root R --items ITEMS.jsonl --report REPORT.jsonl
//
// It is qualkit's, built static (CGO_ENABLED=0) so that it runs in any image; the
// harness mounts it where TRTMC's image runs the row.
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
