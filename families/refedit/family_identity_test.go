package refedit

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/harness"
)

// The row is held to the checkpoint its server says its bundle holds: the listed model
// under the row's name must carry the row's model as its checkpoint.
func TestIdentityHoldsTheRowToTheServedCheckpoint(t *testing.T) {
	check := Default.Identity(harness.ServeSpec{Model: "qualkit/refedit-v1"}).Check
	assert.NoError(t, check([]byte(`{"data":[{"id":"qualkit/refedit-v1","checkpoint":"qualkit/refedit-v1"}]}`)))
	acme := Default.Identity(harness.ServeSpec{Model: "acme/edit-v1"}).Check
	assert.ErrorContains(t, acme([]byte(`{"data":[{"id":"acme/edit-v1","checkpoint":"qualkit/refedit-v1"}]}`)),
		`the server serves checkpoint "qualkit/refedit-v1" (its bundle's), the row's model is "acme/edit-v1"`)
	assert.ErrorContains(t, check([]byte(`{"data":[{"id":"qualkit/refedit-v1"}]}`)), `serves checkpoint ""`, "a server that names no checkpoint")
	assert.ErrorContains(t, check([]byte(`{"data":[]}`)), `lists no model "qualkit/refedit-v1"`)
	assert.ErrorContains(t, check([]byte(`<html>`)), "not JSON")
}
