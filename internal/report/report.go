// Package report derives what a reviewer reads from a run's evidence, and checks the
// run: it is the harness.Reporter the qualification tests give their suite. Per row it
// draws the contact sheet and the latency chart from the raw files; per run it writes
// the PR summary (PR.md, index.html) and checks the folder with the evidence checker.
//
// It sits outside the harness on purpose: the harness writes evidence and must not
// import the checker that audits it.
package report

import (
	"context"
	"errors"
	"fmt"
	"os"

	"qualkit/internal/attest"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
	"qualkit/internal/inventory"
	"qualkit/internal/prsummary"
)

// Evidence is the Reporter of a qualification run.
type Evidence struct {
	// Root is the repository root: the PR summary reads its inventory.json.
	Root string
	// TRTMC, when set, is a TRTMC checkout the PR summary inventories instead.
	TRTMC string
	// Rows are the qual tables' rows (the table registry), for the PR summary's status.
	Rows []inventory.QualRow
	// Key, when set, is the PEM key (public, or the signing key itself) whose signature
	// a run must carry to vouch for a bundle another run reuses.
	Key []byte
}

var _ harness.Reporter = Evidence{}

// Row draws the row's pictures; a row that never reached the benchmark has none.
func (e Evidence) Row(rowDir string) error {
	err := evidencecheck.WritePictures(rowDir)
	if errors.Is(err, evidencecheck.ErrNoRawExport) {
		return nil
	}
	return err
}

// Run writes checkpoints.json, PR.md and index.html.
func (e Evidence) Run(runDir string) error {
	return prsummary.Write(runDir, prsummary.Options{Root: e.Root, TRTMC: e.TRTMC, Rows: e.Rows, HTML: true})
}

// Check verifies the run folder from its raw files.
func (e Evidence) Check(runDir string) error {
	return evidencecheck.Check(runDir, "")
}

// JUnitBeside is where make qual and make shard keep a run's JUnit file: beside its
// folder, <run folder>.junit.xml.
func JUnitBeside(runDir string) string { return runDir + ".junit.xml" }

// Vouch verifies a run that vouches for a bundle another run reuses: whole, with its
// JUnit file anchoring its checksum list, and signed by Key. A planter can rewrite the
// folder and the JUnit beside it; only the signature anchors, so with no Key no run
// vouches (the bundle is built again).
func (e Evidence) Vouch(runDir string) error {
	if e.Key == nil {
		return fmt.Errorf("no signing key is configured (%s), and without a signature nothing on this machine anchors the run against a planter who rewrites it and the JUnit beside it", attest.KeyEnv)
	}
	junit := JUnitBeside(runDir)
	if _, err := os.Stat(junit); err != nil {
		return fmt.Errorf("its JUnit file, which anchors it, is not beside it (%s; make qual and make shard keep it there): %w", junit, err)
	}
	rep := evidencecheck.VerifyWith(runDir, evidencecheck.Options{JUnit: junit, RequireRunAnchor: true})
	rep.VerifySignatures(context.Background(), e.Key, junit, false)
	return rep.Err()
}
