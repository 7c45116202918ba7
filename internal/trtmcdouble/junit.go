package trtmcdouble

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// JUnit XML as pytest's --junitxml writes it (the subset qualkit reads), with the
// double's marker as a testcase property.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Errors    int         `xml:"errors,attr"`
	Failures  int         `xml:"failures,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Tests     int         `xml:"tests,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Hostname  string      `xml:"hostname,attr"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Classname  string          `xml:"classname,attr"`
	Name       string          `xml:"name,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Failure    *junitResult    `xml:"failure,omitempty"`
	Skipped    *junitResult    `xml:"skipped,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitResult struct {
	Type    string `xml:"type,attr,omitempty"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// junitIDs splits a node id into pytest's JUnit classname and name:
// "a/b/test_x.py::test_f[p]" -> "a.b.test_x", "test_f[p]".
func junitIDs(nodeID string) (classname, name string) {
	file, name, _ := strings.Cut(nodeID, "::")
	return strings.ReplaceAll(strings.TrimSuffix(file, ".py"), "/", "."), name
}

// writeJUnit writes the report of one session: the case's outcome, or no case at all
// when it was deselected (o == nil).
func writeJUnit(path, nodeID string, o *outcome, took time.Duration) error {
	suite := junitSuite{Name: "pytest", Time: fmt.Sprintf("%.3f", took.Seconds()),
		Timestamp: time.Now().Format("2006-01-02T15:04:05.000000-07:00"), Hostname: "qualkit-contract-double"}
	if o != nil {
		cls, name := junitIDs(nodeID)
		c := junitCase{Classname: cls, Name: name, Time: suite.Time,
			Properties: []junitProperty{{Name: Marker, Value: "true"}}}
		switch o.status {
		case statusFailed:
			c.Failure = &junitResult{Message: o.message, Text: nodeID + ": " + o.message}
			suite.Failures++
		case statusSkipped:
			c.Skipped = &junitResult{Type: "pytest.skip", Message: o.message, Text: o.file + ": " + o.message}
			suite.Skipped++
		}
		suite.Tests, suite.Cases = 1, []junitCase{c}
	}
	b, err := xml.Marshal(junitSuites{Name: "pytest tests", Suites: []junitSuite{suite}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(`<?xml version="1.0" encoding="utf-8"?>`), b...), 0o644)
}
