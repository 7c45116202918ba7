package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// The AIPerf export's record formats, read by the harness and the evidence checker
// alike. Absent fields are zero values (AIPerf omits nulls).

// RawRecord is one line of profile_export_raw.jsonl: what AIPerf sent and received.
type RawRecord struct {
	Metadata RecordMeta `json:"metadata"`
	// StartPerfNs is the worker's perf_counter_ns at the send, the clock its span is
	// measured on: request_end_ns is request_start_ns plus that span.
	StartPerfNs int64                   `json:"start_perf_ns"`
	Headers     map[string]string       `json:"request_headers"`
	Status      int                     `json:"status"`
	Responses   []struct{ Text string } `json:"responses"`
	Payload     json.RawMessage         `json:"payload"`
	Error       *RecordError            `json:"error"`
}

// RecordMeta places a record: its request, phase and span.
type RecordMeta struct {
	XRequestID     string `json:"x_request_id"`
	ConversationID string `json:"conversation_id"`
	BenchmarkPhase string `json:"benchmark_phase"`
	RequestStartNs int64  `json:"request_start_ns"`
	RequestEndNs   int64  `json:"request_end_ns"`
	WasCancelled   bool   `json:"was_cancelled"`
	// PhaseIndex and SessionNum place the request in AIPerf's sending: its phase
	// (warmup first) and its number in that phase. The contact sheet follows them.
	PhaseIndex int `json:"phase_index"`
	SessionNum int `json:"session_num"`
}

// RecordError is the error AIPerf recorded for a request.
type RecordError struct {
	Code    int    `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Body is the full response body (AIPerf may split it across several response entries).
func (r RawRecord) Body() []byte {
	var b bytes.Buffer
	for _, x := range r.Responses {
		b.WriteString(x.Text)
	}
	return b.Bytes()
}

// Failed says whether AIPerf counted the request as an error, or it was not a 2xx.
func (r RawRecord) Failed() bool {
	return r.Error != nil || r.Metadata.WasCancelled || r.Status < 200 || r.Status > 299
}

// ProfileRecord is one line of profile_export.jsonl.
type ProfileRecord struct {
	Metadata RecordMeta `json:"metadata"`
	Metrics  map[string]struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"metrics"`
	Error *RecordError `json:"error"`
}

// RequestLatencyMs is AIPerf's client end-to-end latency of the request, in ms.
func (p ProfileRecord) RequestLatencyMs() (float64, error) {
	m, ok := p.Metrics["request_latency"]
	if !ok {
		return 0, errors.New("no request_latency")
	}
	if m.Unit != "ms" {
		return 0, fmt.Errorf("request_latency unit %q, want ms", m.Unit)
	}
	return strconv.ParseFloat(string(m.Value), 64)
}

func ReadRaw(path string) ([]RawRecord, error) { return readRecords[RawRecord](path) }

func ReadProfile(path string) ([]ProfileRecord, error) { return readRecords[ProfileRecord](path) }

func readRecords[T any](path string) ([]T, error) {
	var out []T
	err := ReadJSONL(path, func(line []byte) error {
		var r T
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	})
	return out, err
}

// ReadJSONL calls each for every non-empty line of the file at path; lines may be many
// megabytes (images).
func ReadJSONL(path string, each func(line []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := each(line); perr != nil {
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

// ValueAt is the value at a dotted path of a decoded JSON document.
func ValueAt(doc any, path string) (any, error) {
	cur := doc
	for _, key := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %q: %q is not inside an object", path, key)
		}
		if cur, ok = m[key]; !ok {
			return nil, fmt.Errorf("field %q is absent", path)
		}
	}
	return cur, nil
}

// NumberAt is the number (or numeric string) at a dotted path of a decoded JSON document.
func NumberAt(doc any, path string) (float64, error) {
	v, err := ValueAt(doc, path)
	if err != nil {
		return 0, err
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0, fmt.Errorf("field %q = %q is not a number", path, x)
		}
		return f, nil
	}
	return 0, fmt.Errorf("field %q is %T, not a number", path, v)
}
