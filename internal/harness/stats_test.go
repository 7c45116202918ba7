package harness

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
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
	rec := func(start, end int64) RawRecord {
		return RawRecord{Metadata: RecordMeta{RequestStartNs: start, RequestEndNs: end}}
	}
	recs := []RawRecord{rec(1e9, 2e9), rec(2e9, 3e9), rec(3e9, 5e9)}
	assert.InDelta(t, 0.75, ImagesPerSecond(recs), 1e-12) // 3 images over 4 s
	assert.Zero(t, ImagesPerSecond(nil))
}
