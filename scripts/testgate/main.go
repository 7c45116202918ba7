// Command testgate reads the JUnit file gotestsum wrote and fails the run when any test
// failed, errored or was skipped, fewer tests ran than the floor, or a required test is
// absent or did not pass. `go test`
// exits 0 when no test matched, so a green exit code alone proves nothing.
package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"strings"
)

type testcase struct {
	ClassName string     `xml:"classname,attr"`
	Name      string     `xml:"name,attr"`
	Skipped   []struct{} `xml:"skipped"`
	Failure   []struct{} `xml:"failure"`
	Error     []struct{} `xml:"error"`
}

type suites struct {
	Suites []struct {
		Cases []testcase `xml:"testcase"`
	} `xml:"testsuite"`
}

type requireList []string

func (r *requireList) String() string     { return strings.Join(*r, ",") }
func (r *requireList) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	junit := flag.String("junit", "", "JUnit XML written by gotestsum --junitfile")
	floor := flag.Int("min", 1, "the fewest test cases a complete run executes")
	var required requireList
	flag.Var(&required, "require", "a test (package/Test/sub) that must have run and passed; repeatable")
	flag.Parse()
	if err := gate(*junit, *floor, required); err != nil {
		fmt.Fprintln(os.Stderr, "testgate: FAIL:", err)
		os.Exit(1)
	}
}

func gate(path string, floor int, required []string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read JUnit: %w (did gotestsum run with --junitfile?)", err)
	}
	var s suites
	if err := xml.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("parse JUnit %s: %w", path, err)
	}
	passed := map[string]bool{}
	var total, skipped int
	var skips, failed []string
	for _, su := range s.Suites {
		for _, c := range su.Cases {
			total++
			id := c.ClassName + "/" + c.Name
			if len(c.Skipped) > 0 {
				skipped++
				skips = append(skips, id)
				continue
			}
			if len(c.Failure) == 0 && len(c.Error) == 0 {
				passed[id] = true
			} else {
				failed = append(failed, id)
			}
		}
	}
	var problems []string
	if len(failed) > 0 {
		problems = append(problems, fmt.Sprintf("%d test(s) failed or errored (%s)", len(failed), strings.Join(failed, ", ")))
	}
	if skipped > 0 {
		problems = append(problems, fmt.Sprintf("%d test(s) skipped (%s): a skip is never a pass here", skipped, strings.Join(skips, ", ")))
	}
	if total < floor {
		problems = append(problems, fmt.Sprintf("%d tests ran, fewer than the floor of %d: something was not compiled or not selected", total, floor))
	}
	for _, r := range required {
		if !passed[r] {
			problems = append(problems, fmt.Sprintf("required test %s did not run and pass", r))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	fmt.Printf("testgate: %d tests, 0 skipped, %d required present\n", total, len(required))
	return nil
}
