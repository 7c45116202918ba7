package refedit

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/judge"
)

// The rules this family declares for the checker (Rules) name where its case
// writes the pair's reference image: the path its quality spec names, and qualkit's own
// formula.
func TestPairReferenceIsTheCheckersRule(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	spec, err := quality(family.Env{Root: root})
	require.NoError(t, err)
	require.NotNil(t, spec.Pair)
	rules, ok := judge.Find(Rules, Backend)
	require.True(t, ok, "the family declares its evidence rules")
	assert.Equal(t, spec.Pair.Reference, rules.PairReference("", ""))
	assert.Equal(t, spec.Criteria.PairMetric, rules.PairMetric(""))
}
