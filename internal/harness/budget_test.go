package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// Compiling the harness's and the family's own programs (the tool commands) is harness
// time, not model work (issue 48: a first run's tools_s was 50.8 of 55.1 s "model work").
func TestTimeBudgetCountsToolsAsHarnessTime(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	r := &row{s: &Suite{cfg: SuiteConfig{Serial: true}}, started: t0, ended: t0.Add(60 * time.Second), toolsS: 50.8, caseS: 2,
		spec: Spec{Timing: TimingSource{Body: "timing.task_ms"}},
		result: &schema.Result{StartupS: 1.5, Bundle: &schema.BundleInfo{BuildS: 0.7},
			Stages: []schema.StageResult{{Name: schema.StageBuild, WallS: 52}, {Name: schema.StageCorrectness, WallS: 2.5}}}}
	tb := r.timeBudget()
	require.NotNil(t, tb)
	assert.InDelta(t, 50.8, tb.ToolsS, 1e-9)
	assert.Zero(t, tb.Model.LegacyToolsS)
	assert.InDelta(t, 0.7+2+1.5, tb.ModelWorkS, 1e-9, "the bundle build, the case and the load; not the tools")
	assert.InDelta(t, 60-4.2, tb.HarnessS, 1e-9, "the tools are in the harness's time")
	assert.InDelta(t, tb.ModelWorkS, tb.CriticalPathS, 1e-9)
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
