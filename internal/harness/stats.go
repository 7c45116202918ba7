package harness

import (
	"math"
	"sort"
)

// PercentileMethod is written next to every percentile the harness reports.
const PercentileMethod = "nearest-rank"

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

// Quantiles is the p50/p95 pair of one timing column, in milliseconds.
type Quantiles struct {
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	Count  int     `json:"count"`
	Method string  `json:"method"`
}

func NewQuantiles(ms []float64) Quantiles {
	return Quantiles{P50: Percentile(ms, 50), P95: Percentile(ms, 95), Count: len(ms), Method: PercentileMethod}
}

// ImagesPerSecond is measured images / (last request end - first request start) over the
// profiling records: steady state, warmup excluded.
func ImagesPerSecond(recs []RawRecord) float64 {
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
