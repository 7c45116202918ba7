package nvmlread

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/gpu"
)

// These tests call the real NVML. They run everywhere and never skip: on a
// host without the driver they check the failure, on a GPU host the reading.

func TestDiscoverOnThisHost(t *testing.T) {
	first, err := Discover()
	if err == nil {
		requireSaneReading(t, first)
		return
	}
	requireNoDriverError(t, err)
	assert.Zero(t, first, "no partial reading on error")

	// A failed Init must leave go-nvml loadable again, not half-initialised.
	second, err2 := Discover()
	require.Error(t, err2)
	assert.Equal(t, err.Error(), err2.Error())
	assert.Zero(t, second)
}

// TestDiscoverOnGPU is the check to run on the GPU machine with
// QUALKIT_EXPECT_GPU=1: Discover must then succeed and see at least one GPU.
// With QUALKIT_GPU_READING_OUT set, the reading is written there (the source
// of ../testdata/h200.json). Without QUALKIT_EXPECT_GPU it checks that the
// failure a GPU-less host gives says what is missing and what is needed.
func TestDiscoverOnGPU(t *testing.T) {
	expectGPU := false
	switch v := os.Getenv("QUALKIT_EXPECT_GPU"); v {
	case "", "0":
	case "1":
		expectGPU = true
	default:
		t.Fatalf("QUALKIT_EXPECT_GPU=%q: want 1 (GPU required) or unset/0", v)
	}

	r, err := Discover()
	if err != nil {
		if expectGPU {
			require.NoError(t, err, "QUALKIT_EXPECT_GPU=1 but NVML discovery failed")
		}
		requireNoDriverError(t, err)
		msg := err.Error()
		assert.Contains(t, msg, "nvml.Init", "names the failing call")
		assert.Contains(t, msg, "libnvidia-ml.so.1", "names what is missing")
		assert.Contains(t, msg, "needs the N", "says what is needed")
		return
	}
	requireSaneReading(t, r)
	if expectGPU {
		require.NotEmpty(t, r.Devices, "QUALKIT_EXPECT_GPU=1 but NVML sees no GPU")
		for _, d := range r.Devices {
			assert.NotEmpty(t, d.PCIBusID, "GPU %d has no PCI bus id", d.Index)
		}
		t.Attr("gpu_count", strconv.Itoa(r.Count))
		t.Attr("gpu_driver_version", r.DriverVersion)
		t.Attr("gpu_name", r.Devices[0].Name)
	}
	writeReading(t, r)
}

// requireNoDriverError accepts only the two "no usable driver" failures:
// anything else on a host is a real discovery bug.
func requireNoDriverError(t *testing.T, err error) {
	t.Helper()
	switch {
	case errors.Is(err, gpu.ErrNoDriver):
		assert.ErrorIs(t, err, nvml.ERROR_LIBRARY_NOT_FOUND)
		assert.Contains(t, err.Error(), "libnvidia-ml.so.1 not found: no NVIDIA driver on this host")
		assert.Contains(t, err.Error(), "needs the NVIDIA driver installed")
	case errors.Is(err, gpu.ErrDriverNotLoaded):
		assert.ErrorIs(t, err, nvml.ERROR_DRIVER_NOT_LOADED)
		assert.Contains(t, err.Error(), "needs the nvidia kernel module loaded")
	default:
		require.FailNow(t, "Discover failed for a reason other than a missing driver", "%v", err)
	}
}

func requireSaneReading(t *testing.T, r gpu.Reading) {
	t.Helper()
	require.NoError(t, r.Validate())
	assert.NotEmpty(t, r.DriverVersion)
	assert.NotEmpty(t, r.NVMLVersion)
	assert.GreaterOrEqual(t, r.CUDADriverVersion, 1000)
	for _, d := range r.Devices {
		assert.Truef(t, strings.HasPrefix(d.UUID, "GPU-") || strings.HasPrefix(d.UUID, "MIG-"),
			"GPU %d UUID %q is not an NVML UUID", d.Index, d.UUID)
	}
}

// writeReading saves the reading where QUALKIT_GPU_READING_OUT says, and
// proves the saved file loads back as the same reading.
func writeReading(t *testing.T, r gpu.Reading) {
	t.Helper()
	path := os.Getenv("QUALKIT_GPU_READING_OUT")
	if path == "" {
		return
	}
	b, err := r.JSON()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	again, err := gpu.ParseReading(saved)
	require.NoError(t, err, path)
	assert.Equal(t, r, again)
	t.Logf("GPU reading written to %s", path)
}
