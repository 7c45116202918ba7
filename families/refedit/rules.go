package refedit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"qualkit/families/refedit/server"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// pairReference is where the correctness case writes the quality pair's reference image,
// under its artifacts folder (Quality names it; the checker holds the pair to it).
const pairReference = "reference/pair-photo-grayscale.png"

// The lines the family's programs write per request: the server's access line
// (server/server.go ServeHTTP) per edit, `refedit run --batch`'s line per replay
// (cmd/refedit/run.go runBatch: the PNG's sha256 cut to 12).
var (
	serverLogLine = regexp.MustCompile(`POST ` + regexp.QuoteMeta(server.EditRoute) + ` (?P<status>\d{3}) [0-9.]+ms request_id=(?P<id>\S+)$`)
	batchLogLine  = regexp.MustCompile(`^refedit: batch (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
)

// Rules are what the checker holds this family's evidence to (families/all lists them):
// the pair's reference is pairReference, its formula qualkit's own; the Task time is
// timing.task_ms of the response body and of the records line, one or both as Timing
// picks; the case's metrics are judged against its thresholds.json at the run's commit.
var Rules = []judge.Rules{{
	Backend:       Backend,
	PairReference: func(string, string) string { return pairReference },
	PairMetric:    func(string) string { return "" },
	TaskTime: func(judge.Row) judge.TaskTime {
		both, records := Family{}.timing(), Family{RecordsTiming: true}.timing()
		return judge.TaskTime{Sources: []schema.TimingSource{both, records},
			Body: both.Body, Records: both.Records, RecordID: both.RecordID}
	},
	ServerLog:      serverLogLine,
	NativeBatchLog: batchLogLine,
	CaseGates:      "families/refedit/correctness/thresholds.json",
	JudgeCase:      judgeCase,
}}

// judgeCase is the correctness case's judge (correctness/metrics.py violations) in Go:
// each case's kept metrics against the gates of its edit (an edit's overrides merged
// over the gates); a psnr_db of null is infinite (identical images).
func judgeCase(result, gates []byte) ([]string, error) {
	type gate struct{ Min, Max *float64 }
	var g struct {
		Gates     map[string]gate            `json:"gates"`
		Overrides map[string]map[string]gate `json:"overrides"`
	}
	var res struct {
		Cases []struct {
			ID, Edit string
			Metrics  map[string]*float64
		}
	}
	if err := json.Unmarshal(gates, &g); err != nil {
		return nil, fmt.Errorf("gates: %w", err)
	}
	if err := json.Unmarshal(result, &res); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	var out []string
	for _, c := range res.Cases {
		at := fmt.Sprintf("case %s (%s): ", c.ID, c.Edit)
		if c.Metrics == nil {
			out = append(out, at+"no metrics")
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(g.Gates)) {
			gt := g.Gates[name]
			if o, ok := g.Overrides[c.Edit][name]; ok {
				gt.Min, gt.Max = cmp.Or(o.Min, gt.Min), cmp.Or(o.Max, gt.Max)
			}
			v, ok := c.Metrics[name]
			switch {
			case !ok || v == nil && name != "psnr_db":
				out = append(out, at+name+" missing")
			case v == nil: // identical images: infinite PSNR
			case gt.Max != nil && *v > *gt.Max:
				out = append(out, at+name+"="+num(*v)+" > max "+num(*gt.Max))
			case gt.Min != nil && *v < *gt.Min:
				out = append(out, at+name+"="+num(*v)+" < min "+num(*gt.Min))
			}
		}
	}
	return out, nil
}
