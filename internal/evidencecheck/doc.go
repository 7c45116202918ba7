// Package evidencecheck proves, or refutes, a run's evidence folder: checksums, the exact
// file set, and every claim re-derived from the raw files, never the harness's summaries.
//
// It owns the evidence contract as a reader and must not import the harness, whose
// numbers it checks. Each rule is written once (internal/judge), for both. A row loads
// once (newRowCheck); then rowChecks run in any order. Every problem reads
// "<file>: <claim>: evidence says X, file says Y", relative to the run folder.
package evidencecheck
