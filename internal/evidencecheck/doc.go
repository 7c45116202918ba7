// Package evidencecheck proves, or refutes, a run's evidence folder: the checksum list,
// the exact set of files each row must and may hold, and every claim that results.json,
// row.md, SUMMARY.md, run.json, PR.md and the JUnit properties make, each re-derived
// from the raw files (AIPerf's exports, the server's records, the PNGs, the correctness
// case's JUnit) rather than read back from the harness's own summaries.
//
// It owns the evidence contract as a reader: the file layout (Layout), the stage list
// (schema.Stages), the percentile method, and the derivation of the pictures' inputs from raw
// files. It must not import the harness, whose numbers it checks: it has its own parsers,
// so a bug in the harness's arithmetic cannot vouch for itself. Every problem reads
// "<file>: <claim>: evidence says X, file says Y", with paths relative to the run folder.
package evidencecheck
