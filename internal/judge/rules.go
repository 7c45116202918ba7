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
	// PairReference is where the case writes the quality pair's reference under
	// correctness/artifacts/, for the bundle's layout and the row's profile; "" when unknown.
	PairReference func(layout, profile string) string
	// PairMetric is the formula the thresholds were set for; "" is windowed SSIM.
	PairMetric func(layout string) string
	TaskTime   func(Row) TaskTime
	// ServerLog matches serve/server.log's line per answered edit request, with groups id,
	// status and (optionally) task_ms. nil: no such line.
	ServerLog *regexp.Regexp
	// NativeBatchLog matches identity/native-batch.log's line per replay, with groups n,
	// total, id and sha (a sha256 prefix). nil: no batch mode.
	NativeBatchLog *regexp.Regexp
	// CaseGates is the repo path of the case's gates file ("" when in another checkout),
	// read at the run's commit to judge the kept result again with JudgeCase.
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
	// Sources are the task_time_source values the family may give a row.
	Sources []schema.TimingSource
	// Body and Records (joined on RecordID) are the fields carrying it, "" where never;
	// where both do, the checker compares them for every request.
	Body, Records, RecordID string
}

// Validate: the pair's, the Task time's and JudgeCase are required (JudgeCase with
// CaseGates), and the log patterns need the groups the checker joins on.
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

func Find(list []Rules, backend string) (Rules, bool) {
	for _, r := range list {
		if r.Backend == backend {
			return r, true
		}
	}
	return Rules{}, false
}
