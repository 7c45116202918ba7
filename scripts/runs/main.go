// Command runs lists past evidence runs, or compares two of them.
//
//	go run ./scripts/runs list [-root evidence]
//	go run ./scripts/runs compare [-root evidence] [-band-rel 0.10] [-band-ms 60] [-across] [-by-age] A B
//
// A and B are run folders, run ids, or `latest` and `previous` (the newest run before
// latest with the same rows); B is compared against A (with -by-age, the newer against
// the older). Exit 1 when B regressed, 2 on a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/runs"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "runs: want a command: list or compare A B")
		return 2
	}
	fs := flag.NewFlagSet("runs "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "evidence", "evidence root holding the run folders")
	rel := fs.Float64("band-rel", runs.DefaultBand.Rel, "compare: relative part of the noise band (fraction of A)")
	abs := fs.Float64("band-ms", runs.DefaultBand.Ms, "compare: absolute part of the noise band, in ms")
	across := fs.Bool("across", false, "compare: judge the timings of rows that ran on another host, runtime or GPUs, or under another host load, too")
	byAgeFlag := fs.Bool("by-age", false, "compare: the older of the two runs is the baseline, whichever is named first")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	switch args[0] {
	case "list":
		if fs.NArg() != 0 {
			fmt.Fprintln(stderr, "runs list: takes no arguments")
			return 2
		}
		list, err := runs.List(*root)
		if err != nil {
			fmt.Fprintln(stderr, "runs:", err)
			return 1
		}
		if len(list) == 0 {
			fmt.Fprintf(stdout, "no runs under %s\n", *root)
			return 0
		}
		if err := runs.WriteList(stdout, list); err != nil {
			fmt.Fprintln(stderr, "runs:", err)
			return 1
		}
		return 0
	case "compare":
		if fs.NArg() != 2 {
			fmt.Fprintln(stderr, "runs compare: want two runs, A (the baseline) and B: make compare A=<run> B=<run> (run ids, folders, latest or previous)")
			return 2
		}
		a, err := read(*root, fs.Arg(0))
		var b *runs.Run
		if err == nil {
			b, err = read(*root, fs.Arg(1))
		}
		if err != nil {
			fmt.Fprintln(stderr, "runs:", err)
			return 2
		}
		if *byAgeFlag && b.Info.Started.Before(a.Info.Started) {
			a, b = b, a
		}
		c := runs.Compare(a, b, runs.Band{Rel: *rel, Ms: *abs}, *across)
		if err := c.WriteMarkdown(stdout); err != nil {
			fmt.Fprintln(stderr, "runs:", err)
			return 1
		}
		if len(c.Regressions()) > 0 {
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "runs: unknown command %q: want list or compare\n", args[0])
	return 2
}

// read takes a run folder, a run id under root, or latest (the newest run) or previous
// (the newest run before it with the same rows), so that the common comparison needs no
// typed run id and compares like rows.
func read(root, arg string) (*runs.Run, error) {
	if arg == "latest" || arg == "previous" {
		list, err := runs.List(root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
		if need := map[string]int{"latest": 1, "previous": 2}[arg]; len(list) < need {
			return nil, fmt.Errorf("%s: %s holds %d run(s), %s needs %d (make qual makes one; make runs lists them)", arg, root, len(list), arg, need)
		}
		if arg == "latest" {
			return list[0], nil
		}
		for _, r := range list[1:] {
			if slices.Equal(r.Info.Rows, list[0].Info.Rows) {
				return r, nil
			}
		}
		return nil, fmt.Errorf("previous: none of the %d run(s) before the latest, %s, ran its rows (%s): name two runs (make runs lists them)",
			len(list)-1, list[0].Info.RunID, strings.Join(list[0].Info.Rows, ", "))
	}
	dir := arg
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		dir = filepath.Join(root, arg)
	}
	return runs.Read(dir)
}
