package evidencecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// The checks in this file hold AIPerf's account of the requests to the server's records
// and log (judge.ServerLog): two processes, so an edit of one leaves the other behind.

// receiptSlack: two processes read the wall clock; measured on every committed run the
// receipt was 0.36 ms after start at least, 1.2 ms before end.
const receiptSlack = time.Millisecond

type influenceProbe struct {
	name, id, png, fixture string
}

func (r *rowCheck) influenceProbes() map[string]influenceProbe {
	out := map[string]influenceProbe{}
	for i, name := range schema.InfluenceProbes {
		p := influenceProbe{name: name, id: schema.InfluenceRequestID(name), png: schema.InfluencePNG(name)}
		if r.fx != nil && len(r.fx.Influence.Images) == 2 {
			p.fixture = r.fx.Influence.Images[min(i/2, 1)] // a and a-repeat the first image, b the second
		}
		out[p.id] = p
	}
	return out
}

// checkServerRecords: every records line is an AIPerf request received inside its span,
// a controls probe or an influence probe; once the benchmark passed, every request has one.
func (r *rowCheck) checkServerRecords() {
	if r.rawErr != nil || !r.exists(schema.RecordsFile) {
		return
	}
	byID := map[string]*request{}
	for _, q := range r.reqs {
		byID[q.id] = q
	}
	probes := r.influenceProbes()
	controlProbes := r.controlProbeIDs()
	benchPassed := r.passed(schema.StageBenchmark)
	seen := map[string]int{}
	for _, rec := range r.records {
		seen[rec.RequestID]++
		if seen[rec.RequestID] == 2 {
			r.fail(schema.RecordsFile, "request "+rec.RequestID, "one line per request (the server records each once)", fmt.Sprintf("a second at line %d", rec.line))
		}
		if q := byID[rec.RequestID]; q != nil {
			r.checkReceipt(q, rec)
			continue
		}
		if p, ok := probes[rec.RequestID]; ok {
			r.checkInfluenceRecord(p, rec)
			continue
		}
		if controlProbes[rec.RequestID] {
			continue // checkControls holds it to controls.json
		}
		if benchPassed {
			r.fail(schema.RecordsFile, fmt.Sprintf("line %d: request %s", rec.line, rec.RequestID),
				"a request of "+schema.RawExportFile+", an influence probe or a controls probe (stage benchmark passed: AIPerf recorded every request it sent)", "neither")
		}
	}
	if benchPassed {
		for _, q := range r.phase(phaseWarmup) { // the measured ones: checkRecords
			r.truth(seen[q.id] > 0, schema.RecordsFile, "request "+q.id, "a line for the warmup request too (the server records every request)", "none")
		}
	}
}

// recordTime: ok is false when the line states no time.
func recordTime(raw json.RawMessage) (t time.Time, ok bool, err error) {
	if emptyJSON(raw) {
		return time.Time{}, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err = time.Parse(time.RFC3339Nano, s)
		return t, true, err
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil {
		return time.Time{}, true, err
	}
	whole := math.Floor(secs)
	return time.Unix(int64(whole), int64((secs-whole)*1e9)), true, nil
}

func (r *rowCheck) checkReceipt(q *request, rec serverRecord) {
	at, ok, err := recordTime(rec.Time)
	if !ok || q.rec.Failed() {
		// No time stated; or a request AIPerf recorded as failed, whose span it may not
		// time (a 500 of the status-500 negative control: its start and end one instant).
		return
	}
	if err != nil {
		r.fail(schema.RecordsFile, "request "+q.id+" time", "an RFC 3339 time or seconds since the epoch", quote(string(rec.Time)))
		return
	}
	m := q.rec.Metadata
	from, to := time.Unix(0, m.RequestStartNs).Add(-receiptSlack), time.Unix(0, m.RequestEndNs).Add(receiptSlack)
	r.truth(!at.Before(from) && !at.After(to), schema.RecordsFile, "request "+q.id+" time",
		fmt.Sprintf("inside AIPerf's span of the request, %s to %s (%s request_start_ns, request_end_ns, %s either side)",
			time.Unix(0, m.RequestStartNs).UTC().Format(time.RFC3339Nano), time.Unix(0, m.RequestEndNs).UTC().Format(time.RFC3339Nano), schema.RawExportFile, receiptSlack),
		strings.Trim(string(rec.Time), `"`))
}

// checkInfluenceRecord: the record names the fixture sent and the PNG kept.
func (r *rowCheck) checkInfluenceRecord(p influenceProbe, rec serverRecord) {
	at := "request " + p.id + " "
	if b, ok := r.read(p.png); ok && rec.Output != "" {
		r.same(schema.RecordsFile, at+"output_sha256", bytesSHA256(b), rec.Output, p.png)
	}
	if p.fixture != "" && rec.Input != "" {
		if b, ok := r.read(schema.Fixture(p.fixture)); ok {
			r.same(schema.RecordsFile, at+"input_sha256", bytesSHA256(b), rec.Input, schema.Fixture(p.fixture)+", the influence image the manifest names")
		}
	}
	if r.fx != nil && len(rec.Prompt) > 0 {
		var text string
		var hashed struct {
			SHA256 string `json:"sha256"`
		}
		want := r.fx.Influence.Instruction
		switch {
		case json.Unmarshal(rec.Prompt, &text) == nil:
			r.same(schema.RecordsFile, at+"prompt", want, text, "fixtures/manifest.json influence.instruction")
		case json.Unmarshal(rec.Prompt, &hashed) == nil && hashed.SHA256 != "":
			r.same(schema.RecordsFile, at+"prompt.sha256", bytesSHA256([]byte(want)), hashed.SHA256, "fixtures/manifest.json influence.instruction")
		}
	}
}

type serverLogLine struct {
	n          int // line number
	id, status string
	taskMs     string // "" when the line states none
}

// checkServerLog: the log has one line per record with the same status and Task time
// (at its precision), whole once controls passed; a family without such lines is not held.
func (r *rowCheck) checkServerLog() {
	rl, ok := r.rules()
	if !ok || rl.ServerLog == nil || !r.serverDone() || !r.exists(schema.RecordsFile) {
		return
	}
	b, ok := r.read(schema.ServerLog)
	if !ok {
		return // the layout check says it is missing
	}
	re := rl.ServerLog
	task := re.SubexpIndex("task_ms")
	var lines []serverLogLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		l := serverLogLine{n: n, id: m[re.SubexpIndex("id")], status: m[re.SubexpIndex("status")]}
		if task >= 0 {
			l.taskMs = m[task]
		}
		lines = append(lines, l)
	}
	byID := map[string][]serverLogLine{}
	for _, l := range lines {
		byID[l.id] = append(byID[l.id], l)
	}
	tt := r.taskTimeRule()
	inRecords := map[string]bool{}
	for _, rec := range r.records {
		inRecords[rec.RequestID] = true
		got := byID[rec.RequestID]
		at := "request " + rec.RequestID
		if !r.truth(len(got) == 1, schema.ServerLog, at, "one line of the server's per-request format (its records hold the request)", fmt.Sprintf("%d lines", len(got))) {
			continue
		}
		var status int
		if json.Unmarshal(rec.Status, &status) == nil {
			r.same(schema.ServerLog, at+" status", strconv.Itoa(status), got[0].status, schema.RecordsFile)
		}
		if got[0].taskMs != "" && tt.Records != "" {
			if v, err := schema.NumberAt(rec.doc, tt.Records); err == nil {
				logged, _ := strconv.ParseFloat(got[0].taskMs, 64)
				r.truth(math.Abs(logged-v) <= halfULP(got[0].taskMs)+1e-9, schema.ServerLog, at+" Task time",
					fmtNum(v)+" ms ("+schema.RecordsFile+" "+tt.Records+", at the log's precision)", got[0].taskMs+" ms")
			}
		}
	}
	for _, l := range lines {
		r.truth(inRecords[l.id], schema.ServerLog, fmt.Sprintf("line %d: request %s", l.n, l.id), "a request the server's records hold ("+schema.RecordsFile+")", "none there")
	}
}

// halfULP is half a unit of the last place a number is printed with ("4.2": 0.05).
func halfULP(printed string) float64 {
	_, frac, ok := strings.Cut(printed, ".")
	if !ok {
		return 0.5
	}
	return 0.5 * math.Pow(10, -float64(len(frac)))
}

func (r *rowCheck) ruleRow() judge.Row {
	return judge.Row{Layout: r.layout(), Profile: r.res.Checkpoint.Profile, Protocol: r.proto.Name()}
}

// taskTimeRule: zero when the family registered no rules (checkRules fails the row).
func (r *rowCheck) taskTimeRule() judge.TaskTime {
	rl, ok := r.rules()
	if !ok {
		return judge.TaskTime{}
	}
	return rl.TaskTime(r.ruleRow())
}

// serverDone: controls passed, or influence in a results.json from before controls.
func (r *rowCheck) serverDone() bool {
	if !schema.HasControls(r.res.Schema) {
		return r.passed(schema.StageInfluence)
	}
	return r.passed(schema.StageControls)
}
