package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// rerunPlan is what `testgate rerun` runs again: the top-level tests that failed in a
// JUnit file, by package. A row runs whole or not at all, so a failed stage reruns its
// table's test.
type rerunPlan map[string][]string // import path -> top-level test names

func planRerun(cases []failedCase) rerunPlan {
	p := rerunPlan{}
	for _, c := range cases {
		pkg, name, _ := strings.Cut(c.ID, " ")
		top, _, _ := strings.Cut(name, "/")
		if !slices.Contains(p[pkg], top) {
			p[pkg] = append(p[pkg], top)
		}
	}
	return p
}

// args is the go test command line of one package's reruns.
func (p rerunPlan) args(pkg string, tags string) []string {
	args := []string{"-count=1"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	return append(args, "-run", "^("+strings.Join(p[pkg], "|")+")$", pkg)
}

// verdict is what a rerun says of one test that had failed: it failed again, or it
// passed, which is flaky when nothing of the tree changed since the failed run, and
// "passed after changes" (fixed, or flaky: only another rerun tells) when something did.
type verdict struct {
	Test, Verdict, Message string
}

func rerunVerdicts(before rerunPlan, after []failedCase, changed []string) []verdict {
	failedAgain := map[string]string{}
	for _, c := range after {
		pkg, name, _ := strings.Cut(c.ID, " ")
		top, _, _ := strings.Cut(name, "/")
		if _, seen := failedAgain[pkg+" "+top]; !seen {
			failedAgain[pkg+" "+top] = c.Message
		}
	}
	var out []verdict
	for _, pkg := range slices.Sorted(maps.Keys(before)) {
		for _, test := range before[pkg] {
			id := pkg + " " + test
			switch msg, failed := failedAgain[id]; {
			case failed:
				out = append(out, verdict{id, "FAILED again", msg})
			case len(changed) == 0:
				out = append(out, verdict{id, "FLAKY", "failed in the last run, passed on rerun with the tree unchanged"})
			default:
				out = append(out, verdict{id, "passed after changes", fmt.Sprintf("the tree changed since the failed run (%s): fixed, or flaky; rerun to tell", strings.Join(changed[:min(3, len(changed))], ", "))})
			}
		}
	}
	return out
}

// changedSince lists the files of the work tree (tracked and untracked, not ignored)
// modified after t, and HEAD when it moved after t.
func changedSince(t time.Time) ([]string, error) {
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var changed []string
	for _, f := range strings.Split(string(out), "\x00") {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(t) {
			changed = append(changed, f)
		}
	}
	if st, err := os.Stat(filepath.Join(".git", "HEAD")); err == nil && st.ModTime().After(t) {
		changed = append(changed, "HEAD")
	}
	return changed, nil
}

// rerun reruns what failed in junit, writing the reruns' JUnit to out, and reports each
// test: FAILED again, FLAKY, or passed after changes. Exit 1 for the first two: a test
// that passes only on a second try is a bug to find, never a pass.
func rerun(w io.Writer, junit, out, tags string, gotestsum func(args []string) error) (int, error) {
	st, err := os.Stat(junit)
	if err != nil {
		return 2, fmt.Errorf("no JUnit of a last run (%w): run make test first", err)
	}
	cases, err := failedCases(junit)
	if err != nil {
		return 2, err
	}
	plan := planRerun(cases)
	if len(plan) == 0 {
		fmt.Fprintf(w, "test-failed: nothing failed in %s\n", junit)
		return 0, nil
	}
	changed, err := changedSince(st.ModTime())
	if err != nil {
		return 2, err
	}
	code := 0
	pkgs := slices.Sorted(maps.Keys(plan))
	for i, pkg := range pkgs {
		file := out
		if len(pkgs) > 1 {
			file = strings.TrimSuffix(out, ".xml") + fmt.Sprintf("-%d.xml", i)
		}
		args := append([]string{"--format", "testname", "--junitfile", file, "--"}, plan.args(pkg, tags)...)
		fmt.Fprintf(w, "test-failed: go tool gotestsum %s\n", strings.Join(args, " "))
		var exit *exec.ExitError
		if err := gotestsum(args); err != nil && !errors.As(err, &exit) {
			return 2, err
		}
		after, err := failedCases(file)
		if err != nil {
			return 2, err
		}
		for _, v := range rerunVerdicts(rerunPlan{pkg: plan[pkg]}, after, changed) {
			fmt.Fprintf(w, "test-failed: %s: %s: %s\n", v.Verdict, v.Test, v.Message)
			if v.Verdict != "passed after changes" {
				code = 1
			}
		}
	}
	return code, nil
}
