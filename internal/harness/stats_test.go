package harness

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

func TestPercentileNearestRank(t *testing.T) {
	xs := []float64{50, 10, 40, 20, 30}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{0, 10}, {20, 10}, {21, 20}, {50, 30}, {80, 40}, {95, 50}, {100, 50}} {
		assert.Equal(t, tc.want, Percentile(xs, tc.p), "p%v", tc.p)
	}
	assert.True(t, math.IsNaN(Percentile(nil, 50)))
	assert.Equal(t, []float64{50, 10, 40, 20, 30}, xs, "Percentile must not reorder its input")
}

func TestImagesPerSecondUsesFirstStartToLastEnd(t *testing.T) {
	rec := func(start, end int64) schema.RawRecord {
		return schema.RawRecord{Metadata: schema.RecordMeta{RequestStartNs: start, RequestEndNs: end}}
	}
	recs := []schema.RawRecord{rec(1e9, 2e9), rec(2e9, 3e9), rec(3e9, 5e9)}
	assert.InDelta(t, 0.75, ImagesPerSecond(recs), 1e-12) // 3 images over 4 s
	assert.Zero(t, ImagesPerSecond(nil))
}

// The first request is the one sent first, whatever its place in the raw export (a
// warmup record written after a profiling one still came first).
func TestFirstRequestIsTheEarliestSent(t *testing.T) {
	raw := []schema.RawRecord{
		{Metadata: schema.RecordMeta{XRequestID: "b", BenchmarkPhase: "profiling", RequestStartNs: 2e9}},
		{Metadata: schema.RecordMeta{XRequestID: "a", BenchmarkPhase: "warmup", RequestStartNs: 1e9}},
	}
	latency := func(id, ms string) schema.ProfileRecord {
		var p schema.ProfileRecord
		p.Metadata.XRequestID = id
		assert.NoError(t, json.Unmarshal([]byte(`{"request_latency": {"value": `+ms+`, "unit": "ms"}}`), &p.Metrics))
		return p
	}
	got := FirstRequest(raw, []schema.ProfileRecord{latency("b", "20"), latency("a", "312.5")})
	assert.Equal(t, &schema.FirstRequest{RequestID: "a", Phase: "warmup", ClientMs: 312.5}, got)
	assert.Nil(t, FirstRequest(raw, []schema.ProfileRecord{latency("b", "20")}), "no latency for the first request")
	assert.Nil(t, FirstRequest(nil, nil))
}

func TestHostReadings(t *testing.T) {
	cpuinfo := []byte("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n")
	assert.Equal(t, "Intel(R) Xeon(R) Platinum 8480+", CPUModel(cpuinfo))
	assert.Equal(t, "", CPUModel([]byte("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd4f\n")), "arm64 names no model")
	assert.Equal(t, int64(2097152000*1024), memInfo([]byte("MemTotal:       2097152000 kB\nMemFree:        1 kB\n"), "MemTotal"))
	assert.Zero(t, memInfo([]byte("MemFree:        1 kB\n"), "MemTotal"))
}

func TestHostLoadFromProc(t *testing.T) {
	la, err := LoadAvg([]byte("20.13 11.50 4.02 3/467 12345\n"))
	require.NoError(t, err)
	assert.Equal(t, [3]float64{20.13, 11.5, 4.02}, la)
	_, err = LoadAvg([]byte("0.5\n"))
	assert.Error(t, err)

	stat := "cpu  4705 356 584 3699176 23060 0 277 1234 0 0\ncpu0 1393280 32966 572056 13343292 6130 0 17875 617 0 0\n"
	st, err := StealSeconds([]byte(stat))
	require.NoError(t, err)
	assert.InDelta(t, 12.34, st, 1e-9, "the aggregate line's eighth value, in USER_HZ ticks")

	l := hostLoad(hostReading{loadavg: la, stealS: 12.34, ok: true}, hostReading{loadavg: [3]float64{1, 2, 3}, stealS: 15.5, ok: true})
	require.NotNil(t, l)
	assert.InDelta(t, 3.16, l.StealS, 1e-9)
	assert.Equal(t, la, l.LoadAvgStart)
	assert.Nil(t, hostLoad(hostReading{}, hostReading{ok: true}), "no reading at the start: nothing to state")
}
