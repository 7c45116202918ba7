package harness

import (
	"math"
	"sort"

	"qualkit/internal/schema"
)

// Percentile is the nearest-rank percentile: the smallest value with at least p% of the
// sample at or below it (sorted[ceil(p/100*n)-1]). It is one of the sample's own values,
// so a reader can find it in the raw records.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

func NewQuantiles(ms []float64) schema.Quantiles {
	return schema.Quantiles{P50: Percentile(ms, 50), P95: Percentile(ms, 95), P99: Percentile(ms, 99), Count: len(ms), Method: schema.PercentileMethod}
}

// FirstRequest is the request AIPerf sent first (earliest request_start_ns), any phase,
// with its client latency; nil when there is none or AIPerf recorded no latency for it.
func FirstRequest(raw []schema.RawRecord, profile []schema.ProfileRecord) *schema.FirstRequest {
	if len(raw) == 0 {
		return nil
	}
	first := raw[0].Metadata
	for _, r := range raw[1:] {
		if r.Metadata.RequestStartNs < first.RequestStartNs {
			first = r.Metadata
		}
	}
	for _, p := range profile {
		if p.Metadata.XRequestID != first.XRequestID {
			continue
		}
		if ms, err := p.RequestLatencyMs(); err == nil {
			return &schema.FirstRequest{RequestID: first.XRequestID, Phase: first.BenchmarkPhase, ClientMs: ms}
		}
	}
	return nil
}

// ImagesPerSecond is measured images / (last request end - first request start) over the
// profiling records: steady state, warmup excluded.
func ImagesPerSecond(recs []schema.RawRecord) float64 {
	if len(recs) == 0 {
		return 0
	}
	first, last := recs[0].Metadata.RequestStartNs, recs[0].Metadata.RequestEndNs
	for _, r := range recs {
		first = min(first, r.Metadata.RequestStartNs)
		last = max(last, r.Metadata.RequestEndNs)
	}
	if last <= first {
		return 0
	}
	return float64(len(recs)) / (float64(last-first) / 1e9)
}
