package evidencecheck

import (
	"encoding/json"
	"strings"

	"qualkit/internal/schema"
)

// The Task time is the one column no client can measure (judge.TaskTime); where both the
// body and the records carry it they must agree, whichever results.json names.

// checkTaskTimeSource: task_time_source is the family's, named once the benchmark passed.
func (r *rowCheck) checkTaskTimeSource() {
	rl, ok := r.rules()
	if !ok {
		return // checkRules failed the row
	}
	tt := rl.TaskTime(r.ruleRow())
	ts := r.res.TaskSource
	if ts == nil && !r.passed(schema.StageBenchmark) {
		return // a failed benchmark may have no Task times to name a source for
	}
	var names []string
	allowed := false
	for _, s := range tt.Sources {
		names = append(names, sourceText(&s))
		allowed = allowed || ts != nil && *ts == s
	}
	r.truth(allowed, schema.ResultsFile, "task_time_source", "one the "+r.res.Checkpoint.Backend+" family's code gives a row: "+strings.Join(names, " or "), sourceText(ts))
}

func (r *rowCheck) checkTaskTimeSources() {
	rl, ok := r.rules()
	if !ok || r.rawErr != nil || !r.exists(schema.RecordsFile) {
		return
	}
	tt := rl.TaskTime(r.ruleRow())
	if tt.Body == "" || tt.Records == "" || tt.RecordID == "" {
		return
	}
	ts := r.res.TaskSource
	compared := ts != nil && ts.Body == tt.Body && ts.Records == tt.Records && ts.RecordID == tt.RecordID
	recorded := map[string]float64{}
	for _, rec := range r.records {
		id, err := schema.ValueAt(rec.doc, tt.RecordID)
		if err != nil {
			continue
		}
		if v, err := schema.NumberAt(rec.doc, tt.Records); err == nil {
			recorded[stringOf(id)] = v
		}
	}
	for _, q := range r.reqs {
		if compared && q.phase == phaseProfiling {
			continue
		}
		rec, okR := recorded[q.id]
		var doc any
		if !okR || q.rec.Failed() || json.Unmarshal(q.rec.Body(), &doc) != nil {
			continue
		}
		body, err := schema.NumberAt(doc, tt.Body)
		if err != nil {
			continue
		}
		r.truth(nearlyEqual(body, rec), schema.RecordsFile, "request "+q.id+" "+tt.Records,
			fmtNum(body)+" ms (response body "+tt.Body+" in "+schema.RawExportFile+": the server states the Task time in both)", fmtNum(rec)+" ms")
	}
}

func sourceText(ts *schema.TimingSource) string {
	if ts == nil {
		return "none"
	}
	var parts []string
	for _, f := range []struct{ k, v string }{{"body", ts.Body}, {"records", ts.Records}, {"record_id", ts.RecordID}} {
		if f.v != "" {
			parts = append(parts, f.k+" "+f.v)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func stringOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
