package evidencecheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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

type recordMeta struct {
	XRequestID     string `json:"x_request_id"`
	BenchmarkPhase string `json:"benchmark_phase"`
	RequestStartNs int64  `json:"request_start_ns"`
	RequestEndNs   int64  `json:"request_end_ns"`
	WasCancelled   bool   `json:"was_cancelled"`
	// PhaseIndex and SessionNum place the request in AIPerf's sending: its phase
	// (warmup first) and its number in that phase. The contact sheet follows them.
	PhaseIndex int `json:"phase_index"`
	SessionNum int `json:"session_num"`
}

// rawRecord is one line of profile_export_raw.jsonl: what AIPerf sent and received.
type rawRecord struct {
	Metadata  recordMeta              `json:"metadata"`
	Headers   map[string]string       `json:"request_headers"`
	Status    int                     `json:"status"`
	Responses []struct{ Text string } `json:"responses"`
	Payload   json.RawMessage         `json:"payload"`
	Error     json.RawMessage         `json:"error"`
}

func (r rawRecord) failed() bool {
	return (len(r.Error) > 0 && string(r.Error) != "null") || r.Metadata.WasCancelled || r.Status < 200 || r.Status > 299
}

func (r rawRecord) body() []byte {
	var b bytes.Buffer
	for _, x := range r.Responses {
		b.WriteString(x.Text)
	}
	return b.Bytes()
}

// responseImage is the image the HTTP response carried, where the row's protocol puts
// it: data[0].b64_json, or the file a task result names under the row's serve/scratch/.
func (r *rowCheck) responseImage(rec rawRecord) ([]byte, error) {
	return r.proto.Output(rec.body(), rec.Metadata.XRequestID, func(rel string) ([]byte, error) {
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

// profileRecord is one line of profile_export.jsonl.
type profileRecord struct {
	Metadata recordMeta `json:"metadata"`
	Metrics  map[string]struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"metrics"`
}

// latencyMs is AIPerf's request_latency of the record, in ms.
func (p profileRecord) latencyMs() (float64, error) {
	m, ok := p.Metrics["request_latency"]
	if !ok {
		return 0, errors.New("no request_latency")
	}
	if m.Unit != "ms" {
		return 0, fmt.Errorf("request_latency unit %q, want ms", m.Unit)
	}
	return strconv.ParseFloat(string(m.Value), 64)
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

// readJSONL calls each for every non-empty line; lines may be many megabytes (images).
func readJSONL(p string, each func(n int, line []byte) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := each(n, line); perr != nil {
				return fmt.Errorf("line %d: %w", n, perr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func readRaw(p string) ([]rawRecord, error) {
	var out []rawRecord
	err := readJSONL(p, func(_ int, line []byte) error {
		var r rawRecord
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	})
	return out, err
}

func readProfile(p string) ([]profileRecord, error) {
	var out []profileRecord
	err := readJSONL(p, func(_ int, line []byte) error {
		var r profileRecord
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	})
	return out, err
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
