package qwenimage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/family/familytest"
)

// Each of the package's families keeps the family contract, in each TRTMC layout and
// serving contract it drives.
func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		layout  string
		serving []string
	}{
		{"e9132e79", LayoutE9132e79, nil},
		{"families-perf-serve", LayoutFamilies, []string{ServingPerfServe}},
		{"families-edit-route", LayoutFamilies, []string{ServingEditRoute}},
	} {
		t.Run("trtmc/"+tc.name, func(t *testing.T) {
			a := New(Config{Checkout: checkoutNoServer(t, tc.layout, tc.serving), HFHome: fakeHFCache(t)})
			spec := familytest.Conformance(t, a, Rules, gpuEnv(t, t.TempDir()), rowOf(row()))
			assert.NotNil(t, spec.Image, "TRTMC runs in its image")
			assert.Equal(t, tc.layout == LayoutFamilies, spec.Build == nil, "the families layout's case builds its bundle")
		})
	}
	t.Run("diffusers", func(t *testing.T) {
		spec := familytest.Conformance(t, smokeAdapter(), Rules, rootEnv(t), rowOf(row()))
		assert.NotNil(t, spec.NativeBatch)
		assert.Nil(t, spec.Image, "no base image: processes")
	})
	t.Run("perf-serve-reference", func(t *testing.T) {
		spec := familytest.Conformance(t, perfServeRefAdapter("/shared/trtmc-perf-serve"), Rules, psrEnv, rowOf(row()))
		assert.True(t, spec.NativeBatch != nil && spec.BatchWaits)
		assert.Nil(t, spec.Image, "processes")
	})
}
