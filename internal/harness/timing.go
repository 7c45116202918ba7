package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// TimingSource says where a server reports the wall time of its Task call, in ms.
// AIPerf never records response headers, so only the body or a records file will do.
// Paths are dotted JSON keys ("timing.task_ms", "trtmc_timing.model_call_ms").
//
// With Body set, the time comes from the body; a RecordID then still makes the harness
// prove that the server honours X-Request-ID (every measured request id must appear in
// the records file), which the body alone cannot show, and Records set too makes every
// records line's time agree with its response's.
type TimingSource struct {
	Body     string // path in the response body
	Records  string // path in one line of the server's records JSONL
	RecordID string // path of the request id in a records line, joined on X-Request-ID
}

// Schema is the source as results.json records it.
func (ts TimingSource) Schema() *schema.TimingSource {
	return &schema.TimingSource{Body: ts.Body, Records: ts.Records, RecordID: ts.RecordID}
}

func (ts TimingSource) String() string { return ts.Schema().String() }

// Validate rejects a source that names neither place, or a records source without a join key.
func (ts TimingSource) Validate() error {
	switch {
	case ts.Body == "" && ts.Records == "":
		return fmt.Errorf("timing source names neither a body field nor a records field")
	case ts.Records != "" && ts.RecordID == "":
		return fmt.Errorf("timing source %q reads the records file but names no request-id field to join on", ts.Records)
	}
	return nil
}

// FromBody reads the Task time from one response body.
func (ts TimingSource) FromBody(body []byte) (float64, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("response body is not JSON: %w", err)
	}
	return numberAt(doc, ts.Body)
}

// RecordIDs lists the request ids of every line of a records file that carries one.
func (ts TimingSource) RecordIDs(path string) (map[string]bool, error) {
	ids := map[string]bool{}
	err := eachRecord(path, func(doc any) {
		if id, err := valueAt(doc, ts.RecordID); err == nil {
			ids[fmt.Sprint(id)] = true
		}
	})
	return ids, err
}

// FromRecords reads every Task time in a records JSONL file, keyed by request id.
// Lines without the timing field (failed requests, other routes) are left out.
func (ts TimingSource) FromRecords(path string) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachRecord(path, func(doc any) {
		id, err := valueAt(doc, ts.RecordID)
		if err != nil {
			return
		}
		if ms, err := numberAt(doc, ts.Records); err == nil {
			out[fmt.Sprint(id)] = ms
		}
	})
	return out, err
}

func eachRecord(path string, each func(doc any)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("server records: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var doc any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			return fmt.Errorf("server records %s line %d: %w", path, n, err)
		}
		each(doc)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("server records %s: %w", path, err)
	}
	return nil
}

func valueAt(doc any, path string) (any, error) {
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

func numberAt(doc any, path string) (float64, error) {
	v, err := valueAt(doc, path)
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

// sameMs is equality of two times in ms up to float noise (one part in 10^9).
func sameMs(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
