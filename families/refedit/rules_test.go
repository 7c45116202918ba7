package refedit

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/judge"
)

// The checker's rules for the family are its code's: the Task time sources Timing gives,
// and the log lines its server and batch program write (lines from the committed
// reference run, docs/evidence/reference-run).
func TestCheckerRulesAreTheFamilys(t *testing.T) {
	rules, ok := judge.Find(Rules, Backend)
	require.True(t, ok)
	tt := rules.TaskTime(judge.Row{})
	assert.Contains(t, tt.Sources, Family{}.timing())
	assert.Contains(t, tt.Sources, Family{RecordsTiming: true}.timing())
	assert.Equal(t, []string{"timing.task_ms", "timing.task_ms", "request_id"}, []string{tt.Body, tt.Records, tt.RecordID})

	m := rules.ServerLog.FindStringSubmatch("refedit: 2026/12/04 10:57:04.236550 POST /v1/images/edits 200 35.0ms request_id=d02e4abc-045d-4c21-a982-a24f721d5463")
	require.NotNil(t, m)
	assert.Equal(t, "d02e4abc-045d-4c21-a982-a24f721d5463", m[rules.ServerLog.SubexpIndex("id")])
	assert.Equal(t, "200", m[rules.ServerLog.SubexpIndex("status")])
	assert.Nil(t, rules.ServerLog.FindStringSubmatch("refedit: 2026/12/04 10:57:00.547013 GET /health/ready 503 0.1ms request_id=6c087093-4d6d-4060-8d1a-854cdba308d3"), "readiness is no edit")

	m = rules.NativeBatchLog.FindStringSubmatch("refedit: batch 2/6 c7077d86-24cb-407e-b6f9-9b1ad99631b6: 42ae3c417656 (15.1 ms)")
	require.NotNil(t, m)
	for g, want := range map[string]string{"n": "2", "total": "6", "id": "c7077d86-24cb-407e-b6f9-9b1ad99631b6", "sha": "42ae3c417656"} {
		assert.Equal(t, want, m[rules.NativeBatchLog.SubexpIndex(g)], g)
	}
}

// The checker's case judge is the case's own (correctness/metrics.py violations): an
// edit's override replaces only the bounds it names, and a null PSNR is infinite.
func TestJudgeCaseIsTheCasesJudge(t *testing.T) {
	gates, err := os.ReadFile("correctness/thresholds.json")
	require.NoError(t, err)
	result := `{"cases": [
		{"id": "p", "edit": "posterize", "metrics": {"max_abs_diff_levels_unexcused": 0, "values_off_away_from_ties": 0, "max_abs_diff_levels": 170, "frac_diff_gt1": 0.0005, "mean_abs_diff_levels": 0.1, "psnr_db": 40, "excused_frac": 0.001, "changed_frac_vs_base": 0.5}},
		{"id": "g", "edit": "grayscale", "metrics": {"max_abs_diff_levels_unexcused": 0, "values_off_away_from_ties": 0, "max_abs_diff_levels": 2, "frac_diff_gt1": 0, "mean_abs_diff_levels": 0, "psnr_db": null, "excused_frac": 0, "changed_frac_vs_base": 0.5}},
		{"id": "x", "edit": "invert"}]}`
	missed, err := judgeCase([]byte(result), gates)
	require.NoError(t, err)
	assert.Equal(t, []string{"case g (grayscale): max_abs_diff_levels=2 > max 1", "case x (invert): no metrics"}, missed)
}
