package family

import (
	"encoding/json"
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

// A batch item is its request id and its NativeSpec, without the bundle: the JSON the
// batch programs read (refedit run --batch, trtmc-batch, native.py --batch).
func TestNativeItemJSON(t *testing.T) {
	seed := int64(7)
	b, err := json.Marshal(NativeItem{ID: "r1", NativeSpec: NativeSpec{Bundle: "/b", Image: "/in.png", Prompt: "p",
		Settings: map[string]string{"seed": "42"}, LatentSeed: &seed, Output: "/out.png"}})
	assert.NoError(t, err)
	assert.JSONEq(t, `{"id":"r1","image":"/in.png","prompt":"p","settings":{"seed":"42"},"latent_seed":7,"output":"/out.png"}`, string(b))
}
