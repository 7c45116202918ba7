package evidencecheck

import (
	"encoding/json"
	"fmt"
	"image"
	"reflect"
	"strings"

	"qualkit/internal/controls"
	"qualkit/internal/judge"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// checkControls re-derives the controls stage with controls.Judge from the row's files;
// verdicts and figures must be controls.json's and results.json's.
func (r *rowCheck) checkControls() {
	b, ok := r.read(schema.ControlsFile)
	if !ok {
		r.truth(r.res.Controls == nil, schema.ResultsFile, "controls", "absent without "+schema.ControlsFile, "present")
		return
	}
	var got schema.ControlsResult
	if err := json.Unmarshal(b, &got); err != nil {
		r.fail(schema.ControlsFile, "controls", "the controls result", err.Error())
		return
	}
	if r.res.Controls != nil {
		r.truth(reflect.DeepEqual(*r.res.Controls, got), schema.ResultsFile, "controls", "the same as "+schema.ControlsFile, "another result")
	}
	if got.Cut { // the stage stopped before its verdict: nothing to judge again
		r.truth(!r.passed(schema.StageControls), schema.ControlsFile, "cut", "a controls stage that did not pass", "a passed one")
		r.truth(len(got.Controls) == 0 && len(got.Refused) == 0, schema.ControlsFile, "cut", "no verdict", "verdicts")
		return
	}
	records := map[string]serverRecord{}
	for _, rec := range r.records {
		records[rec.RequestID] = rec
	}
	probes := append([]schema.ControlProbe(nil), got.Probes...)
	outs := map[string]image.Image{}
	for i := range probes {
		p := &probes[i]
		if rec, ok := records[p.RequestID]; ok && len(rec.Status) > 0 {
			r.same(schema.RecordsFile, "request "+p.RequestID+" status", fmt.Sprint(p.Status), string(rec.Status), schema.ControlsFile)
		}
		if p.Status != 200 {
			continue
		}
		if controls.ByStepTime(got.Declared, *p) {
			v, err := schema.NumberAt(recordDoc(records, p.RequestID), got.Declared.StepTime)
			if err != nil {
				r.fail(schema.RecordsFile, "request "+p.RequestID+" "+got.Declared.StepTime, "the time the steps are measured by", err.Error())
			}
			p.TaskMS = v
		} else if v, ok := r.recordTimes[p.RequestID]; ok {
			p.TaskMS = v
		}
		if p.File != schema.ControlsPNG(p.Name) {
			r.fail(schema.ControlsFile, "probe "+p.Name+" file", schema.ControlsPNG(p.Name), p.File)
			continue
		}
		png, ok := r.read(p.File)
		if !ok {
			r.fail(p.File, "probe "+p.Name+" output", "the PNG controls.json names", "missing")
			continue
		}
		img, err := judge.DecodePNG(png)
		if err != nil {
			r.fail(p.File, "probe "+p.Name+" output", "a PNG", err.Error())
			continue
		}
		outs[p.Name] = img
		if rec, ok := records[p.RequestID]; ok && rec.Output != "" {
			r.same(schema.RecordsFile, "request "+p.RequestID+" output_sha256", bytesSHA256(png), rec.Output, p.File)
		}
	}
	var work []controls.Asked
	for _, q := range r.reqs {
		if q.rec.Failed() || q.sentErr != nil {
			continue
		}
		work = append(work, controls.Asked{RequestID: q.id, Settings: q.settings, Record: recordDoc(records, q.id)})
	}
	for _, p := range probes {
		if p.Status == 200 {
			work = append(work, controls.Asked{RequestID: p.RequestID, Settings: p.Settings, Record: recordDoc(records, p.RequestID)})
		}
	}
	v := controls.Judge(controls.Input{Decl: got.Declared, Probes: probes, Outputs: outs, Gate: r.controlsGate(), Work: work})
	want := v.Result
	for i, c := range want.Controls {
		at := "controls.controls[" + c.Field + "]"
		if i >= len(got.Controls) {
			r.fail(schema.ControlsFile, at, "the verdict the judge gives ("+c.Figure+")", "none")
			continue
		}
		r.same(schema.ControlsFile, at+".verdict", c.Verdict, got.Controls[i].Verdict, "controls.Judge on the PNGs and records")
		r.same(schema.ControlsFile, at+".figure", c.Figure, got.Controls[i].Figure, "controls.Judge on the PNGs and records")
		r.truth(reflect.DeepEqual(c, got.Controls[i]), schema.ControlsFile, at, fmt.Sprintf("%+v (controls.Judge)", c), fmt.Sprintf("%+v", got.Controls[i]))
	}
	r.same(schema.ControlsFile, "controls.controls", fmt.Sprint(len(want.Controls)), fmt.Sprint(len(got.Controls)), "one per declared control")
	r.truth(reflect.DeepEqual(want.Refused, got.Refused), schema.ControlsFile, "controls.refused", fmt.Sprintf("%+v (controls.Judge)", want.Refused), fmt.Sprintf("%+v", got.Refused))
	r.truth(reflect.DeepEqual(want.Work, got.Work), schema.ControlsFile, "controls.work", fmt.Sprintf("%+v (controls.Judge on %s)", want.Work, schema.RecordsFile), fmt.Sprintf("%+v", got.Work))
	r.same(schema.ControlsFile, "controls.quality_failures", fmt.Sprint(len(want.Quality)), fmt.Sprint(len(got.Quality)), "the quality gates on the probes' PNGs")
	if r.passed(schema.StageControls) {
		errText := "none"
		if v.Err != nil {
			errText = strings.ReplaceAll(v.Err.Error(), "\n  - ", " - ")
		}
		r.truth(v.Err == nil, schema.ControlsFile, "stage controls passed", "every control honoured and every refusal a 4xx naming its field", errText)
	}
}

func recordDoc(records map[string]serverRecord, id string) any {
	if rec, ok := records[id]; ok {
		return rec.doc
	}
	return nil
}

// controlsGate is the gate every output meets, on the influence image the probes sent.
func (r *rowCheck) controlsGate() func(schema.ControlProbe, image.Image) []string {
	if r.fx == nil || len(r.fx.Influence.Images) == 0 {
		return nil
	}
	b, ok := r.read(schema.Fixture(r.fx.Influence.Images[0]))
	if !ok {
		return nil
	}
	src, err := judge.DecodePNG(b)
	if err != nil {
		return nil
	}
	var c schema.QualityCriteria
	if r.res.Quality != nil {
		c = r.res.Quality.Criteria
	}
	return func(_ schema.ControlProbe, out image.Image) []string {
		o := judge.ToNRGBA(out)
		var miss []string
		if judge.IsConstant(o) {
			miss = append(miss, "output is a constant image")
		} else if f := judge.ChangedFraction(src, o); f < judge.MinChangedFraction {
			miss = append(miss, fmt.Sprintf("output is the input image unchanged or only resized: %.1f %% of its pixels differ", 100*f))
		}
		return append(miss, quality.Judge(c, quality.Measure(out), quality.Measure(src))...)
	}
}

// controlsResult is nil when absent or unreadable.
func (r *rowCheck) controlsResult() *schema.ControlsResult {
	b, ok := r.read(schema.ControlsFile)
	if !ok {
		return nil
	}
	var got schema.ControlsResult
	if json.Unmarshal(b, &got) != nil {
		return nil
	}
	return &got
}

func (r *rowCheck) controlProbeIDs() map[string]bool {
	ids := map[string]bool{}
	if c := r.controlsResult(); c != nil {
		for _, p := range c.Probes {
			ids[p.RequestID] = true
		}
	}
	return ids
}

// controlsServed counts probes answered 200 (each a Task call).
func (r *rowCheck) controlsServed() int {
	n := 0
	if c := r.controlsResult(); c != nil {
		for _, p := range c.Probes {
			if p.Status == 200 {
				n++
			}
		}
	}
	return n
}
