package evidencecheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/schema"
)

// The checks in this file bind a claim to a file another program wrote, so a forger
// who edits one file must edit the others consistently too.

var shaHex = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkCorrectnessCase holds the case's declared ids to those its JUnit ran, reads its
// result file, and holds correctness/artifacts to results.json's list.
func (r *rowCheck) checkCorrectnessCase() {
	corr := r.res.Correctness
	if corr == nil {
		if r.passed(schema.StageCorrectness) {
			r.fail(schema.ResultsFile, "correctness", "the case's counts, ids and files (stage correctness passed)", "none")
		}
		return
	}
	if r.passed(schema.StageCorrectness) {
		r.truth(len(corr.Declared) > 0, schema.ResultsFile, "correctness.declared_cases", "the test ids the family declared (stage correctness passed)", "none")
		if r.corrOK {
			r.same(schema.ResultsFile, "correctness.declared_cases", strings.Join(sorted(r.corrIDs), " "), strings.Join(sorted(corr.Declared), " "),
				"the executed test cases in correctness/junit.xml")
		}
		if corr.ResultFile == "" {
			// A case may write no result file (TRTMC's newer layout); one that wrote a
			// result.json must have it named, so a failing verdict cannot be left unread.
			for _, a := range corr.Artifacts {
				if path.Base(a.Path) == "result.json" {
					r.fail(schema.ResultsFile, "correctness.result_file", "the case's own result file "+a.Path+" (stage correctness passed)", "none")
				}
			}
		}
	}
	if corr.ResultFile != "" {
		r.checkCaseResult(corr.ResultFile, corr.ResultPass)
	}
	r.checkArtifacts(corr.Artifacts)
}

// checkCaseResult holds the case's own result file to its verdict: the status pass
// ("pass" when the family stated none) when the stage passed.
func (r *rowCheck) checkCaseResult(rel, pass string) {
	if pass == "" {
		pass = "pass"
	}
	if !strings.HasPrefix(rel, schema.CorrectnessArtifacts+"/") {
		r.fail(schema.ResultsFile, "correctness.result_file", "a file under correctness/artifacts/", quote(rel))
		return
	}
	b, ok := r.read(rel)
	if !ok {
		if r.passed(schema.StageCorrectness) {
			r.fail(rel, "the correctness case's result", "present (results.json names it, stage correctness passed)", "missing")
		}
		return
	}
	var res struct {
		Status      string          `json:"status"`
		CasesTotal  *int            `json:"cases_total"`
		CasesPassed *int            `json:"cases_passed"`
		Failures    json.RawMessage `json:"failures"`
		Bundle      json.RawMessage `json:"bundle"` // an object with the sha256 before and after, where the case states them
	}
	if err := json.Unmarshal(b, &res); err != nil {
		r.fail(rel, "the correctness case's result", "JSON with a status", err.Error())
		return
	}
	if !r.passed(schema.StageCorrectness) {
		return
	}
	r.same(rel, "status", pass, res.Status, "stage correctness passed")
	// A verdict is bound to the counts and bundle stated beside it, where the case's result
	// states them (qualkit's reference family's does).
	if res.CasesTotal != nil && res.CasesPassed != nil {
		r.same(rel, "cases_passed", fmt.Sprint(*res.CasesTotal), fmt.Sprint(*res.CasesPassed), "cases_total in the same file (status pass)")
	}
	var compact bytes.Buffer
	if json.Compact(&compact, res.Failures) == nil {
		if f := compact.String(); f != "" && f != "null" && f != "[]" {
			r.fail(rel, "failures", "none (status pass)", clipText(f, 200))
		}
	}
	var bundle struct {
		Before string `json:"sha256_before"`
		After  string `json:"sha256_after"`
	}
	if json.Unmarshal(res.Bundle, &bundle) == nil && r.res.Bundle != nil {
		for _, h := range []struct{ name, v string }{{"bundle.sha256_before", bundle.Before}, {"bundle.sha256_after", bundle.After}} {
			if h.v != "" {
				r.same(rel, h.name, r.res.Bundle.SHA256, h.v, "the bundle the row built and served (results.json bundle.sha256)")
			}
		}
	}
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (r *rowCheck) checkArtifacts(listed []schema.FileHash) {
	const dir = schema.CorrectnessArtifacts + "/"
	want := map[string]string{}
	for _, f := range listed {
		want[f.Path] = f.SHA256
	}
	have := map[string]bool{}
	for _, f := range r.files {
		if strings.HasPrefix(f, dir) {
			have[f] = true
		}
	}
	for _, f := range sortedKeys(want) {
		b, ok := r.read(f)
		if !ok || !have[f] {
			r.fail(f, "a correctness artifact", "present (results.json lists it with sha256 "+prefix(want[f], 12)+")", "missing")
			continue
		}
		r.same(f, "sha256 (results.json correctness.artifacts)", want[f], bytesSHA256(b), "")
	}
	for _, f := range sortedKeys(have) {
		if _, ok := want[f]; !ok {
			r.fail(f, "a correctness artifact", "only the files the case wrote (results.json correctness.artifacts)", "not listed there")
		}
	}
}

// checkProvenance: results.json and run.json name the same tree, and a qualified row
// comes from a known commit of a clean tree.
func (r *rowCheck) checkProvenance() {
	p := r.res.Provenance
	if info := r.c.info; info != nil {
		r.same(schema.ResultsFile, "provenance.harness_commit", info.HarnessCommit, p.Commit, schema.RunFile)
		r.same(schema.ResultsFile, "provenance.harness_dirty", fmt.Sprint(info.HarnessDirty), fmt.Sprint(p.Dirty), schema.RunFile)
		r.same(schema.ResultsFile, "provenance.venv_sha256", info.VenvSHA256, p.VenvSHA256, schema.RunFile)
	}
	switch r.res.Status {
	case schema.StatusQualified:
		r.truth(!p.Dirty && shaHex.MatchString(p.Commit), schema.ResultsFile, "status qualified",
			"a known commit of a clean tree (provenance)", fmt.Sprintf("commit %q, dirty %t", p.Commit, p.Dirty))
		if info := r.c.info; info != nil {
			r.truth(!info.HarnessDirty && shaHex.MatchString(info.HarnessCommit), schema.RunFile, "harness_dirty",
				"false with a known commit (row "+r.name+" claims qualified)", fmt.Sprintf("commit %q, dirty %t", info.HarnessCommit, info.HarnessDirty))
		}
	case schema.StatusDirty:
		r.truth(p.Dirty, schema.ResultsFile, "status "+schema.StatusDirty, "provenance.harness_dirty true", "false")
	}
}

// checkRecords: a records file named as Task-time source holds every request AIPerf
// sent once the benchmark passed, and agrees with the response bodies.
func (r *rowCheck) checkRecords() {
	ts := r.res.TaskSource
	if ts == nil || ts.RecordID == "" || r.rawErr != nil {
		return
	}
	if r.recordsErr != "" {
		if r.passed(schema.StageBenchmark) {
			r.fail(schema.RecordsFile, "the server's records", "present and readable (task_time_source joins on "+ts.RecordID+", stage benchmark passed)", r.recordsErr)
		}
		return
	}
	if !r.passed(schema.StageBenchmark) {
		return
	}
	for _, q := range r.phase(phaseProfiling) {
		r.truth(r.recordIDs[q.id], schema.RecordsFile, "request "+q.id, "a line with "+ts.RecordID+" "+q.id+" (the server honours X-Request-ID)", "none")
		if ts.Body == "" || ts.Records == "" {
			continue
		}
		body, okB := r.tasks[q.id]
		rec, okR := r.recordTimes[q.id]
		r.truth(okB && okR && nearlyEqual(body, rec), schema.RecordsFile, "request "+q.id+" "+ts.Records,
			fmtNum(body)+" ms (response body "+ts.Body+" in "+schema.RawExportFile+")", fmtNum(rec)+" ms")
	}
}

// checkRecordHashes: where the server's records state each request's input and output
// sha256, the image AIPerf sent and the PNG it got back must be those.
func (r *rowCheck) checkRecordHashes() {
	if r.rawErr != nil || !r.exists(schema.RecordsFile) {
		return
	}
	byID := map[string]*request{}
	for _, q := range r.reqs {
		byID[q.id] = q
	}
	for _, rec := range r.records {
		q := byID[rec.RequestID]
		if q == nil {
			continue // the influence and controls probes, or a request AIPerf did not record
		}
		at := "request " + q.id + " "
		if rec.Input != "" && q.sent != nil {
			r.same(schema.RecordsFile, at+"input_sha256", bytesSHA256(q.sent), rec.Input, "the reference image AIPerf sent ("+schema.RawExportFile+")")
		}
		if rec.Output != "" && q.resp != nil {
			r.same(schema.RecordsFile, at+"output_sha256", bytesSHA256(q.resp), rec.Output, "the PNG the response carried ("+schema.RawExportFile+", "+q.httpRel()+")")
		}
		r.checkRecordSettings(at, rec.Settings)
	}
}

func (r *rowCheck) checkRecordSettings(at string, got map[string]any) {
	want := r.res.Settings
	if len(got) == 0 || len(want) == 0 {
		return
	}
	for _, k := range []string{"num_inference_steps", "guidance_scale", "seed"} {
		w, ok1 := want[k]
		g, ok2 := got[k]
		if !ok1 || !ok2 {
			continue
		}
		wf, err1 := strconv.ParseFloat(w, 64)
		gf, ok := g.(float64)
		if err1 != nil || !ok {
			continue
		}
		r.truth(wf == gf, schema.RecordsFile, at+"settings."+k, w+" (results.json settings."+k+")", fmtNum(gf))
	}
	if size, ok := want["size"]; ok {
		gw, okw := got["width"].(float64)
		gh, okh := got["height"].(float64)
		if okw && okh {
			r.same(schema.RecordsFile, at+"settings.width x height", size, fmt.Sprintf("%dx%d", int(gw), int(gh)), "results.json settings.size")
		}
	}
}

// checkPhysicalTiming: at concurrency 1 no request starts before the previous ended,
// warmup precedes measurement, and client time >= handler_ms >= Task time (ms rounding aside).
// Order is judged on perf_counter (CLOCK_MONOTONIC, one per host): AIPerf 0.13.0 reads it,
// then time_ns, for request_start_ns (transports/aiohttp_client.py) and adds the perf span
// for request_end_ns (utils.py § compute_time_ns), so a delay between the reads puts the
// wall end late (3.2 ms under load in CI, 2026-12-06). That delay is held to pairSlack.
func (r *rowCheck) checkPhysicalTiming() {
	if r.rawErr != nil || len(r.reqs) == 0 {
		return
	}
	const pairSlack = int64(2 * time.Second)
	perfEnd := func(q *request) int64 {
		return q.rec.StartPerfNs + q.rec.Metadata.RequestEndNs - q.rec.Metadata.RequestStartNs
	}
	lowPair := int64(math.MaxInt64)
	for _, q := range r.reqs {
		m := q.rec.Metadata
		r.truth(m.RequestEndNs >= m.RequestStartNs, schema.RawExportFile, "request "+q.id+" span", "request_end_ns at or after request_start_ns", fmt.Sprintf("ends %d ns before it starts", m.RequestStartNs-m.RequestEndNs))
		if !r.truth(q.rec.StartPerfNs > 0, schema.RawExportFile, "request "+q.id+" start_perf_ns", "the worker's perf_counter at the send", "none") {
			return
		}
		lowPair = min(lowPair, m.RequestStartNs-q.rec.StartPerfNs)
	}
	reqs := slices.Clone(r.reqs)
	slices.SortFunc(reqs, func(a, b *request) int { return cmp.Compare(a.rec.StartPerfNs, b.rec.StartPerfNs) })
	var lastWarmup, firstProfiling *request
	for i, q := range reqs {
		pair := q.rec.Metadata.RequestStartNs - q.rec.StartPerfNs
		r.truth(pair-lowPair <= pairSlack, schema.RawExportFile, "request "+q.id+" request_start_ns - start_perf_ns",
			fmt.Sprintf("within %s of the lowest, %d (one worker's time_ns and perf_counter, read one after the other)", time.Duration(pairSlack), lowPair), fmt.Sprint(pair))
		if i > 0 {
			prev := reqs[i-1]
			r.truth(q.rec.StartPerfNs >= perfEnd(prev), schema.RawExportFile, "request "+q.id+" start",
				"after request "+prev.id+" ended (concurrency 1)", fmt.Sprintf("%.3f ms before it ended (start_perf_ns plus each span)", float64(perfEnd(prev)-q.rec.StartPerfNs)/1e6))
		}
		switch {
		case q.phase == phaseWarmup && (lastWarmup == nil || perfEnd(q) > perfEnd(lastWarmup)):
			lastWarmup = q
		case q.phase == phaseProfiling && firstProfiling == nil:
			firstProfiling = q
		}
	}
	if lastWarmup != nil && firstProfiling != nil {
		r.truth(firstProfiling.rec.StartPerfNs >= perfEnd(lastWarmup), schema.RawExportFile, "benchmark phases", "every warmup request ended before the first measured one started",
			fmt.Sprintf("the first measured request started %.3f ms before the last warmup request ended", float64(perfEnd(lastWarmup)-firstProfiling.rec.StartPerfNs)/1e6))
	}
	handler := map[string]float64{}
	for _, rec := range r.records {
		if rec.Timing.HandlerMs != nil {
			handler[rec.RequestID] = *rec.Timing.HandlerMs
		}
	}
	for _, q := range r.phase(phaseProfiling) {
		h, ok := handler[q.id]
		if !ok {
			continue
		}
		if q.client {
			r.truth(q.clientMs+0.01 >= h, schema.ProfileExportFile, "request "+q.id+" request_latency",
				fmt.Sprintf("at least the server's handler time, %s ms (%s timing.handler_ms)", fmtNum(h), schema.RecordsFile), fmtNum(q.clientMs)+" ms")
		}
		if task, ok := r.tasks[q.id]; ok {
			r.truth(h+0.01 >= task, schema.RecordsFile, "request "+q.id+" timing.handler_ms",
				fmt.Sprintf("at least the Task time, %s ms (%s)", fmtNum(task), r.taskSrc), fmtNum(h)+" ms")
		}
	}
}

type serverRecord struct {
	RequestID string `json:"request_id"`
	// Time: an RFC 3339 string (qualkit's servers) or seconds since the epoch (perf-serve).
	Time     json.RawMessage `json:"time"`
	Status   json.RawMessage `json:"status"` // the HTTP status, where a number
	Prompt   json.RawMessage `json:"prompt"` // the prompt, or {"sha256": ...} of it
	Input    string          `json:"input_sha256"`
	Output   string          `json:"output_sha256"`
	Settings map[string]any  `json:"settings"`
	Timing   struct {
		HandlerMs *float64 `json:"handler_ms"`
	} `json:"timing"`
	// Observation is perf-serve's latent replay (app.py @ 3878755c § execute).
	Observation struct {
		LatentReplay   *bool  `json:"latent_replay"`
		InitialLatents string `json:"initial_latents_sha256"`
	} `json:"observation"`
	doc  any // the whole line, for the fields a family's rules name
	line int // its line number in the records file
}

// loadServerRecords reads the records file once: the lines that parse, in order, and
// the JSON values of those before the first line that is not JSON, and why it is not.
func (r *rowCheck) loadServerRecords() {
	b, ok := r.read(schema.RecordsFile)
	if !ok {
		return
	}
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec := serverRecord{line: i + 1}
		if err := json.Unmarshal(line, &rec.doc); err != nil {
			if r.recordsBad == nil {
				r.recordsBad = fmt.Errorf("line %d: %w", i+1, err)
			}
			continue
		}
		if r.recordsBad == nil {
			r.recordDocs = append(r.recordDocs, rec.doc)
		}
		if json.Unmarshal(line, &rec) == nil {
			r.records = append(r.records, rec)
		}
	}
}

func (r *rowCheck) checkLatencies() {
	for _, p := range r.prof {
		v, err := p.RequestLatencyMs()
		if err != nil {
			continue // measuredTimes reports it where it matters
		}
		m := p.Metadata
		span := float64(m.RequestEndNs-m.RequestStartNs) / 1e6
		r.truth(nearlyEqualMs(v, span), schema.ProfileExportFile, "request "+m.XRequestID+" request_latency",
			fmtNum(span)+" ms (request_end_ns - request_start_ns)", fmtNum(v)+" ms")
	}
}

// nearlyEqualMs allows the float noise of turning nanoseconds into milliseconds.
func nearlyEqualMs(a, b float64) bool {
	d := a - b
	return d < 1e-6 && d > -1e-6
}

// checkNativeLogs: each native Task's log states the sha256 of the PNG in identity/;
// a row whose identity passed must have them all, a failed one what it kept.
func (r *rowCheck) checkNativeLogs() {
	if r.rawErr != nil || r.res == nil {
		return
	}
	required := r.passed(schema.StageIdentity)
	mode := ""
	if r.res.Identity != nil {
		mode = r.res.Identity.Mode
	}
	if mode == schema.NativeBatch {
		r.checkNativeBatch(required)
		return
	}
	for _, q := range r.reqs {
		if logRel := schema.NativeLog(q.index); required && !r.exists(logRel) {
			r.fail(logRel, "exact file set", "the native Task's log of request "+q.id+" (identity passed, native mode "+quote(mode)+")", "missing")
		}
	}
	pat := r.res.NativeOutputPattern
	if pat == "" {
		return
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		r.fail(schema.ResultsFile, "native_output_pattern", "a regular expression", err.Error())
		return
	}
	for _, q := range r.reqs {
		logRel := schema.NativeLog(q.index)
		log, ok := r.read(logRel)
		if !ok || q.native == nil {
			continue // the layout check says what is missing
		}
		m := re.FindSubmatch(log)
		if m == nil || len(m) != 2 {
			r.fail(logRel, "the sha256 the native Task wrote", "a line matching "+pat, "none")
			continue
		}
		r.same(q.nativeRel(), "sha256", string(m[1]), bytesSHA256(q.native), "what the native Task's log says it wrote ("+logRel+")")
	}
}

func sorted(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (r *rowCheck) checkServerIdentity() {
	if r.res.ServerIdentity != "" && r.passed(schema.StageServe) && !r.exists(schema.ServerIdentityFile) {
		r.fail(schema.ServerIdentityFile, "exact file set", "the server's answer at "+r.res.ServerIdentity+" (results.json server_identity)", "missing")
	}
}

// batchReport is a batch native Task's report (schema.NativeBatchFile): its first line
// and one line per replay.
type batchReport struct {
	read   bool // the row has one
	first  string
	loadMs *float64 // nil when the first line does not parse: nothing else is read
	head   batchHead
	lines  []batchLine
	taskS  float64           // the sum of the replays' task_ms, in seconds
	sha    map[string]string // each replay's output_sha256, by id
}

type batchLine struct {
	ID     string  `json:"id"`
	Output string  `json:"output"`
	SHA256 string  `json:"output_sha256"`
	TaskMs float64 `json:"task_ms"`
	n      int     // its line number
	text   string  // as written
	ok     bool    // it parses and names an id
}

func (r *rowCheck) loadBatchReport() {
	if r.res == nil || r.res.Identity == nil || r.res.Identity.Mode != schema.NativeBatch || r.rawErr != nil {
		return
	}
	b, ok := r.read(schema.NativeBatchFile)
	if !ok {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	r.batch = batchReport{read: true, first: lines[0], sha: map[string]string{}}
	var head struct {
		LoadMs *float64 `json:"load_ms"`
		batchHead
	}
	if err := json.Unmarshal([]byte(lines[0]), &head); err != nil || head.LoadMs == nil {
		return
	}
	r.batch.loadMs, r.batch.head = head.LoadMs, head.batchHead
	for i, l := range lines[1:] {
		line := batchLine{n: i + 2, text: l}
		line.ok = json.Unmarshal([]byte(l), &line) == nil && line.ID != ""
		if line.ok {
			r.batch.taskS += line.TaskMs / 1000
			r.batch.sha[line.ID] = line.SHA256
		}
		r.batch.lines = append(r.batch.lines, line)
	}
}

// checkNativeBatch: the batch report names every request once, with its file and sha256
// (every request when required: identity passed).
func (r *rowCheck) checkNativeBatch(required bool) {
	const report = schema.NativeBatchFile
	if !r.exists(schema.NativeBatchLog) {
		r.fail(schema.NativeBatchLog, "exact file set", "the batch native Task's log (native mode batch)", "missing")
	}
	if !required && !r.exists(report) {
		return // the batch failed before it reported
	}
	rep := r.batch
	if !rep.read {
		r.fail(report, "exact file set", "the batch native Task's report (native mode batch)", "missing")
		return
	}
	if rep.loadMs == nil {
		r.fail(report, "line 1", `{"load_ms": ...}`, quote(rep.first))
		return
	}
	r.sameFloat(schema.ResultsFile, "identity.native_load_ms", *rep.loadMs, r.res.Identity.LoadMs, report+" line 1")
	byID := map[string]batchLine{}
	for _, line := range rep.lines {
		if !line.ok {
			r.fail(report, fmt.Sprintf("line %d", line.n), `{"id", "output", "output_sha256", "task_ms"}`, quote(line.text))
			continue
		}
		if _, dup := byID[line.ID]; dup {
			r.fail(report, "replay "+line.ID, "one line", "two")
		}
		byID[line.ID] = line
	}
	if required {
		r.same(report, "replays", fmt.Sprint(len(r.reqs)), fmt.Sprint(len(byID)), "one per request in "+schema.RawExportFile)
	}
	for _, q := range r.reqs {
		l, ok := byID[q.id]
		if !ok {
			if required {
				r.fail(report, "replay "+q.id, "a line for every request in "+schema.RawExportFile, "none")
			}
			continue
		}
		r.truth(strings.HasSuffix(l.Output, "/"+r.name+"/"+q.nativeRel()), report, "replay "+q.id+" output", "this row's "+q.nativeRel(), quote(l.Output))
		if q.native != nil {
			r.same(q.nativeRel(), "sha256", l.SHA256, bytesSHA256(q.native), "what the batch native Task reported ("+report+")")
		}
	}
}

// sameFloat compares two numbers as the evidence prints them (three decimals).
func (r *rowCheck) sameFloat(file, claim string, want, got float64, source string) bool {
	return r.same(file, claim, fmt.Sprintf("%.3f", want), fmt.Sprintf("%.3f", got), source)
}

// checkTimeBudget: the time budget adds up, and its served Task calls are one per request
// through the server (AIPerf's, influence's three, controls' answered 200).
func (r *rowCheck) checkTimeBudget() {
	tb := r.res.TimeBudget
	if tb == nil {
		r.truth(r.res.Status == schema.StatusNotRun, schema.ResultsFile, "time_budget", "present in every row that ran", "none")
		return
	}
	for _, st := range r.res.Stages {
		r.sameFloat(schema.ResultsFile, "time_budget.stages_s."+st.Name, st.WallS, tb.Stages[st.Name], "stages["+st.Name+"].wall_s")
	}
	r.same(schema.ResultsFile, "time_budget.stages_s", fmt.Sprint(len(r.res.Stages)), fmt.Sprint(len(tb.Stages)), "one per stage")
	m := tb.Model
	r.checkTools(tb)
	parts := m.LegacyToolsS + m.BuildS + m.CorrectnessS + m.ServerLoadS + m.NativeLoadS + m.ServedTaskS + m.NativeTaskS
	r.truth(math.Abs(parts-tb.ModelWorkS) < 0.01, schema.ResultsFile, "time_budget.model_work_s", fmt.Sprintf("%.3f, the sum of model_work's parts", parts), fmt.Sprintf("%.3f", tb.ModelWorkS))
	r.truth(math.Abs(tb.WallS-tb.ModelWorkS-tb.HarnessS) < 0.01, schema.ResultsFile, "time_budget.harness_s", fmt.Sprintf("%.3f, wall_s - model_work_s", tb.WallS-tb.ModelWorkS), fmt.Sprintf("%.3f", tb.HarnessS))
	if tb.ModelWorkS > 0 {
		r.truth(math.Abs(tb.WallS/tb.ModelWorkS-tb.Ratio) < 0.01, schema.ResultsFile, "time_budget.ratio", fmt.Sprintf("%.3f, wall_s / model_work_s", tb.WallS/tb.ModelWorkS), fmt.Sprintf("%.3f", tb.Ratio))
	}
	var stages float64
	for _, st := range r.res.Stages {
		stages += st.WallS
	}
	r.truth(tb.WallS+0.001 >= stages, schema.ResultsFile, "time_budget.wall_s", fmt.Sprintf("at least the stages' sum, %.3f s", stages), fmt.Sprintf("%.3f", tb.WallS))
	var benchTaskS float64
	for _, q := range r.reqs {
		benchTaskS += r.tasks[q.id] / 1000
	}
	r.truth(m.ServedTaskS+0.002 >= benchTaskS, schema.ResultsFile, "time_budget.model_work.served_task_s",
		fmt.Sprintf("at least %.3f, the benchmark's Task times (%s)", benchTaskS, r.taskSrc), fmt.Sprintf("%.3f", m.ServedTaskS))
	if !schema.HasControls(r.res.Schema) && r.passed(schema.StageInfluence) && r.rawErr == nil {
		r.same(schema.ResultsFile, "time_budget.model_work.served_task_calls", fmt.Sprint(len(r.reqs)+3), fmt.Sprint(m.ServedTasks),
			"every request in "+schema.RawExportFile+" and the influence probe's three (schema "+r.res.Schema+": no controls stage)")
	}
	if r.passed(schema.StageControls) && r.rawErr == nil {
		r.same(schema.ResultsFile, "time_budget.model_work.served_task_calls", fmt.Sprint(len(r.reqs)+3+r.controlsServed()), fmt.Sprint(m.ServedTasks),
			"every request in "+schema.RawExportFile+", the influence probe's three and the controls probes answered 200 ("+schema.ControlsFile+")")
	}
	if r.passed(schema.StageIdentity) && r.res.Identity != nil {
		r.same(schema.ResultsFile, "time_budget.native_mode", r.res.Identity.Mode, tb.NativeMode, "identity.native_mode")
		if tb.NativeMode == schema.NativeBatch {
			r.same(schema.ResultsFile, "time_budget.native_loads", "1", fmt.Sprint(tb.NativeLoads), "one batch process")
			rep := r.batch
			load := math.Max(0, r.batchWallS-rep.taskS-rep.head.WaitedMs/1000)
			r.truth(math.Abs(load-m.NativeLoadS) < 0.002, schema.ResultsFile, "time_budget.model_work.native_load_s",
				fmt.Sprintf("%.3f, the batch process's wall in commands.jsonl less its task_ms and waited_ms in %s", load, schema.NativeBatchFile), fmt.Sprintf("%.3f", m.NativeLoadS))
			r.truth(math.Abs(rep.taskS-m.NativeTaskS) < 0.002, schema.ResultsFile, "time_budget.model_work.native_task_s",
				fmt.Sprintf("%.3f, the sum of task_ms in %s", rep.taskS, schema.NativeBatchFile), fmt.Sprintf("%.3f", m.NativeTaskS))
		}
		r.same(schema.ResultsFile, "time_budget.model_work.native_task_calls", fmt.Sprint(r.res.Identity.Total), fmt.Sprint(m.NativeTasks), "one per replay")
	}
	r.checkOrder()
}

// checkTools: from results.json schema 3 on, tools_s is harness time, the tool commands'
// wall; schema 1 and 2 counted it as model_work.tools_s.
func (r *rowCheck) checkTools(tb *schema.TimeBudget) {
	if schema.ToolsAreModelWork(r.res.Schema) {
		return
	}
	r.truth(tb.Model.LegacyToolsS == 0, schema.ResultsFile, "time_budget.model_work.tools_s",
		"none: the tool commands are harness time (time_budget.tools_s)", fmt.Sprintf("%.3f", tb.Model.LegacyToolsS))
	if r.cmds == nil {
		return
	}
	var tools float64
	for _, c := range r.cmds {
		if c.Stage == schema.StageBuild && toolsLog.MatchString(c.Log) {
			tools += c.WallS
		}
	}
	r.truth(math.Abs(tools-tb.ToolsS) < 0.002, schema.ResultsFile, "time_budget.tools_s",
		fmt.Sprintf("%.3f, the wall of the tool commands (%s) in %s", tools, schema.ToolsLog(1), schema.CommandsFile), fmt.Sprintf("%.3f", tb.ToolsS))
}

var toolsLog = regexp.MustCompile(`^` + regexp.QuoteMeta(schema.BuildDir) + `/tools-[0-9]+\.log$`)

// windowSlack absorbs the gap between two clocks of one host read by two processes.
const windowSlack = 50 * time.Millisecond

// checkWindows: commands fit in the row's lease and their stage's wall (the server lives
// from serve to controls), and AIPerf's requests inside the AIPerf command.
func (r *rowCheck) checkWindows(recs []schema.CommandRecord, aiperf *schema.CommandRecord) {
	const f = schema.CommandsFile
	lease := r.res.Lease
	if lease != nil && !lease.Start.IsZero() && !lease.End.IsZero() {
		span := lease.End.Sub(lease.Start)
		if tb := r.res.TimeBudget; tb != nil {
			r.truth(time.Duration(tb.WallS*float64(time.Second)) <= span+windowSlack, schema.ResultsFile, "time_budget.wall_s",
				fmt.Sprintf("at most the lease's span, %.3f s (lease.start to lease.end)", span.Seconds()), fmt.Sprintf("%.3f", tb.WallS))
		}
		for _, c := range recs {
			if c.Start.IsZero() {
				continue
			}
			r.truth(!c.Start.Before(lease.Start.Add(-windowSlack)) && !c.End().After(lease.End.Add(windowSlack)), f,
				c.Stage+" command "+baseName(firstArg(c.Args)), "inside the row's lease ("+lease.Start.Format(time.RFC3339Nano)+" to "+lease.End.Format(time.RFC3339Nano)+")",
				c.Start.Format(time.RFC3339Nano)+" to "+c.End().Format(time.RFC3339Nano))
		}
	}
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, c := range recs {
		if c.During != "" {
			r.checkEarlyCommand(c)
			continue
		}
		if c.Start.IsZero() || c.Stage == schema.StageServe {
			continue
		}
		if t, ok := first[c.Stage]; !ok || c.Start.Before(t) {
			first[c.Stage] = c.Start
		}
		if t, ok := last[c.Stage]; !ok || c.End().After(t) {
			last[c.Stage] = c.End()
		}
	}
	for _, st := range r.res.Stages {
		if t0, ok := first[st.Name]; ok {
			span := last[st.Name].Sub(t0)
			r.truth(span <= time.Duration(st.WallS*float64(time.Second))+windowSlack, schema.ResultsFile, "stages["+st.Name+"].wall_s",
				fmt.Sprintf("at least the span of its commands in %s, %.3f s", f, span.Seconds()), fmt.Sprintf("%.3f", st.WallS))
		}
	}
	if aiperf == nil || aiperf.Start.IsZero() || r.rawErr != nil {
		return
	}
	from, to := aiperf.Start.Add(-windowSlack).UnixNano(), aiperf.End().Add(windowSlack).UnixNano()
	for _, q := range r.reqs {
		m := q.rec.Metadata
		r.truth(m.RequestStartNs >= from && m.RequestEndNs <= to, schema.RawExportFile, "request "+q.id+" time",
			"inside the AIPerf command's run ("+f+": "+aiperf.Start.Format(time.RFC3339Nano)+", "+fmtNum(aiperf.WallS)+" s)",
			fmt.Sprintf("%d to %d ns", m.RequestStartNs, m.RequestEndNs))
	}
}
