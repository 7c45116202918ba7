package judge

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A family's rules are whole: the pair's, the Task time's, and log patterns with the
// groups the checker joins on.
func TestValidateRefusesPartialRules(t *testing.T) {
	whole := Rules{
		Backend:       "partial",
		PairReference: func(string, string) string { return "" },
		PairMetric:    func(string) string { return "" },
		TaskTime:      func(Row) TaskTime { return TaskTime{} },
	}
	assert.NoError(t, whole.Validate())
	noTask := whole
	noTask.TaskTime = nil
	assert.EqualError(t, noTask.Validate(), `backend "partial": Backend, PairReference, PairMetric and TaskTime are required, JudgeCase with CaseGates`)
	noJudge := whole
	noJudge.CaseGates = "gates.json"
	assert.Error(t, noJudge.Validate())
	noID := whole
	noID.ServerLog = regexp.MustCompile(`(?P<status>\d{3})`)
	assert.EqualError(t, noID.Validate(), `backend "partial": ServerLog has no group "id"`)
	noSHA := whole
	noSHA.NativeBatchLog = regexp.MustCompile(`(?P<n>\d+)/(?P<total>\d+) (?P<id>\S+)`)
	assert.EqualError(t, noSHA.Validate(), `backend "partial": NativeBatchLog has no group "sha"`)
	_, ok := Find([]Rules{whole}, "other")
	assert.False(t, ok)
}
