package refedit

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
)

// The checker knows where this family's case writes the pair's reference image
// (evidencecheck.PairReference): the path the family names.
func TestPairReferenceIsTheCheckersRule(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	spec, err := Family{}.Quality(harness.Env{Root: root}, harness.Checkpoint{})
	require.NoError(t, err)
	require.NotNil(t, spec.Pair)
	assert.Equal(t, spec.Pair.Reference, evidencecheck.PairReference(Family{}.Backend(), "", ""))
}
