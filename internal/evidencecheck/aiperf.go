package evidencecheck

import (
	"encoding/json"
	"fmt"
	"path"

	"qualkit/internal/schema"
)

// AIPerfVersion is the AIPerf release whose exports this package reads, and the only
// one a qualification may use (the harness pins the same).
const AIPerfVersion = "0.13.0"

const (
	phaseWarmup    = "warmup"
	phaseProfiling = "profiling"
)

// responseImage: data[0].b64_json, or the file a task result names under serve/scratch/.
func (r *rowCheck) responseImage(rec schema.RawRecord) ([]byte, error) {
	return r.proto.Output(rec.Body(), rec.Metadata.XRequestID, func(rel string) ([]byte, error) {
		b, ok := r.read(path.Join(schema.ScratchDir, rel))
		if !ok {
			return nil, fmt.Errorf("%s is not in the evidence", schema.Scratch(rel))
		}
		return b, nil
	})
}

// jsonText is a JSON value as a form field: a string unquoted, anything else verbatim.

type summaryMetric struct {
	Min   *float64        `json:"min"`
	Max   *float64        `json:"max"`
	Count *int            `json:"count"`
	P50   json.RawMessage `json:"p50"`
	P90   json.RawMessage `json:"p90"`
	P99   json.RawMessage `json:"p99"`
}

func (m summaryMetric) percentile(p int) json.RawMessage {
	return map[int]json.RawMessage{50: m.P50, 90: m.P90, 99: m.P99}[p]
}

// aiperfSummary is what the checks read of a profile_export_aiperf.json.
type aiperfSummary struct {
	AIPerfVersion  string         `json:"aiperf_version"`
	RequestLatency *summaryMetric `json:"request_latency"`
	WasCancelled   bool           `json:"was_cancelled"`
	InputConfig    struct {
		Phases []struct {
			Name     string `json:"name"`
			Kind     string `json:"kind"`
			Requests *int   `json:"requests"`
		} `json:"phases"`
		Artifacts struct {
			Dir string `json:"dir"`
		} `json:"artifacts"`
	} `json:"input_config"`
	IsComplete   *bool           `json:"is_complete"`
	ErrorSummary json.RawMessage `json:"error_summary"`
	StartTime    string          `json:"start_time"`
	EndTime      string          `json:"end_time"`
}

type manifestPhase struct {
	Kind         string          `json:"phase_kind"`
	Total        int             `json:"total_request_count"`
	Errors       int             `json:"error_request_count"`
	StartNs      int64           `json:"start_ns"`
	EndNs        int64           `json:"end_ns"`
	WasCancelled bool            `json:"was_cancelled"`
	ErrorSummary json.RawMessage `json:"error_summary"`
}

// aiperfFiles are parsed once when the row loads; an absent file is no error here.
type aiperfFiles struct {
	summaries   map[string]*aiperfSummary // by file, parsed
	summaryErr  map[string]error          // by file, why it did not parse
	phases      []manifestPhase
	phasesRead  bool // the manifest parsed
	manifestErr error
}

func (r *rowCheck) loadAIPerf() {
	a := &r.aiperf
	a.summaries, a.summaryErr = map[string]*aiperfSummary{}, map[string]error{}
	for _, f := range []string{schema.SummaryExportFile, schema.PhaseSummary(phaseWarmup), schema.PhaseSummary(phaseProfiling)} {
		b, ok := r.read(f)
		if !ok {
			continue
		}
		var s aiperfSummary
		if err := json.Unmarshal(b, &s); err != nil {
			a.summaryErr[f] = err
		} else {
			a.summaries[f] = &s
		}
	}
	if b, ok := r.read(schema.PhaseManifestFile); ok {
		var pm struct {
			Phases []manifestPhase `json:"phases"`
		}
		if a.manifestErr = json.Unmarshal(b, &pm); a.manifestErr == nil {
			a.phases, a.phasesRead = pm.Phases, true
		}
	}
}
