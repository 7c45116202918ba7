// Package judge holds what decides pass or fail from measured values, for the harness at
// stage time and for the evidence checker again on what it re-derives from the raw
// files: the content gates and what the checker holds each family to.
//
// Rules are what the checker must know of a family that the evidence cannot be trusted
// to say of itself: a forger who rewrites results.json and recomputes every checksum
// could point the quality pair at any file, name another formula, or keep a case's
// verdict beside metrics that miss its gates. Each family declares its rules beside the
// code that writes that evidence; families/all lists them for the checker, which fails
// a row whose backend has none.
package judge

import (
	"errors"
	"fmt"
	"regexp"

	"qualkit/internal/schema"
)

// Rules are one backend's.
type Rules struct {
	Backend string
	// PairReference is where the family's correctness case writes the reference image
	// of the quality pair, under correctness/artifacts/, for the bundle's layout (its
	// build setting "layout", "" when it has none) and the row's profile: the pair is
	// judged against that file and no other. "" when the layout has no known rule.
	PairReference func(layout, profile string) string
	// PairMetric is the pair formula (quality.Metric*) the family's thresholds were
	// set for, for the bundle's layout; "" is qualkit's own (windowed SSIM).
	PairMetric func(layout string) string
	// TaskTime is where the family's server reports each request's Task time, for the
	// row: results.json task_time_source must be one of its Sources.
	TaskTime func(Row) TaskTime
	// ServerLog matches the line the family's server writes to its log
	// (serve/server.log) for each edit request it answered, with the named groups id
	// (the request id) and status (the HTTP status), and task_ms where the line states
	// the Task time. nil: the server writes no per-request line the checker can join on.
	ServerLog *regexp.Regexp
	// NativeBatchLog matches the line the family's batch native Task writes to its log
	// (identity/native-batch.log) for each replay, with the named groups n (its place),
	// total (the batch's size), id (the request id) and sha (a prefix of the PNG's
	// sha256). nil: the family has no batch mode.
	NativeBatchLog *regexp.Regexp
	// CaseGates is the repository path of the gates file the family's correctness case
	// judges its metrics against; "" when the gates live in another checkout. The checker
	// reads that file at the run's commit and judges the case's kept result
	// (correctness/results_file) again with JudgeCase.
	CaseGates string
	// JudgeCase lists every gate of gates the case's kept result misses ("" none).
	JudgeCase func(result, gates []byte) ([]string, error)
}

// Row is what the checker knows of a row when it asks a rule.
type Row struct {
	Layout   string // the bundle's build setting "layout", "" when it has none
	Profile  string
	Protocol string // the row's wire protocol (wire.OpenAIImages, wire.TRTMCTask)
}

// TaskTime is where a family's server reports the Task time.
type TaskTime struct {
	// Sources are the task_time_source values the family's code gives a row (one is
	// picked, by the row's configuration): a row that names another fails.
	Sources []schema.TimingSource
	// Body is the response body field that carries the Task time, Records the records
	// field (joined on RecordID) that carries it; "" where that source never does.
	// Where both do, the checker compares them for every request, whichever the row's
	// task_time_source names.
	Body, Records, RecordID string
}

// Validate says what a checker could not use of r: the pair's, the Task time's and
// JudgeCase are required (JudgeCase with CaseGates), and the log patterns need the
// groups the checker joins on.
func (r Rules) Validate() error {
	if r.Backend == "" || r.PairReference == nil || r.PairMetric == nil || r.TaskTime == nil || (r.CaseGates == "") != (r.JudgeCase == nil) {
		return fmt.Errorf("backend %q: Backend, PairReference, PairMetric and TaskTime are required, JudgeCase with CaseGates", r.Backend)
	}
	var errs []error
	for _, p := range []struct {
		name   string
		re     *regexp.Regexp
		groups []string
	}{{"ServerLog", r.ServerLog, []string{"id", "status"}}, {"NativeBatchLog", r.NativeBatchLog, []string{"n", "total", "id", "sha"}}} {
		for _, g := range p.groups {
			if p.re != nil && p.re.SubexpIndex(g) < 0 {
				errs = append(errs, fmt.Errorf("backend %q: %s has no group %q", r.Backend, p.name, g))
			}
		}
	}
	return errors.Join(errs...)
}

// Find is backend's rules in list.
func Find(list []Rules, backend string) (Rules, bool) {
	for _, r := range list {
		if r.Backend == backend {
			return r, true
		}
	}
	return Rules{}, false
}
