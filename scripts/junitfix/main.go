// Command junitfix rewrites, in place, a JUnit file gotestsum wrote (internal/junitfix),
// after gotestsum in the make targets.
//
//	go run ./scripts/junitfix -junit evidence/junit-qual.xml [-run evidence/latest]
//
// With -run, it also anchors that run folder: the sha256 of its SHA256SUMS, as the
// suite property qualkit.run_sha256sums ("<run id> <sha256>").
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"qualkit/internal/junitfix"
	"qualkit/internal/schema"
)

func main() {
	junit := flag.String("junit", "", "the JUnit file to rewrite in place")
	run := flag.String("run", "", "a run folder the JUnit's tests made: anchor its SHA256SUMS in the file")
	flag.Parse()
	if *junit == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "junitfix: -junit FILE is required")
		os.Exit(2)
	}
	b, err := os.ReadFile(*junit)
	if err == nil {
		b, err = junitfix.Fix(b)
	}
	if err == nil && *run != "" {
		b, err = anchor(b, *run)
	}
	if err == nil {
		err = os.WriteFile(*junit, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "junitfix:", err)
		os.Exit(1)
	}
}

// anchor adds the run folder's anchor: its run id (from run.json) and the sha256 of its
// SHA256SUMS.
func anchor(b []byte, dir string) ([]byte, error) {
	var info schema.RunInfo
	if err := schema.ReadJSON(filepath.Join(dir, schema.RunFile), &info); err != nil {
		return nil, fmt.Errorf("-run %s: %w", dir, err)
	}
	sums, err := os.ReadFile(filepath.Join(dir, schema.ChecksumFile))
	if err != nil {
		return nil, fmt.Errorf("-run %s: %w", dir, err)
	}
	sum := sha256.Sum256(sums)
	return junitfix.AnchorRun(b, info.RunID, hex.EncodeToString(sum[:]))
}
