// Command mergeevidence merges the run folders of CI shards into one merged run
// (internal/merged), after checking each shard whole with its JUnit and that the shards
// cover the matrix exactly once from one commit. A missing, duplicated or foreign shard
// is an error, never a gap; nothing is written then.
//
//	go run ./scripts/mergeevidence -matrix matrix.json -out evidence/merged shards/shard-a shards/shard-b
//
// Each shard folder is what `make shard` writes to evidence/shards/<name>/: one run folder
// and junit.xml. Check the result with `make check-evidence DIR=evidence/merged`.
//
// Each shard's run must be signed (make shard SIGN_KEY=...) and verify with -pubkey; a
// merge of unsigned shards needs -unsigned, said out loud, and prints that it is one.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	_ "qualkit/families/all" // the families' evidence rules
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
	unsigned := fs.Bool("unsigned", false, "merge shards without checking signatures (the merged run is then unsigned evidence)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *matrix == "" || *out == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, "mergeevidence: -matrix FILE, -out DIR and at least one shard folder are required (make merge-evidence MATRIX=matrix.json SHARDS=\"shards/*\" OUT=evidence/merged)")
		return 2
	}
	if (*pubkey == "") == !*unsigned {
		fmt.Fprintln(stderr, "mergeevidence: give -pubkey FILE (the signer's public key: every shard must be signed with its key) or -unsigned (merge unsigned evidence, said out loud)")
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
		if pub != nil {
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
	if pub == nil {
		signed = "UNSIGNED: no shard's signature was checked (-unsigned)"
	}
	fmt.Fprintf(stdout, "mergeevidence: %s: %s, %d row(s) from %d shard(s) of commit %s, %s; check it: make check-evidence DIR=%s\n",
		*out, m.MergedID, len(m.Rows), len(m.Shards), m.Commit, signed, *out)
	return 0
}
