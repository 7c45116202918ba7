// Package harness is the family-agnostic machinery that qualifies one checkpoint row:
// its stages (pipeline.go), each a subtest, all of it written to an evidence folder.
// Everything family-specific reaches it through family.Family.
package harness
