// Command testtimes prints where a test run's time went, from the JUnit XML gotestsum
// wrote (make test's evidence/junit.xml): each package's wall, then the slowest
// top-level tests, as Markdown. `make test-times` writes it to docs/test-times.md.
//
//	go run ./scripts/testtimes [-junit evidence/junit.xml] [-top 20]
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/junitfix"
)

type timed struct {
	pkg, name string
	tests     int
	s         float64
}

func main() {
	junit := flag.String("junit", "evidence/junit.xml", "the JUnit XML of a test run")
	top := flag.Int("top", 20, "how many of the slowest tests to list")
	flag.Parse()
	if err := run(os.Stdout, *junit, *top); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, path string, top int) error {
	doc, err := junitfix.Read(path)
	if err != nil {
		return fmt.Errorf("%w (run `make test` first: it writes the JUnit)", err)
	}
	var pkgs, tests []timed
	var total float64
	for _, s := range doc.Suites {
		wall := seconds(s.Time)
		pkgs = append(pkgs, timed{pkg: s.Name, tests: s.Tests, s: wall})
		total += wall
		for _, c := range s.Cases {
			if !strings.Contains(c.Name, "/") { // top-level tests; subtests are inside them
				tests = append(tests, timed{pkg: s.Name, name: c.Name, s: seconds(c.Time)})
			}
		}
	}
	byTime := func(a, b timed) int { return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.pkg+a.name, b.pkg+b.name)) }
	slices.SortFunc(pkgs, byTime)
	slices.SortFunc(tests, byTime)
	fmt.Fprintf(w, "Packages by wall time (the package's test binary, as go test reports it; packages run in parallel, so they add up to %.0f s, more than the run's wall):\n\n", total)
	fmt.Fprintln(w, "| package | tests | wall (s) |\n| --- | --- | --- |")
	for _, p := range pkgs {
		if p.s >= 1 {
			fmt.Fprintf(w, "| %s | %d | %.1f |\n", p.pkg, p.tests, p.s)
		}
	}
	fmt.Fprintf(w, "\nThe %d slowest top-level tests:\n\n| test | package | wall (s) |\n| --- | --- | --- |\n", min(top, len(tests)))
	for _, t := range tests[:min(top, len(tests))] {
		fmt.Fprintf(w, "| %s | %s | %.1f |\n", t.name, t.pkg, t.s)
	}
	return nil
}

// seconds reads a JUnit time attribute (0 when it is none).
func seconds(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}
