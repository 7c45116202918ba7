package all

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every family's rules are whole, one list per backend.
func TestRulesAreWholeAndOnePerBackend(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules {
		assert.NoError(t, r.Validate())
		assert.False(t, seen[r.Backend], "backend %q listed twice", r.Backend)
		seen[r.Backend] = true
	}
	assert.Len(t, seen, 4)
}
