package evidencecheck

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/schema"
)

// The checks in this file hold AIPerf's summaries to its raw export and to the run.

// checkAIPerfRun: the summary's artifact folder is this row's, its phases asked for the
// raw export's requests and ran inside the AIPerf command, and a passed benchmark names no error.
func (r *rowCheck) checkAIPerfRun() {
	if r.rawErr != nil || !r.passed(schema.StageBenchmark) {
		return // a failed benchmark's files may be torn: its stage says why
	}
	s, ok := r.aiperf.summaries[schema.SummaryExportFile]
	if !ok {
		return // checkSummary says what is wrong with it
	}
	if info := r.c.info; info != nil {
		want := "/" + info.RunID + "/" + r.name + "/aiperf/artifacts"
		r.truth(strings.HasSuffix(s.InputConfig.Artifacts.Dir, want), schema.SummaryExportFile, "input_config.artifacts.dir",
			"a folder ending "+want+" (this run and row)", quote(s.InputConfig.Artifacts.Dir))
	}
	if c := r.aiperfCmd; c != nil {
		if i := slices.Index(c.Args, "--artifact-dir"); i >= 0 && i+1 < len(c.Args) && c.Args[i+1] != "" {
			dir := c.Args[i+1]
			r.same(schema.SummaryExportFile, "input_config.artifacts.dir", dir, s.InputConfig.Artifacts.Dir, "commands.jsonl aiperf --artifact-dir")
		}
	}
	for _, p := range s.InputConfig.Phases {
		if p.Requests != nil && (p.Kind == phaseWarmup || p.Kind == phaseProfiling) {
			r.same(schema.SummaryExportFile, "input_config.phases["+p.Name+"].requests", fmt.Sprint(len(r.phase(p.Kind))), fmt.Sprint(*p.Requests), "the "+p.Kind+" records of "+schema.RawExportFile)
		}
	}
	r.truth(s.IsComplete == nil || *s.IsComplete, schema.SummaryExportFile, "is_complete", "true (stage benchmark passed)", "false")
	r.truth(emptyJSON(s.ErrorSummary), schema.SummaryExportFile, "error_summary", "none (stage benchmark passed)", compactText(s.ErrorSummary))
	phases := map[string]manifestPhase{}
	for _, p := range r.aiperf.phases {
		phases[p.Kind] = p
	}
	for _, kind := range sortedKeys(phases) {
		p := phases[kind]
		r.truth(!p.WasCancelled, schema.PhaseManifestFile, p.Kind+" was_cancelled", "false (stage benchmark passed)", "true")
		r.truth(emptyJSON(p.ErrorSummary), schema.PhaseManifestFile, p.Kind+" error_summary", "none (stage benchmark passed)", compactText(p.ErrorSummary))
		r.checkPhaseSpan(p)
	}
	if prof, ok := phases[phaseProfiling]; ok {
		r.checkSummaryTimes(schema.SummaryExportFile, *s, prof)
	}
	for _, kind := range sortedKeys(phases) {
		p := phases[kind]
		file := schema.PhaseSummary(kind)
		if ps, ok := r.aiperf.summaries[file]; ok {
			r.checkSummaryTimes(file, *ps, p)
		}
	}
}

func (r *rowCheck) checkPhaseSpan(p manifestPhase) {
	reqs := r.phase(p.Kind)
	if len(reqs) == 0 || p.StartNs == 0 {
		return
	}
	// Two clocks: a record's times are its worker's (time_ns at the request's start plus
	// perf_counter deltas, record_processor_service.py § compute_time_ns), the phase's the
	// timing manager's time_ns (timing/phase/lifecycle.py, AIPerf 0.13.0). At load 30 on
	// 2 cores the last warmup record ended 9 ms after its phase; another run's manifest is
	// off by that run's whole start.
	const slack = int64(2 * time.Second)
	first, last := reqs[0].rec.Metadata.RequestStartNs, reqs[0].rec.Metadata.RequestEndNs
	for _, q := range reqs {
		first, last = min(first, q.rec.Metadata.RequestStartNs), max(last, q.rec.Metadata.RequestEndNs)
	}
	r.truth(p.StartNs <= first+slack && p.EndNs+slack >= last, schema.PhaseManifestFile, p.Kind+" start_ns / end_ns",
		fmt.Sprintf("around the %s requests of %s, %d to %d", p.Kind, schema.RawExportFile, first, last), fmt.Sprintf("%d to %d", p.StartNs, p.EndNs))
	if c := r.aiperfCmd; c != nil && !c.Start.IsZero() {
		from, to := c.Start.Add(-windowSlack).UnixNano(), c.End().Add(windowSlack).UnixNano()
		r.truth(p.StartNs >= from && p.EndNs <= to, schema.PhaseManifestFile, p.Kind+" start_ns / end_ns",
			"inside the AIPerf command's run (commands.jsonl: "+c.Start.Format(time.RFC3339Nano)+", "+fmtNum(c.WallS)+" s)", fmt.Sprintf("%d to %d", p.StartNs, p.EndNs))
	}
}

// checkSummaryTimes: start_time / end_time are the manifest's span, up to one zone offset
// (AIPerf writes local time without a zone: datetime.fromtimestamp).
func (r *rowCheck) checkSummaryTimes(file string, s aiperfSummary, p manifestPhase) {
	if s.StartTime == "" || s.EndTime == "" || p.StartNs == 0 {
		return
	}
	const layout = "2006-01-02T15:04:05.999999"
	start, err1 := time.Parse(layout, s.StartTime)
	end, err2 := time.Parse(layout, s.EndTime)
	if err1 != nil || err2 != nil {
		r.fail(file, "start_time / end_time", "AIPerf's local times ("+layout+")", quote(s.StartTime+" / "+s.EndTime))
		return
	}
	offStart := start.Sub(time.Unix(0, p.StartNs).UTC())
	offEnd := end.Sub(time.Unix(0, p.EndNs).UTC())
	const µs = time.Microsecond
	quarter := func(d time.Duration) bool {
		m := d % (15 * time.Minute)
		return m.Abs() <= µs || (15*time.Minute-m.Abs()) <= µs
	}
	ok := quarter(offStart) && (offStart-offEnd).Abs() <= 2*µs && offStart.Abs() <= 14*time.Hour
	r.truth(ok, file, "start_time / end_time",
		fmt.Sprintf("the %s phase's span in %s, %s to %s UTC, in the host's zone", p.Kind, schema.PhaseManifestFile,
			time.Unix(0, p.StartNs).UTC().Format(layout), time.Unix(0, p.EndNs).UTC().Format(layout)),
		s.StartTime+" to "+s.EndTime)
}

func compactText(b json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return clipText(string(b), 300)
	}
	return clipText(c.String(), 300)
}

// emptyJSON: absent, null, or an empty list or object.
func emptyJSON(b json.RawMessage) bool {
	s := string(bytes.TrimSpace(b))
	return s == "" || s == "null" || s == "[]" || s == "{}"
}

// aiperfPercentiles: CSVs state them to two decimals, JSON summaries in full.
var aiperfPercentiles = []int{50, 90, 99}

// percentileLinear is AIPerf's percentile (NumPy's default, "linear").
func percentileLinear(sorted []float64, p int) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	rank := float64(p) / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (rank-float64(lo))*(sorted[hi]-sorted[lo])
}

// checkLatencyPercentiles: the summaries' and CSVs' latency percentiles, overall and per
// phase, are those of the per-request export.
func (r *rowCheck) checkLatencyPercentiles() {
	if r.rawErr != nil || !r.passed(schema.StageBenchmark) {
		return
	}
	for _, c := range []struct{ phase, json, csv string }{
		{phaseProfiling, schema.SummaryExportFile, schema.CSVExportFile},
		{phaseProfiling, schema.PhaseSummary(phaseProfiling), schema.PhaseCSV(phaseProfiling)},
		{phaseWarmup, schema.PhaseSummary(phaseWarmup), schema.PhaseCSV(phaseWarmup)},
	} {
		lat := r.clientLatencies(c.phase)
		if len(lat) == 0 {
			continue
		}
		src := fmt.Sprintf("the %s request_latency values of %s, NumPy's linear percentile", c.phase, schema.ProfileExportFile)
		if s, ok := r.aiperf.summaries[c.json]; ok && s.RequestLatency != nil {
			for _, p := range aiperfPercentiles {
				got := s.RequestLatency.percentile(p)
				v, err := strconv.ParseFloat(string(got), 64)
				want := percentileLinear(lat, p)
				r.truth(err == nil && math.Abs(v-want) <= 1e-6*math.Max(1, want), c.json, fmt.Sprintf("request_latency.p%d", p),
					fmtNum(want)+" ms ("+src+")", string(got))
			}
		}
		if c.csv == schema.CSVExportFile {
			r.checkConsolePercentiles(lat, src)
		}
		b, ok := r.read(c.csv)
		if !ok {
			continue
		}
		row, err := csvMetric(b, "Request Latency (ms)")
		if err != nil {
			r.fail(c.csv, "Request Latency (ms)", "a row of the metric ("+src+")", err.Error())
			continue
		}
		sum := 0.0
		for _, v := range lat {
			sum += v
		}
		want := map[string]float64{"avg": sum / float64(len(lat)), "min": lat[0], "max": lat[len(lat)-1]}
		for _, p := range aiperfPercentiles {
			want[fmt.Sprintf("p%d", p)] = percentileLinear(lat, p)
		}
		cols := []string{"p50", "p90", "p99"}
		if c.csv != schema.CSVExportFile { // the run's CSV's avg, min and max: checkTextExports
			cols = append([]string{"avg", "min", "max"}, cols...)
		}
		for _, col := range cols {
			got, err := strconv.ParseFloat(row[col], 64)
			r.truth(err == nil && math.Abs(got-want[col]) <= 0.0101, c.csv, "Request Latency (ms) "+col,
				fmt.Sprintf("%.2f (%s)", want[col], src), quote(row[col]))
		}
	}
}

// The console table of the pinned AIPerf: its columns, and its request latency row.
var (
	consoleColumns    = regexp.MustCompile(`Metric ┃ +avg ┃ +min ┃ +max ┃ +p99 ┃ +p90 ┃ +p50 ┃`)
	consoleLatencyRow = regexp.MustCompile(`Request Latency \(ms\) │ +` + consoleNumber + ` │ +` + consoleNumber + ` │ +` + consoleNumber +
		` │ +(` + consoleNumber + `) │ +(` + consoleNumber + `) │ +(` + consoleNumber + `) │`)
)

const consoleNumber = `[0-9]{1,3}(?:,[0-9]{3})*\.[0-9]{2}`

func (r *rowCheck) checkConsolePercentiles(lat []float64, src string) {
	b, ok := r.read(schema.ConsoleExportFile)
	if !ok {
		return
	}
	m := consoleLatencyRow.FindSubmatch(b)
	if !r.truth(consoleColumns.Match(b) && m != nil, schema.ConsoleExportFile, "Request Latency (ms) p99 / p90 / p50",
		"a row under the columns avg, min, max, p99, p90, p50 (AIPerf "+AIPerfVersion+")", "none") {
		return
	}
	for i, p := range []int{99, 90, 50} {
		got, err := strconv.ParseFloat(strings.ReplaceAll(string(m[i+1]), ",", ""), 64)
		want := percentileLinear(lat, p)
		r.truth(err == nil && math.Abs(got-want) <= 0.0101, schema.ConsoleExportFile, fmt.Sprintf("Request Latency (ms) p%d", p),
			fmt.Sprintf("%.2f (%s)", want, src), string(m[i+1]))
	}
}

func csvMetric(b []byte, metric string) (map[string]string, error) {
	rd := csv.NewReader(bytes.NewReader(b))
	rd.FieldsPerRecord = -1
	recs, err := rd.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || len(recs[0]) == 0 || recs[0][0] != "Metric" {
		return nil, fmt.Errorf("no Metric header")
	}
	for _, rec := range recs[1:] {
		if len(rec) > 0 && rec[0] == metric {
			out := map[string]string{}
			for i, h := range recs[0] {
				if i < len(rec) {
					out[h] = rec[i]
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("none")
}
