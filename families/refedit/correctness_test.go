package refedit

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/harness"
)

// The reference case and its negative-control variants run with no plugin of the venv's
// (the env is in the row's commands.jsonl).
func TestCorrectnessCaseLoadsNoPlugins(t *testing.T) {
	env := harness.Env{Root: "/r", Python: "/v/bin/python"}
	spec := harness.CorrectnessSpec{Bundle: "/b", Artifacts: "/a", JUnit: "/j.xml"}
	assert.Equal(t, []string{NoPluginsEnv}, Family{}.Correctness(env, spec).Command.Env)
	for _, fault := range []CaseFault{CaseSkips, CaseSelectsNone} {
		assert.Equal(t, []string{NoPluginsEnv}, Faulty{CaseFault: fault}.Correctness(env, spec).Command.Env, "case fault %v", fault)
	}
}
