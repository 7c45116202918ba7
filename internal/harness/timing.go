package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"qualkit/internal/schema"
	"strconv"
	"strings"
)

func taskFromBody(ts schema.TimingSource, body []byte) (float64, error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("response body is not JSON: %w", err)
	}
	return numberAt(doc, ts.Body)
}

func recordIDs(ts schema.TimingSource, path string) (map[string]bool, error) {
	ids := map[string]bool{}
	err := eachRecord(path, func(doc any) {
		if id, err := valueAt(doc, ts.RecordID); err == nil {
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
