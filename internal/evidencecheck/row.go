package evidencecheck

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

type rowCheck struct {
	c    *checker
	name string

	res    *schema.Result // results.json; nil when unreadable
	proto  wire.Protocol  // how the row's requests travelled (results.json wire_protocol)
	raw    []schema.RawRecord
	rawErr error
	prof   []schema.ProfileRecord
	profOK bool
	fx     *manifest
	aiperf aiperfFiles

	reqs []*request // one per raw record, in file order
	// tasks are by request id, from the declared source, with why each missing one is.
	tasks               map[string]float64
	taskWhy             map[string]string
	taskSrc             string // where they came from, for messages
	batch               batchReport
	batchWallS          float64 // the batch process's wall (commands.jsonl)
	cmds                []schema.CommandRecord
	aiperfCmd, batchCmd *schema.CommandRecord
	cmdsErr             error               // why commands.jsonl could not be read
	pair                *derivedPairQuality // the quality pair's measures, re-derived from the PNGs
	recordIDs           map[string]bool
	recordTimes         map[string]float64
	recordsErr          string         // why it could not be read: "missing", or the parse error
	records             []serverRecord // the records lines that parse, in order
	recordDocs          []any          // the records lines before the first that is not JSON
	recordsBad          error          // why that line is not JSON
	corr                *schema.CaseCounts
	corrOK              bool
	corrIDs             []string // "<classname>.<name>" of the executed JUnit cases
	files               []string // the row folder's files, relative to it
	bundleSHA           string
}

type request struct {
	index    int
	id       string
	phase    string
	stem     string // "00-warmup": the identity file names' stem
	rec      schema.RawRecord
	sent     []byte // the reference image's exact bytes, from the payload
	prompt   string
	settings map[string]string
	// latentSeed is nil when the request had none.
	latentSeed *int64
	sentErr    error
	resp       []byte // the PNG the HTTP response carried
	respErr    error
	clientMs   float64
	client     bool
	clientE    string
	httpFile   []byte            // identity/NN-phase-http.png, nil when absent
	native     []byte            // identity/NN-phase-native.png, nil when absent
	quality    derivedQuality    // its quality measures, when the row has a quality stage
	diff       *schema.PixelDiff // httpFile against native, nil unless both decode
}

func (q *request) httpRel() string   { return schema.IdentityPNG(q.index, q.phase, schema.SideHTTP) }
func (q *request) nativeRel() string { return schema.IdentityPNG(q.index, q.phase, schema.SideNative) }

type manifest struct {
	Settings map[string]json.RawMessage `json:"settings"`
	Images   []struct {
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
		Bytes  int64  `json:"bytes"`
		Width  int    `json:"width"`
		Height int    `json:"height"`
	} `json:"images"`
	Pairs []struct {
		ID          string `json:"id"`
		Image       string `json:"image"`
		Instruction string `json:"instruction"`
	} `json:"pairs"`
	Influence struct {
		Instruction string   `json:"instruction"`
		Images      []string `json:"images"`
	} `json:"influence"`
}

// newRowCheck parses each file the checks read once, reporting those that do not parse.
func newRowCheck(c *checker, name string, files []string) *rowCheck {
	slices.Sort(files)
	r := &rowCheck{c: c, name: name, files: files}
	if b, ok := r.read(schema.ResultsFile); ok {
		var res schema.Result
		if err := json.Unmarshal(b, &res); err != nil {
			r.fail(schema.ResultsFile, "valid JSON", "a results.json the harness wrote", err.Error())
		} else {
			r.res = &res
		}
	}
	r.proto = wire.OpenAI{}
	if r.res != nil {
		p, err := wire.ByName(r.res.Protocol)
		if err != nil {
			r.fail(schema.ResultsFile, "wire_protocol", "a protocol qualkit speaks", err.Error())
		} else {
			r.proto = p
		}
	}
	if b, ok := r.read(schema.FixturesManifest); ok {
		var m manifest
		if err := json.Unmarshal(b, &m); err != nil {
			r.fail(schema.FixturesManifest, "valid JSON", "the fixtures manifest", err.Error())
		} else {
			r.fx = &m
		}
	}
	r.loadServerRecords()
	r.loadRequests()
	r.loadCommands()
	r.loadAIPerf()
	r.loadCorrectness()
	r.loadBatchReport()
	r.loadQuality()
	r.loadDiffs()
	if b, ok := r.read(schema.BundleFile); ok {
		var bi struct {
			SHA256 string `json:"sha256"`
		}
		if json.Unmarshal(b, &bi) == nil {
			r.bundleSHA = bi.SHA256
		}
	}
	return r
}

func (r *rowCheck) loadCommands() {
	if !r.exists(schema.CommandsFile) {
		return
	}
	var recs []schema.CommandRecord
	if r.cmdsErr = schema.ReadJSONL(r.path(schema.CommandsFile), func(line []byte) error {
		var c schema.CommandRecord
		err := json.Unmarshal(line, &c)
		recs = append(recs, c)
		return err
	}); r.cmdsErr != nil {
		return
	}
	r.cmds = recs
	for i, c := range recs {
		if c.Stage == schema.StageBenchmark && len(c.Args) > 1 && c.Args[1] == "profile" {
			r.aiperfCmd = &recs[i]
		}
		if c.Stage == schema.StageIdentity && c.Log == schema.NativeBatchLog {
			r.batchWallS, r.batchCmd = c.WallS, &recs[i]
		}
	}
}

func (r *rowCheck) rel(p string) string { return r.name + "/" + p }

func (r *rowCheck) path(p string) string { return r.c.path(r.rel(p)) }

func (r *rowCheck) read(p string) ([]byte, bool) { return r.c.read(r.rel(p)) }

func (r *rowCheck) exists(p string) bool {
	_, err := os.Stat(r.path(p))
	return err == nil
}

func (r *rowCheck) fail(file, claim, evidence, got string) {
	r.c.fail(r.rel(file), claim, evidence, got)
}

func (r *rowCheck) same(file, claim, want, got, source string) bool {
	return r.c.same(r.rel(file), claim, want, got, source)
}

func (r *rowCheck) truth(ok bool, file, claim, evidence, got string) bool {
	return r.c.truth(ok, r.rel(file), claim, evidence, got)
}

func (r *rowCheck) stageStatus(stage string) string {
	if r.res != nil {
		for _, s := range r.res.Stages {
			if s.Name == stage {
				return s.Status
			}
		}
	}
	return ""
}

func (r *rowCheck) ran(stage string) bool {
	st := r.stageStatus(stage)
	return st == schema.Pass || st == schema.Fail
}

func (r *rowCheck) passed(stage string) bool { return r.stageStatus(stage) == schema.Pass }

func (r *rowCheck) expansion() expansion {
	var e expansion
	if r.rawErr == nil && r.raw != nil {
		e.requests = []string{}
		for _, q := range r.reqs {
			e.requests = append(e.requests, q.stem)
		}
	}
	if r.fx != nil {
		e.fixtures = []string{}
		for _, im := range r.fx.Images {
			e.fixtures = append(e.fixtures, im.File)
		}
	}
	return e
}

func (r *rowCheck) loadRequests() {
	if !r.exists(schema.RawExportFile) {
		r.rawErr = os.ErrNotExist
		return
	}
	r.raw, r.rawErr = schema.ReadRaw(r.path(schema.RawExportFile))
	if r.rawErr != nil {
		r.fail(schema.RawExportFile, "readable AIPerf raw export", "JSON lines", r.rawErr.Error())
		return
	}
	latency := map[string]float64{}
	latencyErr := map[string]string{}
	if r.exists(schema.ProfileExportFile) {
		prof, err := schema.ReadProfile(r.path(schema.ProfileExportFile))
		if err != nil {
			r.fail(schema.ProfileExportFile, "readable AIPerf export", "JSON lines", err.Error())
		} else {
			r.prof, r.profOK = prof, true
			for _, p := range prof {
				v, err := p.RequestLatencyMs()
				if err != nil {
					latencyErr[p.Metadata.XRequestID] = err.Error()
					continue
				}
				latency[p.Metadata.XRequestID] = v
			}
		}
	}
	for i, rec := range r.raw {
		q := &request{index: i, id: rec.Metadata.XRequestID, phase: rec.Metadata.BenchmarkPhase, rec: rec,
			stem: schema.IdentityStem(i, rec.Metadata.BenchmarkPhase)}
		if sent, err := r.proto.Decode(rec.Payload); err != nil {
			q.sentErr = err
		} else {
			q.sent, q.prompt, q.settings, q.latentSeed = sent.Image, sent.Prompt, sent.Settings, sent.LatentSeed
		}
		if !rec.Failed() {
			q.resp, q.respErr = r.responseImage(rec)
		}
		q.clientMs, q.client = latency[q.id]
		if !q.client {
			q.clientE = "no request_latency in " + schema.ProfileExportFile
			if e, ok := latencyErr[q.id]; ok {
				q.clientE = e + " in " + schema.ProfileExportFile
			}
		}
		q.httpFile, _ = r.read(q.httpRel())
		q.native, _ = r.read(q.nativeRel())
		r.reqs = append(r.reqs, q)
	}
	r.loadTasks()
}

// loadTasks reads the Task times from results.json's source, and the records file's.
func (r *rowCheck) loadTasks() {
	r.tasks, r.taskWhy = map[string]float64{}, map[string]string{}
	if r.res == nil || r.res.TaskSource == nil {
		for _, q := range r.reqs {
			r.taskWhy[q.id] = "results.json names no task_time_source"
		}
		return
	}
	ts := *r.res.TaskSource
	switch {
	case ts.Body == "" && ts.Records == "":
		r.fail(schema.ResultsFile, "task_time_source", "a body or a records field", "neither")
		return
	case ts.Records != "" && ts.RecordID == "":
		r.fail(schema.ResultsFile, "task_time_source", "a record_id to join the records file on", "none")
		return
	}
	if ts.RecordID != "" {
		r.loadRecords(ts)
	}
	if ts.Body == "" {
		r.taskSrc = schema.RecordsFile + ", field " + ts.Records + " joined on " + ts.RecordID
		for _, q := range r.reqs {
			if v, ok := r.recordTimes[q.id]; ok {
				r.tasks[q.id] = v
			} else {
				r.taskWhy[q.id] = "no records line with " + ts.RecordID + " " + q.id
			}
		}
		return
	}
	r.taskSrc = "response bodies in " + schema.RawExportFile + ", field " + ts.Body
	for _, q := range r.reqs {
		var doc any
		if err := json.Unmarshal(q.rec.Body(), &doc); err != nil {
			r.taskWhy[q.id] = "the response body is not JSON"
			continue
		}
		v, err := schema.NumberAt(doc, ts.Body)
		if err != nil {
			r.taskWhy[q.id] = err.Error()
			continue
		}
		r.tasks[q.id] = v
	}
}

// loadRecords: the Task times only with ts.Records.
func (r *rowCheck) loadRecords(ts schema.TimingSource) {
	r.recordIDs, r.recordTimes = map[string]bool{}, map[string]float64{}
	if !r.exists(schema.RecordsFile) {
		r.recordsErr = "missing"
		return
	}
	for _, doc := range r.recordDocs {
		id, err := schema.ValueAt(doc, ts.RecordID)
		if err != nil {
			continue
		}
		r.recordIDs[fmt.Sprint(id)] = true
		if v, err := schema.NumberAt(doc, ts.Records); err == nil && ts.Records != "" {
			r.recordTimes[fmt.Sprint(id)] = v
		}
	}
	if err := r.recordsBad; err != nil {
		r.recordsErr = err.Error()
		r.fail(schema.RecordsFile, "readable server records", "JSON lines ("+ts.String()+")", err.Error())
	}
}

func (r *rowCheck) phase(p string) []*request {
	var out []*request
	for _, q := range r.reqs {
		if q.phase == p {
			out = append(out, q)
		}
	}
	return out
}

func (r *rowCheck) clientLatencies(phase string) []float64 {
	var lat []float64
	for _, q := range r.phase(phase) {
		if q.client {
			lat = append(lat, q.clientMs)
		}
	}
	sort.Float64s(lat)
	return lat
}

// nearestRank is sorted[ceil(p*n/100)-1]: a value a reader finds in the raw records.
func nearestRank(xs []float64, p int) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := (p*len(s) + 99) / 100
	return s[min(max(rank, 1), len(s))-1]
}

func (r *rowCheck) measuredTimes() (client, task []float64, problems []string) {
	for _, q := range r.phase(phaseProfiling) {
		if !q.client {
			problems = append(problems, fmt.Sprintf("request %s: %s", q.id, q.clientE))
		} else {
			client = append(client, q.clientMs)
		}
		if v, ok := r.tasks[q.id]; ok {
			task = append(task, v)
		} else {
			problems = append(problems, fmt.Sprintf("request %s: Task time: %s", q.id, r.taskWhy[q.id]))
		}
	}
	return client, task, problems
}

func (r *rowCheck) imagesPerSecond() float64 {
	prof := r.phase(phaseProfiling)
	if len(prof) == 0 {
		return 0
	}
	first, last := prof[0].rec.Metadata.RequestStartNs, prof[0].rec.Metadata.RequestEndNs
	for _, q := range prof {
		first = min(first, q.rec.Metadata.RequestStartNs)
		last = max(last, q.rec.Metadata.RequestEndNs)
	}
	if last <= first {
		return 0
	}
	return float64(len(prof)) / (float64(last-first) / 1e9)
}

func (r *rowCheck) loadCorrectness() {
	b, ok := r.read(schema.CorrectnessJUnit)
	if !ok {
		return
	}
	var root junitNode
	if err := xml.Unmarshal(b, &root); err != nil {
		r.fail(schema.CorrectnessJUnit, "readable JUnit", "JUnit XML", err.Error())
		return
	}
	var cc schema.CaseCounts
	root.walk(func(tc junitCase) {
		cc.Total++
		if tc.Skipped == nil {
			r.corrIDs = append(r.corrIDs, strings.TrimPrefix(tc.ClassName+"."+tc.Name, "."))
		}
		switch {
		case tc.Skipped != nil:
			cc.Skipped++
		case len(tc.Errors) > 0:
			cc.Errors++
		case len(tc.Failures) > 0:
			cc.Failed++
		}
	})
	cc.Executed = cc.Total - cc.Skipped
	r.corr, r.corrOK = &cc, true
}

// settingsText is the row.md spelling of settings: key=value, sorted, space-separated.
func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return strings.Join(parts, " ")
}

func baseName(p string) string { return path.Base(strings.TrimSuffix(p, "/")) }
