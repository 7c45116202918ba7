package evidencecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// AIPerfVersion is the AIPerf release whose exports this package reads, and the only
// one a qualification may use (the harness pins the same).
const AIPerfVersion = "0.13.0"

const (
	phaseWarmup    = "warmup"
	phaseProfiling = "profiling"
)

// responseImage is the image the HTTP response carried, where the row's protocol puts
// it: data[0].b64_json, or the file a task result names under the row's serve/scratch/.
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
func jsonText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

type summaryMetric struct {
	Unit  string   `json:"unit"`
	Avg   *float64 `json:"avg"`
	Min   *float64 `json:"min"`
	Max   *float64 `json:"max"`
	Count *int     `json:"count"`
}

// summary is the part of profile_export_aiperf.json that is checked against the records.
type summary struct {
	AIPerfVersion  string        `json:"aiperf_version"`
	RequestLatency summaryMetric `json:"request_latency"`
	RequestCount   summaryMetric `json:"request_count"`
	WasCancelled   bool          `json:"was_cancelled"`
}

type phaseEntry struct {
	Kind       string `json:"phase_kind"`
	Total      int    `json:"total_request_count"`
	Successful int    `json:"successful_request_count"`
	Errors     int    `json:"error_request_count"`
}

func valueAt(doc any, dotted string) (any, error) {
	cur := doc
	for _, key := range strings.Split(dotted, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: %q is not inside an object", dotted, key)
		}
		if cur, ok = m[key]; !ok {
			return nil, fmt.Errorf("%s is absent", dotted)
		}
	}
	return cur, nil
}

func numberAt(doc any, dotted string) (float64, error) {
	v, err := valueAt(doc, dotted)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case string:
		return strconv.ParseFloat(x, 64)
	}
	return 0, fmt.Errorf("%s is %T, not a number", dotted, v)
}
