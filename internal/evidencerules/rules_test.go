package evidencerules

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A family's rules are whole: the pair's, the Task time's, and log patterns with the
// groups the checker joins on.
func TestRegisterRefusesPartialRules(t *testing.T) {
	whole := Rules{
		PairReference: func(string, string) string { return "" },
		PairMetric:    func(string) string { return "" },
		TaskTime:      func(Row) TaskTime { return TaskTime{} },
	}
	noTask := whole
	noTask.TaskTime = nil
	assert.PanicsWithValue(t, `evidencerules: backend "partial": PairReference, PairMetric and TaskTime are required`, func() { Register("partial", noTask) })
	noID := whole
	noID.ServerLog = regexp.MustCompile(`(?P<status>\d{3})`)
	assert.PanicsWithValue(t, `evidencerules: backend "partial": ServerLog has no group "id"`, func() { Register("partial", noID) })
	noSHA := whole
	noSHA.NativeBatchLog = regexp.MustCompile(`(?P<n>\d+)/(?P<total>\d+) (?P<id>\S+)`)
	assert.PanicsWithValue(t, `evidencerules: backend "partial": NativeBatchLog has no group "sha"`, func() { Register("partial", noSHA) })
	_, ok := For("partial")
	assert.False(t, ok)
}
