package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"qualkit/internal/junitfix"
)

// failedCase is a test case that failed or errored, with the first line of its message.
type failedCase struct {
	ID, Message string
}

// maxMessage keeps one failure to one line of a terminal or so.
const maxMessage = 160

// failedCases lists the failed test cases of a JUnit file in file order. A parent test
// that failed only because a subtest did (gotestsum marks both) is left out: the
// subtest names the failure.
func failedCases(path string) ([]failedCase, error) {
	s, err := junitfix.Read(path)
	if err != nil {
		return nil, err
	}
	// A stage not run after a failure did not fail, the stage before it did: junitfix
	// writes it skipped, type "not-run" (files written before that, an error of that
	// type, which the list leaves out too).
	var out []failedCase
	for _, su := range s.Suites {
		for _, c := range su.Cases {
			for _, p := range []*junitfix.Result{c.Failure, c.Error} {
				if p != nil && p.Type != junitfix.NotRun {
					msg, _, _ := strings.Cut(strings.TrimSpace(p.Message), "\n")
					if len(msg) > maxMessage {
						msg = msg[:maxMessage] + "..."
					}
					out = append(out, failedCase{ID: c.Classname + " " + c.Name, Message: msg})
					break
				}
			}
		}
	}
	var leaves []failedCase
	for _, f := range out {
		if !slices.ContainsFunc(out, func(g failedCase) bool { return strings.HasPrefix(g.ID, f.ID+"/") }) {
			leaves = append(leaves, f)
		}
	}
	return leaves, nil
}

// writeFailed prints the failure list of the JUnit files: what a reader of a long log
// wants last. A file not written is said, not an error: the step that writes it may
// not have run (its own failure is printed above).
func writeFailed(w io.Writer, paths []string) error {
	for _, path := range paths {
		cases, err := failedCases(path)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(w, "%s: not written (its step did not run)\n", path)
			continue
		}
		if err != nil {
			return err
		}
		if len(cases) == 0 {
			fmt.Fprintf(w, "%s: no test failed\n", path)
			continue
		}
		fmt.Fprintf(w, "%s: %d test(s) FAILED:\n", path, len(cases))
		for _, c := range cases {
			if c.Message == "" || c.Message == "Failed" {
				fmt.Fprintf(w, "  %s\n", c.ID)
			} else {
				fmt.Fprintf(w, "  %s: %s\n", c.ID, c.Message)
			}
		}
	}
	return nil
}
