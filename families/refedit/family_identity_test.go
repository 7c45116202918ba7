package refedit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/family/familytest"
)

// The family holds to its contract, as it serves the reference row and as the negative
// controls break it.
func TestConformance(t *testing.T) {
	row := family.Row{Name: "refedit-v1", Model: "qualkit/refedit-v1", Profile: "refedit-v1"}
	env := family.Env{Root: "/repo", Python: "/repo/.venv/bin/python"}
	spec := familytest.Conformance(t, Default, Rules, env, row)
	assert.True(t, spec.NativeBatch != nil && spec.BatchWaits && spec.Image != nil && spec.Build != nil)
	oneShot := familytest.Conformance(t, Faulty{Family: Default, OneShot: true}, Rules, env, row)
	assert.Nil(t, oneShot.NativeBatch, "OneShot: one refedit run per replay")
}

// The server names the checkpoint its bundle was built from under the row's name; the
// harness holds the row to it (a row copied under another model fails at serve, naming
// both: qual's acme control).
func TestIdentityNamesTheServedCheckpoint(t *testing.T) {
	spec, err := Default.Describe(family.Env{}, family.Row{})
	require.NoError(t, err)
	check := spec.Identity.Check
	got, err := check([]byte(`{"data":[{"id":"qualkit/refedit-v1","checkpoint":"qualkit/refedit-v1"}]}`), family.ServeSpec{Model: "qualkit/refedit-v1"})
	require.NoError(t, err)
	assert.Equal(t, "qualkit/refedit-v1", got)
	got, err = check([]byte(`{"data":[{"id":"acme/edit-v1","checkpoint":"qualkit/refedit-v1"}]}`), family.ServeSpec{Model: "acme/edit-v1"})
	require.NoError(t, err)
	assert.Equal(t, "qualkit/refedit-v1", got, "the bundle's checkpoint, which the harness compares with the row's model")
	got, err = check([]byte(`{"data":[{"id":"qualkit/refedit-v1"}]}`), family.ServeSpec{Model: "qualkit/refedit-v1"})
	require.NoError(t, err)
	assert.Empty(t, got, "a server that names no checkpoint: the harness fails the row on it")
	_, err = check([]byte(`{"data":[]}`), family.ServeSpec{Model: "qualkit/refedit-v1"})
	assert.ErrorContains(t, err, `lists no model "qualkit/refedit-v1"`)
	_, err = check([]byte(`<html>`), family.ServeSpec{})
	assert.ErrorContains(t, err, "not JSON")
}

// Faulty breaks the builders its family hands over: the batch gets the native fault and
// the state leak, the image the memory cap; OneShot takes the batch away.
func TestFaultyWrapsTheSpecsBuilders(t *testing.T) {
	env := family.Env{Root: "/repo", Work: "/work"}
	spec, err := Faulty{Family: Default, NativeFault: "drift", LeakState: true, MemoryBytes: 10 << 20}.Describe(env, family.Row{})
	require.NoError(t, err)
	batch, err := spec.NativeBatch(env, family.NativeBatchSpec{Bundle: "/b", Items: "/i", Report: "/r"})
	require.NoError(t, err)
	assert.Equal(t, []string{"/work/image/refedit", "run", "/b", "--batch", "/i", "--report", "/r", "--fault", "drift", "--leak-state"}, batch.Args)
	img, err := spec.Image(env)
	require.NoError(t, err)
	assert.Equal(t, int64(10<<20), img.MemoryBytes)
	assert.NotNil(t, spec.Build, "the harness builds the bundle")
}
