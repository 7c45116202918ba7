package evidencecheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// The checks in this file hold the batch native Task's report and PNGs to the log it
// wrote as it went (judge.NativeBatchLog).

// crashLine: a Go panic or fatal error, or a Python traceback.
var crashLine = regexp.MustCompile(`^(panic: |fatal error: |Traceback \(most recent call last\):)`)

func (r *rowCheck) checkNativeCrash() {
	if !r.passed(schema.StageIdentity) {
		return
	}
	logs := []string{schema.NativeBatchLog}
	for _, q := range r.reqs {
		logs = append(logs, schema.NativeLog(q.index))
	}
	for _, f := range logs {
		b, ok := r.read(f)
		if !ok {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			if crashLine.MatchString(sc.Text()) {
				r.fail(f, "the native Task ran to its end", "no crash (stage identity passed)", fmt.Sprintf("line %d: %s", n, clipText(sc.Text(), 200)))
				break
			}
		}
	}
}

type batchLogLine struct {
	n, total int
	id, sha  string
	line     int
}

// checkNativeBatchLog: one line per replay the report states, each naming the PNG's
// sha256 prefix; once identity passed, one per request, none twice.
func (r *rowCheck) checkNativeBatchLog() {
	if r.res.Identity == nil || r.res.Identity.Mode != schema.NativeBatch || r.rawErr != nil {
		return
	}
	rl, ok := r.rules()
	if !ok || rl.NativeBatchLog == nil {
		return
	}
	b, ok := r.read(schema.NativeBatchLog)
	if !ok {
		return // checkNativeBatch says it is missing
	}
	re := rl.NativeBatchLog
	var lines []batchLogLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		l := batchLogLine{id: m[re.SubexpIndex("id")], sha: strings.ToLower(m[re.SubexpIndex("sha")]), line: n}
		l.n, _ = strconv.Atoi(m[re.SubexpIndex("n")])
		l.total, _ = strconv.Atoi(m[re.SubexpIndex("total")])
		lines = append(lines, l)
	}
	byID := map[string]*request{}
	for _, q := range r.reqs {
		byID[q.id] = q
	}
	passed := r.passed(schema.StageIdentity)
	if passed {
		r.same(schema.NativeBatchLog, "replays", fmt.Sprint(len(r.reqs)), fmt.Sprint(len(lines)), "one line per request in "+schema.RawExportFile+" (stage identity passed)")
	}
	seen := map[string]bool{}
	for _, l := range lines {
		at := fmt.Sprintf("line %d: replay %s", l.line, l.id)
		q := byID[l.id]
		if !r.truth(q != nil, schema.NativeBatchLog, at, "a request of "+schema.RawExportFile, "none") {
			continue
		}
		r.truth(!seen[l.id], schema.NativeBatchLog, at, "one line per replay", "a second")
		seen[l.id] = true
		r.same(schema.NativeBatchLog, at+" of", fmt.Sprint(len(r.reqs)), fmt.Sprint(l.total), "the requests in "+schema.RawExportFile)
		if q.native != nil {
			r.truth(strings.HasPrefix(bytesSHA256(q.native), l.sha), schema.NativeBatchLog, at+" sha256",
				prefix(bytesSHA256(q.native), len(l.sha))+" (the start of "+q.nativeRel()+"'s sha256)", l.sha)
		}
		if sha, ok := r.batch.sha[l.id]; ok {
			r.truth(strings.HasPrefix(sha, l.sha), schema.NativeBatchFile, "replay "+l.id+" output_sha256",
				"a sha256 starting "+l.sha+" ("+schema.NativeBatchLog+fmt.Sprintf(" line %d)", l.line), sha)
		}
	}
	for _, id := range sortedKeys(r.batch.sha) {
		r.truth(seen[id], schema.NativeBatchFile, "replay "+id, "a replay the batch logged ("+schema.NativeBatchLog+")", "no line there")
	}
}
