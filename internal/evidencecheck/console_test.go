package evidencecheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AIPerf 0.13.0 writes console values with thousands grouped (f"{value:,.2f}"): a row whose
// requests took over a second (a loaded host, a real checkpoint) must read as the same
// numbers; a value that is not AIPerf's spelling must not.
func TestConsoleLatencyPastASecond(t *testing.T) {
	table := "┃                                        Metric ┃    avg ┃    min ┃      max ┃      p99 ┃      p90 ┃    p50 ┃    std ┃\n" +
		"│                          Request Latency (ms) │ 988.73 │ 819.49 │ 1,392.90 │ 1,380.04 │ 1,264.30 │ 832.83 │ 223.28 │\n"
	m := consoleLatency.FindStringSubmatch(table)
	require.NotNil(t, m)
	assert.Equal(t, []string{"988.73", "819.49", "1,392.90"}, m[1:])
	p := consoleLatencyRow.FindStringSubmatch(table)
	require.NotNil(t, p)
	assert.Equal(t, []string{"1,380.04", "1,264.30", "832.83"}, p[1:])
	assert.True(t, consoleColumns.MatchString(table))

	for _, bad := range []string{"1,39.290", "1392.9", ",392.90", "1,3920.90"} {
		assert.False(t, consoleLatency.MatchString("│ Request Latency (ms) │ 988.73 │ 819.49 │ "+bad+" │"), bad)
	}
}
