package evidencecheck

import (
	"encoding/xml"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"qualkit/internal/schema"
)

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string      `xml:"name,attr"`
	ClassName  string      `xml:"classname,attr"`
	Failures   []struct{}  `xml:"failure"`
	Errors     []struct{}  `xml:"error"`
	Skipped    *junitSkip  `xml:"skipped"`
	Properties []junitProp `xml:"properties>property"`
}

// junitSkip: type "not-run" is scripts/junitfix's for a stage after its row's failed one.
type junitSkip struct {
	Type string `xml:"type,attr"`
}

func (tc junitCase) prop(name string) (string, bool) {
	for _, p := range tc.Properties {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

func (tc junitCase) outcome() string {
	switch {
	case tc.Skipped != nil:
		return "skipped"
	case len(tc.Errors) > 0:
		return "error"
	case len(tc.Failures) > 0:
		return "failed"
	}
	return "passed"
}

// junitNode is a <testsuites> or <testsuite>: pytest's and gotestsum's both parse.
type junitNode struct {
	Cases      []junitCase `xml:"testcase"`
	Suites     []junitNode `xml:"testsuite"`
	Properties []junitProp `xml:"properties>property"`
}

// walk visits every test case with its own properties and those its suite holds for it
// as "<test case> <property>" (after scripts/junitfix).
func (n junitNode) walk(each func(junitCase)) {
	for _, tc := range n.Cases {
		for _, p := range n.Properties {
			if name, ok := strings.CutPrefix(p.Name, tc.Name+" "); ok && !strings.Contains(name, " ") {
				tc.Properties = append(slices.Clone(tc.Properties), junitProp{Name: name, Value: p.Value})
			}
		}
		each(tc)
	}
	for _, s := range n.Suites {
		s.walk(each)
	}
}

// The JUnit properties the harness puts on each row's report test case.
const (
	propStatus    = "qualkit.status"
	propEvidence  = "qualkit.evidence"
	propSums      = "qualkit.sha256sums"
	propErrors    = "qualkit.client_errors"
	propBundle    = "qualkit.bundle_sha256"
	propMatches   = "qualkit.native_http_matches"
	propHTTPP50   = "qualkit.http_p50_ms"
	propHTTPP95   = "qualkit.http_p95_ms"
	propTaskP50   = "qualkit.task_p50_ms"
	propTaskP95   = "qualkit.task_p95_ms"
	propImagesPer = "qualkit.images_per_s"
)

// checkJUnit: each row's report case carries the row's numbers, each stage case passed
// where the row claims it did, and no skip hides behind a pass.
func (c *checker) checkJUnit(junitPath string) {
	file := junitPath
	if abs, err := filepath.Abs(junitPath); err == nil {
		if rel, err := filepath.Rel(c.dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
			file = filepath.ToSlash(rel)
		}
	}
	b, err := os.ReadFile(junitPath)
	if err != nil {
		c.fail(file, "readable JUnit", "the JUnit file of the run", err.Error())
		return
	}
	var root junitNode
	if err := xml.Unmarshal(b, &root); err != nil {
		c.fail(file, "readable JUnit", "JUnit XML", err.Error())
		return
	}
	var cases []junitCase
	root.walk(func(tc junitCase) { cases = append(cases, tc) })
	runID := filepath.Base(filepath.Clean(c.dir))
	if c.info != nil && c.info.RunID != "" {
		runID = c.info.RunID
	}
	reports := map[string]junitCase{}
	for _, tc := range cases {
		ev, ok := tc.prop(propEvidence)
		if !ok {
			continue
		}
		ev = filepath.ToSlash(filepath.Clean(ev))
		row, run := path.Base(ev), path.Base(path.Dir(ev))
		if run != runID {
			c.fail(file, tc.Name+" "+propEvidence, "a row of run "+runID, ev+" (another run's JUnit)")
			continue
		}
		reports[row] = tc
	}
	for _, r := range c.rows {
		tc, ok := reports[r.name]
		if !ok && r.res != nil && r.res.Status == schema.StatusNotRun {
			continue // a skipped row never reaches its report case
		}
		if !ok {
			c.fail(file, "report case of row "+r.name, "a test case whose "+propEvidence+" is <evidence>/"+runID+"/"+r.name, "none")
			continue
		}
		r.checkJUnitCase(file, tc, cases)
	}
	for row := range reports {
		if !c.hasRow(row) {
			c.fail(file, "report case of row "+row, "rows "+strings.Join(c.rep.Rows, ", ")+" (run.json)", "a report case for "+row)
		}
	}
	c.checkJUnitSkips(file, reports, cases)
	c.checkRunAnchor(file, root, runID)
}

// runAnchorProp (junitfix.RunAnchor): "<run id> <sha256 of the run's SHA256SUMS>".
const runAnchorProp = "qualkit.run_sha256sums"

// checkRunAnchor: the run's checksum list is the one an anchoring JUnit file names.
func (c *checker) checkRunAnchor(file string, root junitNode, runID string) {
	anchored := false
	var walk func(n junitNode)
	walk = func(n junitNode) {
		for _, p := range n.Properties {
			id, sum, ok := strings.Cut(p.Value, " ")
			if p.Name != runAnchorProp || !ok || id != runID {
				continue
			}
			anchored = true
			got := "unreadable"
			if b, ok := c.read(schema.ChecksumFile); ok {
				got = bytesSHA256(b)
			}
			c.same(schema.ChecksumFile, "sha256 of the run's checksum list", sum, got, file+" "+runAnchorProp)
		}
		for _, s := range n.Suites {
			walk(s)
		}
	}
	walk(root)
	if c.opts.RequireRunAnchor && !anchored {
		c.fail(file, runAnchorProp, "\""+runID+" <sha256 of its SHA256SUMS>\" (scripts/junitfix -run; a run vouches only with its anchor)", "none")
	}
}

func (c *checker) hasRow(name string) bool {
	for _, r := range c.rows {
		if r.name == name {
			return true
		}
	}
	return false
}

// checkJUnitSkips: a skipped qualification test means the run qualifies nothing.
func (c *checker) checkJUnitSkips(file string, reports map[string]junitCase, cases []junitCase) {
	packages := map[string]bool{}
	for _, tc := range reports {
		packages[tc.ClassName] = true
	}
	notRun := c.notRunStages(reports)
	var skipped []string
	for _, tc := range cases {
		if packages[tc.ClassName] && tc.Skipped != nil && !(tc.Skipped.Type == junitNotRun && notRun[tc.ClassName+"/"+tc.Name]) {
			skipped = append(skipped, tc.Name)
		}
	}
	sort.Strings(skipped)
	if len(skipped) == 0 {
		return
	}
	list := fmt.Sprintf("%d skipped test case(s) in %s: %s", len(skipped), file, strings.Join(skipped, ", "))
	if c.info != nil && len(c.info.Skips) == 0 {
		c.fail(schema.RunFile, "skips", list, "none")
	}
	for _, r := range c.rows {
		if r.res != nil && r.res.Status == schema.StatusQualified {
			r.fail(schema.ResultsFile, "status "+schema.StatusQualified, list+": a run with a skip qualifies nothing", r.res.Status)
		}
		if tc, ok := reports[r.name]; ok {
			if st, _ := tc.prop(propStatus); st == schema.StatusQualified {
				c.fail(file, tc.Name+" "+propStatus, list+": a run with a skip qualifies nothing", st)
			}
		}
	}
}

func (r *rowCheck) checkJUnitCase(file string, tc junitCase, cases []junitCase) {
	c := r.c
	prop := func(name, want, source string) {
		got, ok := tc.prop(name)
		if !ok {
			got = "no such property"
		}
		c.same(file, tc.Name+" "+name, want, got, source)
	}
	if r.res == nil {
		return
	}
	prop(propStatus, r.res.Status, r.name+"/results.json")
	// The anchor: the row's checksum list is the one the JUnit file was written with.
	if list, ok := r.read(schema.ChecksumFile); ok {
		prop(propSums, bytesSHA256(list), "sha256 of "+r.name+"/"+schema.ChecksumFile)
	}
	if r.rawErr == nil {
		prop(propErrors, fmt.Sprint(r.clientErrors()), "failed records in "+r.name+"/"+schema.RawExportFile)
	}
	if r.bundleSHA != "" {
		prop(propBundle, r.bundleSHA, r.name+"/build/bundle.json")
	}
	if r.res.Identity != nil {
		m, total := r.identityCounts()
		prop(propMatches, fmt.Sprintf("%d/%d", m, total), "decoded PNG pairs in "+r.name+"/identity")
	}
	if r.res.HTTP != nil && r.res.Task != nil {
		client, task, problems := r.measuredTimes()
		if len(problems) == 0 {
			src := "nearest-rank over " + r.name + "/" + schema.ProfileExportFile
			prop(propHTTPP50, fmt.Sprintf("%.3f", nearestRank(client, 50)), src)
			prop(propHTTPP95, fmt.Sprintf("%.3f", nearestRank(client, 95)), src)
			src = "nearest-rank over " + r.taskSrc
			prop(propTaskP50, fmt.Sprintf("%.3f", nearestRank(task, 50)), src)
			prop(propTaskP95, fmt.Sprintf("%.3f", nearestRank(task, 95)), src)
			prop(propImagesPer, fmt.Sprintf("%.4f", r.imagesPerSecond()), "request_start_ns/request_end_ns in "+r.name+"/"+schema.RawExportFile)
		}
	}
	prefix := strings.TrimSuffix(tc.Name, "/report")
	for _, st := range schema.PipelineOf(r.res.Schema) {
		name := prefix + "/" + st
		var found *junitCase
		for i := range cases {
			if cases[i].Name == name && cases[i].ClassName == tc.ClassName {
				found = &cases[i]
			}
		}
		want := "passed"
		if !r.passed(st) {
			if !schema.Passing(r.res.Status) {
				continue // a failed or skipped row's stage cases may say anything but passed-and-qualified
			}
			want = "passed (the row claims " + r.res.Status + ")"
		}
		got := "no such test case"
		if found != nil {
			got = found.outcome()
		}
		if got != "passed" {
			c.fail(file, name, "stage "+st+" "+want+" ("+r.name+"/results.json)", got)
		}
		c.rep.Claims++
	}
}
