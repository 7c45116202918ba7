package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCapability(t *testing.T) {
	valid := map[string]capability{
		"9.0":  {9, 0},
		"8.6":  {8, 6},
		"10.0": {10, 0},
		"12.1": {12, 1},
	}
	for in, want := range valid {
		got, err := parseCapability(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Equal(t, in, got.String())
	}
	for _, in := range []string{"", "9", "9.", ".0", "+9.0", "9.-1", " 9.0", "9.0.1", "nine.zero", "sm_90"} {
		_, err := parseCapability(in)
		assert.ErrorContains(t, err, "want MAJOR.MINOR", "%q", in)
	}
}

func TestCapabilityOrderIsNumeric(t *testing.T) {
	// "10.0" < "9.0" as strings; as capabilities Blackwell is newer than Hopper.
	assert.True(t, capability{9, 0}.less(capability{10, 0}))
	assert.True(t, capability{8, 6}.less(capability{8, 9}))
	assert.False(t, capability{9, 0}.less(capability{9, 0}))
	assert.False(t, capability{9, 0}.less(capability{8, 9}))
}
