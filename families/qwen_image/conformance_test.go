package qwenimage

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/family/familytest"
	"qualkit/internal/schema"
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
			// The controls of the contract the row drives: perf-serve's task route refuses
			// nothing (declared gaps), the edit route refuses an unknown field by name.
			switch {
			case tc.serving == nil:
				assert.Nil(t, spec.Controls, "no server, no controls")
			case tc.serving[0] == ServingPerfServe:
				assert.Empty(t, spec.Controls.Refused)
				assert.Contains(t, fields(spec.Controls.Accepted), "qualkit_unknown_control")
			default:
				assert.Equal(t, []string{"qualkit_unknown_control"}, fields(spec.Controls.Refused))
				assert.Equal(t, []string{"0"}, spec.Controls.Controls[1].Invalid)
				assert.Empty(t, spec.Controls.Controls[0].Recorded, "the route's records are not public")
			}
		})
	}
	t.Run("diffusers", func(t *testing.T) {
		spec := familytest.Conformance(t, smokeAdapter(), Rules, rootEnv(t), rowOf(row()))
		assert.NotNil(t, spec.NativeBatch)
		assert.Nil(t, spec.Image, "no base image: processes")
		assert.Equal(t, "fp32", spec.Controls.Precision, "the smoke profile's, as its records state it")
		assert.Contains(t, fields(spec.Controls.Refused), "guidance_scale")
	})
	t.Run("perf-serve-reference", func(t *testing.T) {
		spec := familytest.Conformance(t, perfServeRefAdapter("/shared/trtmc-perf-serve"), Rules, psrEnv, rowOf(row()))
		assert.True(t, spec.NativeBatch != nil && spec.BatchWaits)
		assert.Nil(t, spec.Image, "processes")
		assert.Equal(t, []string{"num_inference_steps", "qualkit_unknown_control"}, fields(spec.Controls.Accepted))
	})
}

func fields(rs []schema.Refusal) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Field)
	}
	return out
}
