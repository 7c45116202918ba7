// Command testgate reads the JUnit file gotestsum (or pytest) wrote and fails the run
// when a test failed, errored or was skipped, or one that should have run is absent or
// did not pass: `go test` exits 0 when no test matched. A not-run stage of a failed row
// (scripts/junitfix) is reported with that failure; with no failed stage beside it, it is
// a skip. What should have run is derived, never kept by hand:
//
//   - -go PKGS: every top-level Test and Fuzz function the packages declare, less the
//     hardware tables' tests;
//   - -tables FILE: every stage of every row of each table that runs here (-table names one);
//   - -pytest FILE: the node ids `pytest --collect-only -q` listed;
//   - -test LIST: tests named by hand (<import path>/<name>, comma-separated).
//
// `testgate skip` prints the -skip pattern for the hardware tables, `testgate failed`
// the failed tests of JUnit files, and `testgate rerun` reruns them (FAILED, FLAKY, or
// passed after changes).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"qualkit/internal/junitfix"
	"qualkit/internal/schema"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "skip" {
		fs := flag.NewFlagSet("skip", flag.ExitOnError)
		tablesFile := fs.String("tables", "", "tables JSON (qual.test -qualkit.tables)")
		fs.Parse(os.Args[2:])
		tables, err := schema.ReadTables(*tablesFile)
		if err != nil {
			fail(err)
		}
		fmt.Println(skipPattern(tables))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "rerun" {
		fs := flag.NewFlagSet("rerun", flag.ExitOnError)
		junit := fs.String("junit", "evidence/junit.xml", "the JUnit of the run whose failures to rerun")
		out := fs.String("out", "evidence/junit-rerun.xml", "the reruns' JUnit")
		tags := fs.String("tags", "", "build tags, as the run had them")
		fs.Parse(os.Args[2:])
		code, err := rerun(os.Stdout, *junit, *out, *tags, func(args []string) error {
			cmd := exec.Command("go", append([]string{"tool", "gotestsum"}, args...)...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			return cmd.Run()
		})
		if err != nil {
			fail(err)
		}
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "failed" {
		if err := writeFailed(os.Stdout, os.Args[2:]); err != nil {
			fail(err)
		}
		return
	}
	junit := flag.String("junit", "", "JUnit XML written by gotestsum --junitfile or pytest --junitxml")
	goPkgs := flag.String("go", "", "package pattern whose every Test and Fuzz function must have run (e.g. ./...)")
	tags := flag.String("tags", "", "build tags the tests were compiled with (for -go)")
	tablesFile := flag.String("tables", "", "tables JSON (qual.test -qualkit.tables): every stage of their rows must have run")
	only := flag.String("table", "", "with -tables: only this table's rows (default: every table not marked hardware)")
	pytestList := flag.String("pytest", "", "output of `pytest --collect-only -q`: every node id listed must have run")
	named := flag.String("test", "", "comma-separated tests (<import path>/<name>) that must also have run and passed")
	flag.Parse()

	var expected []string
	var tables []schema.Table
	if *tablesFile != "" {
		var err error
		if tables, err = schema.ReadTables(*tablesFile); err != nil {
			fail(err)
		}
		rows, err := rowTests(tables, *only)
		if err != nil {
			fail(err)
		}
		expected = append(expected, rows...)
	}
	if *goPkgs != "" {
		tests, err := goTests(*goPkgs, *tags)
		if err != nil {
			fail(err)
		}
		expected = append(expected, withoutHardware(tests, tables)...)
	}
	if *pytestList != "" {
		ids, err := pytestIDs(*pytestList)
		if err != nil {
			fail(err)
		}
		expected = append(expected, ids...)
	}
	expected = append(expected, namedTests(*named)...)
	n, err := gate(*junit, expected)
	if err != nil {
		fail(err)
	}
	fmt.Printf("testgate: %d test cases passed, 0 skipped; all %d expected present\n", n, len(expected))
}

// namedTests splits -test's list, empty names dropped.
func namedTests(list string) []string {
	var out []string
	for n := range strings.SplitSeq(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testgate: FAIL:", err)
	os.Exit(1)
}

// gate checks the JUnit file: nothing failed, errored or skipped, something ran, and
// every expected test ran and passed. It returns how many test cases passed.
func gate(path string, expected []string) (int, error) {
	s, err := junitfix.Read(path)
	if err != nil {
		return 0, fmt.Errorf("read JUnit: %w (did gotestsum run with --junitfile?)", err)
	}
	passed, notRunIDs := map[string]bool{}, map[string]bool{}
	var skips, failed, notRunStages []string
	for _, su := range s.Suites {
		// The rows (a stage's parent) with a failed stage: their not-run stages are the
		// failure's consequence.
		failedRow := map[string]bool{}
		for _, c := range su.Cases {
			if row, _, ok := cutLast(c.Name); ok && (c.Failure != nil || c.Error != nil) {
				failedRow[row] = true
			}
		}
		for _, c := range su.Cases {
			id := c.Classname + "/" + c.Name
			row, _, _ := cutLast(c.Name)
			switch {
			case c.Skipped != nil && c.Skipped.Type == junitfix.NotRun && failedRow[row]:
				notRunStages = append(notRunStages, id)
				notRunIDs[id] = true
			case c.Skipped != nil:
				skips = append(skips, id)
			case c.Failure != nil || c.Error != nil:
				failed = append(failed, id)
			default:
				passed[id] = true
			}
		}
	}
	var problems []string
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("%d test(s) failed or errored (%s)", len(failed), strings.Join(failed, ", ")))
	}
	if len(notRunStages) > 0 {
		problems = append(problems, fmt.Sprintf("%d stage(s) not run after their row's stage failed (%s)", len(notRunStages), strings.Join(notRunStages, ", ")))
	}
	if len(skips) > 0 {
		problems = append(problems, fmt.Sprintf("%d test(s) skipped (%s): a skip is never a pass here", len(skips), strings.Join(skips, ", ")))
	}
	if len(passed) == 0 {
		problems = append(problems, "no test passed: nothing was compiled or selected")
	}
	var absent []string
	for _, e := range expected {
		if !passed[e] && !notRunIDs[e] { // a not-run stage is listed above
			absent = append(absent, e)
		}
	}
	if len(absent) > 0 {
		sort.Strings(absent)
		problems = append(problems, fmt.Sprintf("%d expected test(s) did not run and pass: %s", len(absent), strings.Join(absent, ", ")))
	}
	if len(problems) > 0 {
		return len(passed), fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return len(passed), nil
}

// cutLast splits a test name at its last "/": the parent and the subtest.
func cutLast(name string) (parent, sub string, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return "", name, false
	}
	return name[:i], name[i+1:], true
}

// rowTests are the stage subtests of every row of the tables that run here, or of the
// one table named only.
func rowTests(tables []schema.Table, only string) ([]string, error) {
	var out []string
	found := false
	for _, tb := range tables {
		if only != "" && tb.Test != only || only == "" && tb.Hardware {
			continue
		}
		found = true
		if len(tb.Rows) == 0 || len(tb.Stages) == 0 {
			return nil, fmt.Errorf("table %s lists no rows or no stages", tb.Test)
		}
		for _, row := range tb.Rows {
			for _, st := range tb.Stages {
				out = append(out, tb.Package+"/"+tb.Test+"/"+row+"/"+st)
			}
		}
	}
	if only != "" && !found {
		return nil, fmt.Errorf("no table %s in the tables file", only)
	}
	return out, nil
}

// withoutHardware drops the tests of hardware tables, which a run here leaves out.
func withoutHardware(tests []string, tables []schema.Table) []string {
	hw := map[string]bool{}
	for _, tb := range tables {
		if tb.Hardware {
			hw[tb.Package+"/"+tb.Test] = true
		}
	}
	var out []string
	for _, t := range tests {
		if !hw[t] {
			out = append(out, t)
		}
	}
	return out
}

// skipPattern is the go test -skip pattern of the hardware tables' tests.
func skipPattern(tables []schema.Table) string {
	var names []string
	for _, tb := range tables {
		if tb.Hardware {
			names = append(names, tb.Test)
		}
	}
	if len(names) == 0 {
		return "^$"
	}
	return "^(" + strings.Join(names, "|") + ")$"
}
