package evidencecheck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// The checks in this file read the files no claim was derived from before, so no file of
// a row is kept unread; each is held to what another file says of the same.

// checkPreflight: preflight.json is this run's (qualification flag, wall, leased GPUs);
// a passed preflight found nothing missing, its probes are the kept logs, none failed.
func (r *rowCheck) checkPreflight() {
	const f = schema.PreflightFile
	b, ok := r.read(f)
	if !ok {
		return // the layout check says it is missing
	}
	var pf struct {
		Qualification *bool    `json:"qualification_run"`
		WallS         *float64 `json:"wall_s"`
		Readiness     struct {
			Requirements []struct {
				What string `json:"what"`
			} `json:"requirements"`
			Probes []struct {
				Name  string `json:"name"`
				Log   string `json:"log"`
				Error string `json:"error"`
			} `json:"probes"`
			Selected []struct {
				UUID string `json:"uuid"`
			} `json:"gpus_selected"`
		} `json:"readiness"`
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		r.fail(f, "valid JSON", "what preflight found", err.Error())
		return
	}
	if info := r.c.info; info != nil && pf.Qualification != nil {
		r.same(f, "qualification_run", fmt.Sprint(info.Qualification), fmt.Sprint(*pf.Qualification), schema.RunFile)
	}
	if st, ok := r.res.Stage(schema.StagePreflight); ok && pf.WallS != nil {
		r.truth(*pf.WallS <= st.WallS+0.001, f, "wall_s", fmt.Sprintf("at most the stage's wall, %.3f s (results.json stages[preflight])", st.WallS), fmt.Sprintf("%.3f", *pf.WallS))
	}
	if !r.passed(schema.StagePreflight) {
		return
	}
	var missing []string
	for _, q := range pf.Readiness.Requirements {
		missing = append(missing, q.What)
	}
	r.truth(len(missing) == 0, f, "readiness.requirements", "none missing (stage preflight passed)", clipText(strings.Join(missing, "; "), 300))
	logs := map[string]bool{}
	for _, p := range pf.Readiness.Probes {
		logs[p.Log] = true
		r.truth(p.Error == "", f, "probe "+p.Name, "no error (stage preflight passed)", clipText(p.Error, 200))
		r.truth(r.exists(p.Log), p.Log, "probe "+p.Name+"'s log", "kept ("+f+" names it)", "missing")
	}
	for _, file := range r.files {
		if strings.HasPrefix(file, schema.PreflightDir+"/") {
			r.truth(logs[file], file, "a probe's log", "one of the probes "+f+" records", "not among them")
		}
	}
	if lease := r.res.Lease; lease != nil && len(pf.Readiness.Selected) > 0 {
		var got []string
		for _, g := range pf.Readiness.Selected {
			got = append(got, g.UUID)
		}
		r.same(f, "readiness.gpus_selected", strings.Join(sorted(lease.GPUs), " "), strings.Join(sorted(got), " "), "results.json lease.gpus")
	}
}

// checkQualityFile: quality/quality.json is results.json's quality.
func (r *rowCheck) checkQualityFile() {
	const f = schema.QualityFile
	b, ok := r.read(f)
	if !ok {
		return
	}
	var got schema.QualitySummary
	if err := json.Unmarshal(b, &got); err != nil {
		r.fail(f, "valid JSON", "the quality stage's measures", err.Error())
		return
	}
	if r.res.Quality == nil {
		r.fail(f, "the quality stage's measures", "none (results.json has no quality)", "a file")
		return
	}
	var want, have any
	wb, _ := json.Marshal(r.res.Quality)
	hb, _ := json.Marshal(got)
	json.Unmarshal(wb, &want)
	json.Unmarshal(hb, &have)
	if at, w, g, differ := jsonDiff(want, have, "quality"); differ {
		r.fail(f, at, w+" (results.json quality, as re-derived from the PNGs)", g)
		return
	}
	r.c.rep.Claims++
}

// jsonDiff returns the first path where two decoded JSON values differ, and both values.
func jsonDiff(want, got any, at string) (string, string, string, bool) {
	text := func(v any) string {
		b, _ := json.Marshal(v)
		return clipText(string(b), 200)
	}
	wm, ok1 := want.(map[string]any)
	gm, ok2 := got.(map[string]any)
	if ok1 && ok2 {
		keys := map[string]any{}
		for k := range wm {
			keys[k] = nil
		}
		for k := range gm {
			keys[k] = nil
		}
		for _, k := range sortedKeys(keys) {
			if p, w, g, d := jsonDiff(wm[k], gm[k], strings.TrimPrefix(at+"."+k, ".")); d {
				return p, w, g, d
			}
		}
		return "", "", "", false
	}
	wl, ok1 := want.([]any)
	gl, ok2 := got.([]any)
	if ok1 && ok2 && len(wl) == len(gl) {
		for i := range wl {
			if p, w, g, d := jsonDiff(wl[i], gl[i], fmt.Sprintf("%s[%d]", at, i)); d {
				return p, w, g, d
			}
		}
		return "", "", "", false
	}
	if reflect.DeepEqual(want, got) {
		return "", "", "", false
	}
	return at, text(want), text(got), true
}

var aiperfPhaseDone = regexp.MustCompile(`Phase (\S+) \((\S+)\) complete \| completed=(\d+), cancelled=(\d+), errors=(\d+)`)

// checkAIPerfLogs: AIPerf's logs say each phase completed the raw export's requests,
// none cancelled, as many in error as failed there.
func (r *rowCheck) checkAIPerfLogs() {
	if r.rawErr != nil || !r.passed(schema.StageBenchmark) {
		return
	}
	for _, f := range []string{schema.AIPerfLog, schema.AIPerfOwnLog} {
		b, ok := r.read(f)
		if !ok {
			continue
		}
		done := map[string][]string{}
		for _, m := range aiperfPhaseDone.FindAllStringSubmatch(string(b), -1) {
			done[m[2]] = m[3:]
		}
		for _, phase := range []string{phaseWarmup, phaseProfiling} {
			reqs := r.phase(phase)
			if len(reqs) == 0 && done[phase] == nil {
				continue
			}
			failed := 0
			for _, q := range reqs {
				if q.rec.Failed() {
					failed++
				}
			}
			got := "no such line"
			if d := done[phase]; d != nil {
				got = fmt.Sprintf("completed=%s, cancelled=%s, errors=%s", d[0], d[1], d[2])
			}
			r.same(f, "phase "+phase+" complete", fmt.Sprintf("completed=%d, cancelled=0, errors=%d", len(reqs), failed), got,
				"the "+phase+" records of "+schema.RawExportFile+" (stage benchmark passed)")
		}
	}
	b, ok := r.read(schema.ReadyFile)
	if !ok {
		return
	}
	var ready struct {
		Ready        bool `json:"ready"`
		WasCancelled bool `json:"was_cancelled"`
		Partial      bool `json:"partial"`
	}
	err := json.Unmarshal(b, &ready)
	r.truth(err == nil && ready.Ready && !ready.WasCancelled && !ready.Partial, schema.ReadyFile, "AIPerf's results",
		"ready, not cancelled, not partial (stage benchmark passed)", clipText(string(bytes.TrimSpace(b)), 200))
}

// checkAIPerfInputs: AIPerf's input file is the fixtures' pairs as the protocol writes
// them, and artifacts/inputs.json holds those images and prompts in order.
func (r *rowCheck) checkAIPerfInputs() {
	const f = schema.AIPerfInputs
	got, ok := r.read(f)
	if !ok || r.fx == nil {
		return
	}
	proto := r.proto
	if t, isTask := proto.(wire.Task); isTask && slices.ContainsFunc(r.reqs, func(q *request) bool { return q.latentSeed != nil }) {
		t.LatentSeed = true // the requests carried latent_seed: the row's protocol sends it
		proto = t
	}
	settings := map[string]string{}
	for k, v := range r.fx.Settings {
		settings[k] = wire.JSONText(v)
	}
	images := map[string][]byte{}
	var want bytes.Buffer
	for _, p := range r.fx.Pairs {
		img, ok := r.read(schema.Fixture(p.Image))
		if !ok {
			return // checkFixtures says what is missing
		}
		images[p.ID] = img
		line, err := proto.AIPerfInput(wire.Request{Image: img, Prompt: p.Instruction, Settings: settings})
		if err != nil {
			r.fail(f, "pair "+p.ID, "a line the "+proto.Name()+" protocol writes", err.Error())
			return
		}
		want.Write(line)
	}
	r.truth(bytes.Equal(want.Bytes(), got), f, "AIPerf's input", "the fixtures' pairs as the "+proto.Name()+" protocol writes them (fixtures/manifest.json)", firstDiff(want.Bytes(), got))
	b, ok := r.read(schema.DatasetFile)
	if !ok || !proto.Traits().AIPerfInputsFile {
		return
	}
	var ds struct {
		Data []struct {
			Payloads []struct {
				Prompt string `json:"prompt"`
				Image  struct {
					B64 string `json:"b64_data"`
				} `json:"image"`
			} `json:"payloads"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &ds); err != nil {
		r.fail(schema.DatasetFile, "valid JSON", "the dataset AIPerf loaded", err.Error())
		return
	}
	r.same(schema.DatasetFile, "entries", fmt.Sprint(len(r.fx.Pairs)), fmt.Sprint(len(ds.Data)), "the lines of "+f)
	for i, d := range ds.Data {
		if i >= len(r.fx.Pairs) || len(d.Payloads) != 1 {
			break
		}
		p, pl := r.fx.Pairs[i], d.Payloads[0]
		img, err := base64.StdEncoding.DecodeString(pl.Image.B64)
		r.truth(pl.Prompt == p.Instruction && err == nil && bytes.Equal(img, images[p.ID]), schema.DatasetFile, fmt.Sprintf("data[%d]", i),
			fmt.Sprintf("pair %s of %s: %q with its image (sha256 %s)", p.ID, f, p.Instruction, prefix(bytesSHA256(images[p.ID]), 12)),
			fmt.Sprintf("%q with an image of sha256 %s", pl.Prompt, prefix(bytesSHA256(img), 12)))
	}
}
