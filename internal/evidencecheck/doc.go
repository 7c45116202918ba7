// Package evidencecheck proves, or refutes, a run's evidence folder: the checksum list,
// the exact set of files each row must and may hold, and every claim that results.json,
// row.md, SUMMARY.md, run.json, PR.md and the JUnit properties make, each re-derived
// from the raw files (AIPerf's exports, the server's records, the PNGs, the correctness
// case's JUnit) rather than read back from the harness's own summaries.
//
// It owns the evidence contract as a reader: the file layout (Layout), the stage list
// (schema.Stages), the percentile method, and the derivation of the pictures' inputs from raw
// files. It must not import the harness, whose numbers it checks. Each file format is read
// once (internal/schema: AIPerf's records, command records) and each rule written once
// (internal/judge: pixel comparison, the content gates, what each family is held to),
// both the harness's and the checker's: the checker re-judges the raw files with the
// same judges and requires results.json to say what they say. A row loads once
// (newRowCheck parses the files the checks share and reports those that do not parse);
// then rowChecks, a table of checks that fill nothing in, run in any order. Every
// problem reads "<file>: <claim>: evidence says X, file says Y", with paths relative to
// the run folder.
package evidencecheck
