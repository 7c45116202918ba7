package family

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/schema"
)

// Validate names every problem of a Spec at once: a Task-time source that names no
// place, or reads the records with no request id to join on, and a batch wait without
// a batch program.
func TestSpecValidate(t *testing.T) {
	ok := Spec{Backend: "b", Timing: schema.TimingSource{Body: "timing.task_ms"},
		Identity: IdentityCheck{Path: "/v1/models", Check: func([]byte, ServeSpec) (string, error) { return "m", nil }}}
	assert.NoError(t, ok.Validate())

	bad := ok
	bad.Timing = schema.TimingSource{Records: "x"}
	bad.BatchWaits = true
	err := bad.Validate()
	assert.ErrorContains(t, err, `Spec.Timing reads the records field "x" but names no request-id field`)
	assert.ErrorContains(t, err, "Spec.BatchWaits without Spec.NativeBatch")

	bad.Timing = schema.TimingSource{}
	assert.ErrorContains(t, bad.Validate(), "Spec.Timing names neither a body field nor a records field")
}
