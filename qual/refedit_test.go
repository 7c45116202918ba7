package qual

import (
	"time"

	"qualkit/families/refedit"
	"qualkit/internal/family"
	"qualkit/internal/harness"
)

// refeditRows is the reference family: qualkit's own deterministic editor, the embedded
// default that `make qual` qualifies on any machine.
var refeditRows = harness.NewTable(
	harness.Checkpoint{
		Name:     "refedit-v1",
		Family:   "refedit",
		Model:    "qualkit/refedit-v1",
		Profile:  "refedit-v1",
		Reason:   "reference family: every stage runs for real on any host, CI included",
		Adapter:  refedit.Default,
		Fixtures: "fixtures/image_edit/manifest.json",
		Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
		// The editor's resident memory is a few MiB (refedit serve's VmRSS); 64 MiB bounds
		// it. Its correctness case (pytest, NumPy, Pillow, the editor) peaked at 97 MiB
		// (getrusage RUSAGE_CHILDREN max RSS, 2026-12-04); 128 MiB bounds it. So the server
		// loads beside the case with 192 MiB free, the native batch beside the server with 128.
		Needs:    harness.Needs{ResidentBytes: 64 << 20, CaseResidentBytes: 128 << 20},
		Deadline: family.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: time.Minute, Request: time.Minute, Native: time.Minute},
	},
)
