package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// Compiling the harness's and the family's own programs (the tool commands) is harness
// time, not model work (issue 48: a first run's tools_s was 50.8 of 55.1 s "model work").
func TestTimeBudgetCountsToolsAsHarnessTime(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	r := &row{s: &Suite{cfg: SuiteConfig{Serial: true}}, st: rowState{started: t0, ended: t0.Add(60 * time.Second)},
		spec: family.Spec{Timing: schema.TimingSource{Body: "timing.task_ms"}},
		res: &schema.Result{StartupS: 1.5, Bundle: &schema.BundleInfo{BuildS: 0.7},
			Stages: []schema.StageResult{{Name: schema.StageBuild, WallS: 52}, {Name: schema.StageCorrectness, WallS: 2.5}}}}
	tb := r.timeBudget(&made{bundle: bundle{toolsS: 50.8}, caseOut: caseRun{wallS: 2}})
	require.NotNil(t, tb)
	assert.InDelta(t, 50.8, tb.ToolsS, 1e-9)
	assert.Zero(t, tb.Model.LegacyToolsS)
	assert.InDelta(t, 0.7+2+1.5, tb.ModelWorkS, 1e-9, "the bundle build, the case and the load; not the tools")
	assert.InDelta(t, 60-4.2, tb.HarnessS, 1e-9, "the tools are in the harness's time")
	assert.InDelta(t, tb.ModelWorkS, tb.CriticalPathS, 1e-9)
}
