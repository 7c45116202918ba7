package gpu

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceRequestPinsByUUID(t *testing.T) {
	got, err := DeviceRequest([]Device{{Index: 3, UUID: "GPU-c"}, {Index: 0, UUID: "GPU-a"}})

	require.NoError(t, err)
	assert.Equal(t, DeviceRequestFields{
		Driver:       "nvidia",
		DeviceIDs:    []string{"GPU-c", "GPU-a"},
		Capabilities: [][]string{{"gpu"}},
	}, got)
}

func TestDeviceRequestFromSelection(t *testing.T) {
	r := loadH200(t)
	devs, err := Select(r, Needs{Count: 1, MinMemoryBytes: 80 << 30, MinComputeCapability: "9.0"})
	require.NoError(t, err)

	got, err := DeviceRequest(devs)

	require.NoError(t, err)
	assert.Equal(t, []string{devs[0].UUID}, got.DeviceIDs)
}

func TestDeviceRequestRefuses(t *testing.T) {
	tests := []struct {
		name string
		devs []Device
		want string
	}{
		{"no GPU", nil, "no GPU selected; a CPU-only row needs no device request"},
		{"GPU without UUID", []Device{{Index: 2, Name: "NVIDIA H200"}}, "GPU 2 (NVIDIA H200) has no UUID"},
		{"same GPU twice", []Device{{UUID: "GPU-a"}, {UUID: "GPU-a"}}, "GPU 0 (GPU-a) selected twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DeviceRequest(tt.devs)

			assert.Zero(t, got)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
