package refedit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

// The reference case and its negative-control variants run with no plugin of the venv's
// (the env is in the row's commands.jsonl).
func TestCorrectnessCaseLoadsNoPlugins(t *testing.T) {
	env := family.Env{Root: "/r", Python: "/v/bin/python"}
	spec := family.CorrectnessSpec{Bundle: "/b", Artifacts: "/a", JUnit: "/j.xml"}
	cc, err := Family{}.Correctness(env, spec)
	require.NoError(t, err)
	assert.Equal(t, []string{NoPluginsEnv}, cc.Command.Env)
	for _, fault := range []CaseFault{CaseSkips, CaseSelectsNone} {
		cc, err := Faulty{CaseFault: fault}.Correctness(env, spec)
		require.NoError(t, err)
		assert.Equal(t, []string{NoPluginsEnv}, cc.Command.Env, "case fault %v", fault)
	}
}
