// Package harness is the family-agnostic machinery that qualifies one checkpoint row:
// preflight, build, correctness, serve, benchmark (AIPerf), reference influence,
// native-vs-HTTP identity and report, each a subtest, all of it written to an
// evidence folder.
//
// It owns process and command execution, the evidence layout, fixtures loading,
// AIPerf invocation and parsing, PNG checks, statistics and reports. It must not know
// about any model family: everything family-specific (argv of build, serve, native
// task and correctness case; where server timing lives) reaches it through Family.
package harness
