// Package prsummary writes what a pull request shows about a run: PR.md (the checkpoint
// status table from the inventory, the result rows, and per row its stage strip, timing
// table, hardware, reproducible command, pictures and evidence links; the software,
// hardware and venv versions) and index.html, a static page for browsing the evidence
// folder from disk. A merged run (internal/merged) renders its pages from its shards'
// folders with the same sections (ReadFolder, MarkdownSection, Page).
//
// It reads a finished run folder and the inventory; it writes only PR.md and
// index.html. It must not import the harness (the harness calls it) and vouches for no
// number itself: the result rows are the rows' row.md lines verbatim and every other
// value is results.json's, run.json's or preflight.json's as written, which
// internal/evidencecheck proves against the raw records, and renders the pages again to
// compare. Both pages state their version; older versions still render, for the runs
// made before.
package prsummary
