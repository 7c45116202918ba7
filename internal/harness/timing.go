package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TimingSource says where a server reports the wall time of its Task call, in ms.
// AIPerf never records response headers, so only the body or a records file will do.
// Paths are dotted JSON keys ("timing.task_ms", "trtmc_timing.model_call_ms").
type TimingSource struct {
	Body     string // path in the response body
	Records  string // path in one line of the server's records JSONL
	RecordID string // path of the request id in a records line, joined on X-Request-ID
}

func (ts TimingSource) String() string {
	if ts.Body != "" {
		return "response body " + ts.Body
	}
	return fmt.Sprintf("records file %s joined on %s", ts.Records, ts.RecordID)
}

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

// FromRecords reads every Task time in a records JSONL file, keyed by request id.
// Lines without the timing field (failed requests, other routes) are left out.
func (ts TimingSource) FromRecords(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server records: %w", err)
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var doc any
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			return nil, fmt.Errorf("server records %s line %d: %w", path, n, err)
		}
		id, err := valueAt(doc, ts.RecordID)
		if err != nil {
			continue
		}
		ms, err := numberAt(doc, ts.Records)
		if err != nil {
			continue
		}
		out[fmt.Sprint(id)] = ms
	}
	return out, sc.Err()
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
