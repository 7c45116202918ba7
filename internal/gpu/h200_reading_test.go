package gpu

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed reading is what NVML reported on the H200 machine.
func TestRealH200Reading(t *testing.T) {
	b, err := os.ReadFile("testdata/h200.json")
	require.NoError(t, err)
	r, err := ParseReading(b)
	require.NoError(t, err)
	require.Len(t, r.Devices, 1)
	d := r.Devices[0]
	assert.Equal(t, "NVIDIA H200", d.Name)
	assert.Equal(t, "GPU-6ea39981-06e9-e164-868f-5f8b0a01e6b1", d.UUID)
	assert.Equal(t, uint64(150754820096), d.MemoryTotalBytes)
	assert.Equal(t, "9.0", d.ComputeCapability)
	assert.Equal(t, "580.159.04", r.DriverVersion)
	assert.Equal(t, 13000, r.CUDADriverVersion)

	// A Qwen-Image-Edit-sized row (80 GiB, Hopper) gets exactly this GPU, by UUID.
	sel, err := Select(r, Needs{Count: 1, MinMemoryBytes: 80 << 30, MinComputeCapability: "9.0"})
	require.NoError(t, err)
	assert.Equal(t, []Device{d}, sel)

	// Two GPUs cannot be had from this host, and the message says why.
	_, err = Select(r, Needs{Count: 2})
	require.ErrorIs(t, err, ErrNotEnoughGPUs)
	assert.Contains(t, err.Error(), "2 GPUs")
}
