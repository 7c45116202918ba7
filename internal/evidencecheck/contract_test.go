package evidencecheck_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// The checker re-derives every number on its own, so that it cannot share the harness's
// bugs, and reads the one schema; these tests keep the rest of the format in step.
func TestContractWithTheHarness(t *testing.T) {
	names := harness.StageNames()
	assert.Equal(t, names[:len(names)-1], schema.Stages, "stages (the harness's StageNames less report)")
	assert.Equal(t, "report", names[len(names)-1])
	assert.Equal(t, harness.AIPerfVersion, evidencecheck.AIPerfVersion)
}
