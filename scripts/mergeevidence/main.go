// Command mergeevidence merges the run folders of CI shards (what `make shard` writes to
// evidence/shards/<name>/) into one merged run (internal/merged), after checking each
// shard whole with its JUnit and that the shards cover the matrix exactly once from one
// commit. A missing, duplicated or foreign shard is an error; nothing is written then.
//
//	go run ./scripts/mergeevidence -matrix matrix.json -out evidence/merged shards/shard-a shards/shard-b
//
// Each shard must be signed and verify with -pubkey; -unsigned merges unsigned shards,
// and merged.json and PR.md name them.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	_ "qualkit/families/all" // the families' evidence rules
	"qualkit/internal/attest"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/merged"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mergeevidence", flag.ContinueOnError)
	fs.SetOutput(stderr)
	matrix := fs.String("matrix", "", "the matrix the shards ran (go run ./scripts/matrix -out matrix.json)")
	out := fs.String("out", "", "the merged run folder to write (must not exist)")
	pubkey := fs.String("pubkey", "", "PEM public key the shards were signed with: every shard must verify with it")
	unsigned := fs.Bool("unsigned", false, "admit unsigned shards (the merged run names them); with -pubkey, a signed shard must still verify")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *matrix == "" || *out == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "mergeevidence: -matrix FILE, -out DIR and at least one shard folder are required (make merge-evidence MATRIX=evidence/matrix.json SHARDS=\"shards/*\" OUT=evidence/merged)")
		return 2
	}
	if *pubkey == "" && !*unsigned {
		fmt.Fprintln(stderr, "mergeevidence: give -pubkey FILE (the signer's public key: every shard must be signed with its key) or -unsigned (merge unsigned evidence, said out loud; with -pubkey too, a signed shard must still verify)")
		return 2
	}
	var pub []byte
	if *pubkey != "" {
		var err error
		if pub, err = os.ReadFile(*pubkey); err != nil {
			fmt.Fprintln(stderr, "mergeevidence: -pubkey:", err)
			return 2
		}
	}
	var inputs []merged.Input
	for _, d := range fs.Args() {
		in, err := merged.ReadInput(d)
		if err != nil {
			fmt.Fprintln(stderr, "mergeevidence:", err)
			return 1
		}
		inputs = append(inputs, in)
	}
	verify := func(runDir, junit string) error {
		rep := evidencecheck.Verify(runDir, junit)
		// A key given: a signed shard must verify with it, an unsigned one passes only
		// under -unsigned (and is named in the merged run).
		if pub != nil && (!*unsigned || attest.Inspect(runDir).Signed) {
			rep.VerifySignatures(context.Background(), pub, junit, true)
		}
		return rep.Err()
	}
	m, err := merged.Merge(*out, *matrix, inputs, verify)
	if err != nil {
		fmt.Fprintln(stderr, "mergeevidence:", err)
		return 1
	}
	signed := "every shard's signature verified"
	switch u := merged.Unsigned(*m); {
	case len(u) > 0:
		signed = fmt.Sprintf("UNSIGNED shard(s): %s (-unsigned; merged.json and PR.md name them)", strings.Join(u, ", "))
	case pub == nil:
		signed = "every shard signed, no signature verified (no -pubkey)"
	}
	fmt.Fprintf(stdout, "mergeevidence: %s: %s, %d row(s) from %d shard(s) of commit %s, %s; check it: make check-evidence DIR=%s\n",
		*out, m.MergedID, len(m.Rows), len(m.Shards), m.Commit, signed, *out)
	return 0
}
