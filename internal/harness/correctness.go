package harness

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"strings"

	"qualkit/internal/schema"
)

type junitCase struct {
	Name      string     `xml:"name,attr"`
	ClassName string     `xml:"classname,attr"`
	Failure   []struct{} `xml:"failure"`
	Error     []struct{} `xml:"error"`
	Skipped   []struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

type junitSuite struct {
	Cases  []junitCase  `xml:"testcase"`
	Suites []junitSuite `xml:"testsuite"`
}

// ReadJUnit counts the test cases of a JUnit XML file (pytest's or gotestsum's), from the
// <testcase> elements themselves rather than the suites' summary attributes.
func ReadJUnit(path string) (schema.CaseCounts, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return schema.CaseCounts{}, fmt.Errorf("correctness JUnit: %w", err)
	}
	var root junitSuite
	if err := xml.Unmarshal(b, &root); err != nil {
		return schema.CaseCounts{}, fmt.Errorf("correctness JUnit %s: %w", path, err)
	}
	var c schema.CaseCounts
	var walk func(s junitSuite)
	walk = func(s junitSuite) {
		for _, tc := range s.Cases {
			c.Total++
			if len(tc.Skipped) == 0 {
				c.Cases = append(c.Cases, CaseID(tc.ClassName, tc.Name))
			}
			switch {
			case len(tc.Skipped) > 0:
				c.Skipped++
				c.Reasons = append(c.Reasons, tc.Name+": "+tc.Skipped[0].Message)
			case len(tc.Error) > 0:
				c.Errors++
			case len(tc.Failure) > 0:
				c.Failed++
			}
		}
		for _, sub := range s.Suites {
			walk(sub)
		}
	}
	walk(root)
	c.Executed = c.Total - c.Skipped
	return c, nil
}

// CaseID is a JUnit test case's id: "<classname>.<name>", as families declare them.
func CaseID(className, name string) string {
	return strings.TrimPrefix(className+"."+name, ".")
}

// GateCases is the correctness pass rule: exactly the declared cases executed (by id:
// none missing, none other), none failed, none errored, none skipped.
func GateCases(c schema.CaseCounts, declared []string) error {
	if len(declared) == 0 {
		return fmt.Errorf("correctness case: the family declares no test case id it must execute: a case that must run nothing proves nothing")
	}
	var problems []string
	if c.Skipped > 0 {
		problems = append(problems, fmt.Sprintf("%d skipped (%s): a skipped case proves nothing", c.Skipped, strings.Join(c.Reasons, "; ")))
	}
	if c.Executed != len(declared) {
		problems = append(problems, fmt.Sprintf("%d cases executed, expected %d", c.Executed, len(declared)))
	}
	if missing := minus(declared, c.Cases); len(missing) > 0 {
		problems = append(problems, "declared but not executed: "+strings.Join(missing, ", "))
	}
	if other := minus(c.Cases, declared); len(other) > 0 {
		problems = append(problems, "executed but not declared: "+strings.Join(other, ", "))
	}
	if c.Failed > 0 {
		problems = append(problems, fmt.Sprintf("%d failed", c.Failed))
	}
	if c.Errors > 0 {
		problems = append(problems, fmt.Sprintf("%d errors", c.Errors))
	}
	if len(problems) > 0 {
		return fmt.Errorf("correctness case: %s", strings.Join(problems, "; "))
	}
	return nil
}

func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

// CheckResultFile requires {"status": "pass"} in a case's own result JSON.
func CheckResultFile(path string) error {
	b, err := os.ReadFile(path)
	return judgeResultFile(path, b, err, "")
}

// judgeResultFile requires {"status": pass} in b, the case's own result file at path
// as read (readErr: it could not be); an empty pass is "pass".
func judgeResultFile(path string, b []byte, readErr error, pass string) error {
	if pass == "" {
		pass = "pass"
	}
	if readErr != nil {
		return fmt.Errorf("correctness result: %w", readErr)
	}
	var r struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("correctness result %s: %w", path, err)
	}
	if r.Status != pass {
		return fmt.Errorf("correctness result %s: status %q, want %q", path, r.Status, pass)
	}
	return nil
}
