package harness

import (
	"encoding/json"
	"fmt"
	"math"
	"qualkit/internal/schema"
)

func taskFromBody(ts schema.TimingSource, body []byte) (float64, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("response body is not JSON: %w", err)
	}
	return schema.NumberAt(doc, ts.Body)
}

func recordIDs(ts schema.TimingSource, path string) (map[string]bool, error) {
	ids := map[string]bool{}
	err := eachRecord(path, func(doc any) {
		if id, err := schema.ValueAt(doc, ts.RecordID); err == nil {
			ids[fmt.Sprint(id)] = true
		}
	})
	return ids, err
}

// tasksFromRecords reads every Task time in a records JSONL file, keyed by request id.
// Lines without the timing field (failed requests, other routes) are left out.
func tasksFromRecords(ts schema.TimingSource, path string) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachRecord(path, func(doc any) {
		id, err := schema.ValueAt(doc, ts.RecordID)
		if err != nil {
			return
		}
		if ms, err := schema.NumberAt(doc, ts.Records); err == nil {
			out[fmt.Sprint(id)] = ms
		}
	})
	return out, err
}

func eachRecord(path string, each func(doc any)) error {
	err := schema.ReadJSONL(path, func(line []byte) error {
		var doc any
		if err := json.Unmarshal(line, &doc); err != nil {
			return err
		}
		each(doc)
		return nil
	})
	if err != nil {
		return fmt.Errorf("server records %s: %w", path, err)
	}
	return nil
}

// sameMs is equality of two times in ms up to float noise (one part in 10^9).
func sameMs(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}
