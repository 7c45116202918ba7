// Command checkevidence proves, or refutes, one run's evidence folder: the checksum
// list, every row's file set, and every number and status results.json, row.md,
// SUMMARY.md and (with -junit) the JUnit properties claim, re-derived from the raw files.
//
//	go run ./scripts/checkevidence -dir evidence/latest [-junit FILE] [-sums SHA256]
//	go run ./scripts/checkevidence -dir evidence/<run id> -pubkey ci.pub.pem -strict
//	go run ./scripts/checkevidence -dir docs/evidence/runs.tar.zst -run h200-orders/serial/20261205T180948Z-2707
//
// A run in an archive (internal/runarchive) is unpacked into a temporary folder and
// checked there. Inside a clone the run is held to the harness commit it names
// (internal/evidencerepo); outside one it says "commit not verifiable" (a problem with
// -strict). Problems print as "<file>: <claim>: evidence says X, file says Y"; exit 1
// when there is any, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	_ "qualkit/families/all" // the families' evidence rules
	"qualkit/internal/evidencecheck"
	"qualkit/internal/evidencerepo"
	"qualkit/internal/runarchive"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("checkevidence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "run folder to check: evidence/<run id> (evidence/latest works)")
	junit := fs.String("junit", "", "the run's JUnit file (gotestsum --junitfile) whose qualkit.* properties to check; optional")
	sums := fs.String("sums", "", "the sha256 of the run's SHA256SUMS as the test log printed it; optional")
	pubkey := fs.String("pubkey", "", "PEM public key of the signer: verify the run's attestation.dsse.json with it")
	strict := fs.Bool("strict", false, "fail an unsigned run, or one whose signature was not verified with -pubkey")
	inArchive := fs.String("run", "", "with -dir ARCHIVE"+runarchive.Ext+": the run folder inside it to check (list them: go run ./scripts/runarchive list)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var pub []byte
	if *pubkey != "" {
		var err error
		if pub, err = os.ReadFile(*pubkey); err != nil {
			fmt.Fprintln(stderr, "checkevidence: -pubkey:", err)
			return 2
		}
	}
	if *dir == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "checkevidence: -dir DIR is required (make check-evidence DIR=evidence/latest)")
		fs.Usage()
		return 2
	}
	if strings.HasSuffix(*dir, runarchive.Ext) {
		if *inArchive == "" || !filepath.IsLocal(*inArchive) {
			fmt.Fprintf(stderr, "checkevidence: %s is an archive of runs: name the run inside it with -run (go run ./scripts/runarchive list -archive %s)\n", *dir, *dir)
			return 2
		}
		tmp, err := os.MkdirTemp("", "qualkit-check-")
		if err != nil {
			fmt.Fprintln(stderr, "checkevidence:", err)
			return 1
		}
		defer os.RemoveAll(tmp)
		if err := runarchive.Extract(*dir, filepath.Join(tmp, "runs"), *inArchive); err != nil {
			fmt.Fprintln(stderr, "checkevidence:", err)
			return 1
		}
		run := filepath.Join(tmp, "runs", filepath.FromSlash(*inArchive))
		if _, err := os.Stat(run); err != nil {
			fmt.Fprintf(stderr, "checkevidence: %s holds no run %s\n", *dir, *inArchive)
			return 2
		}
		fmt.Fprintf(stdout, "checkevidence: %s from %s, unpacked into %s\n", *inArchive, *dir, run)
		*dir = run
	} else if *inArchive != "" {
		fmt.Fprintln(stderr, "checkevidence: -run names a run inside an archive: give -dir ARCHIVE"+runarchive.Ext)
		return 2
	}
	if resolved, err := filepath.EvalSymlinks(*dir); err == nil {
		*dir = resolved
	}
	switch found := evidencecheck.FindRuns(*dir); {
	case len(found) == 1 && found[0] != *dir:
		fmt.Fprintf(stdout, "checkevidence: %s holds one run, %s: checking it\n", *dir, filepath.Base(found[0]))
		*dir = found[0]
	case len(found) > 1:
		fmt.Fprintf(stderr, "checkevidence: %s holds %d runs; check one of them:\n", *dir, len(found))
		for _, f := range found {
			fmt.Fprintf(stderr, "  make check-evidence DIR=%s\n", f)
		}
		return 2
	}
	opts := evidencecheck.Options{JUnit: *junit, Strict: *strict}
	if g, err := evidencerepo.Open("."); err == nil {
		opts.Repo = g
	}
	var rep *evidencecheck.Report
	if evidencecheck.IsMerged(*dir) {
		if *junit != "" {
			fmt.Fprintln(stderr, "checkevidence: a merged run keeps each shard's JUnit and its own junit.xml: give no -junit")
			return 2
		}
		rep = evidencecheck.VerifyMergedWith(*dir, opts)
	} else {
		rep = evidencecheck.VerifyWith(*dir, opts)
	}
	if *sums != "" {
		rep.Anchor(*sums)
	}
	rep.VerifySignatures(context.Background(), pub, *junit, *strict)
	for _, line := range rep.SignatureSummary() {
		fmt.Fprintln(stdout, "checkevidence:", line)
	}
	for _, line := range rep.Notes {
		fmt.Fprintln(stdout, "checkevidence: not verified:", line)
	}
	var e *evidencecheck.Error
	if err := rep.Err(); errors.As(err, &e) {
		for _, p := range e.Problems {
			fmt.Fprintln(stdout, p)
		}
		fmt.Fprintf(stderr, "checkevidence: %s: FAILED: %d problem(s) (%d files checksummed, %d claims compared)\n", *dir, len(e.Problems), rep.Files, rep.Claims)
		return 1
	}
	fmt.Fprintln(stdout, rep.OK(*dir))
	return 0
}
