package nvmlread

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/gpu"
)

func h200GPU(uuid, busID string, free uint64) fakeGPU {
	return fakeGPU{
		name:   "NVIDIA H200",
		uuid:   uuid,
		memory: nvml.Memory{Total: 150754820096, Free: free, Used: 150754820096 - free},
		major:  9, minor: 0,
		busID: busID,
		smMHz: 345, maxMHz: 1980,
	}
}

func TestDiscoverMapsNVMLIntoReading(t *testing.T) {
	lib := newFakeNVML(
		h200GPU("GPU-aaaa", "00000000:19:00.0", 150000000000),
		h200GPU("GPU-bbbb", "00000000:3B:00.0", 1000),
	)

	got, err := discover(lib)

	require.NoError(t, err)
	want := gpu.Reading{
		NVMLVersion:       "13.580.159.04",
		DriverVersion:     "580.159.04",
		CUDADriverVersion: 13000,
		Count:             2,
		Devices: []gpu.Device{
			{Index: 0, Name: "NVIDIA H200", UUID: "GPU-aaaa", MemoryTotalBytes: 150754820096,
				MemoryFreeBytes: 150000000000, ComputeCapability: "9.0", PCIBusID: "00000000:19:00.0", SMClockMHz: 345, SMClockMaxMHz: 1980},
			{Index: 1, Name: "NVIDIA H200", UUID: "GPU-bbbb", MemoryTotalBytes: 150754820096,
				MemoryFreeBytes: 1000, ComputeCapability: "9.0", PCIBusID: "00000000:3B:00.0", SMClockMHz: 345, SMClockMaxMHz: 1980},
		},
	}
	assert.Equal(t, want, got)
	assert.Equal(t, 1, lib.inits)
	assert.Equal(t, 1, lib.shutdowns, "Shutdown must follow a successful Init")
}

func TestDiscoverWithoutGPUsIsAnEmptyReading(t *testing.T) {
	lib := newFakeNVML()

	got, err := discover(lib)

	require.NoError(t, err)
	assert.Equal(t, 0, got.Count)
	assert.NotNil(t, got.Devices, "an empty list, so the evidence says devices: []")
	assert.Empty(t, got.Devices)
	assert.Equal(t, 1, lib.shutdowns)
}

func TestDiscoverInitFailures(t *testing.T) {
	tests := []struct {
		name     string
		ret      nvml.Return
		sentinel error
		message  string
	}{
		{
			name:     "library missing is ErrNoDriver",
			ret:      nvml.ERROR_LIBRARY_NOT_FOUND,
			sentinel: gpu.ErrNoDriver,
			message:  "discover GPUs: nvml.Init: ERROR_LIBRARY_NOT_FOUND: libnvidia-ml.so.1 not found: no NVIDIA driver on this host",
		},
		{
			name:     "kernel driver not loaded is ErrDriverNotLoaded",
			ret:      nvml.ERROR_DRIVER_NOT_LOADED,
			sentinel: gpu.ErrDriverNotLoaded,
			message:  "discover GPUs: nvml.Init: ERROR_DRIVER_NOT_LOADED: libnvidia-ml.so.1 loaded but the NVIDIA kernel driver is not running",
		},
		{
			name:    "any other code names the call",
			ret:     nvml.ERROR_NO_PERMISSION,
			message: "discover GPUs: nvml.Init: ERROR_NO_PERMISSION",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lib := newFakeNVML(h200GPU("GPU-aaaa", "00000000:19:00.0", 1))
			lib.initRet = tt.ret

			got, err := discover(lib)

			require.Error(t, err)
			assert.Zero(t, got)
			assert.ErrorIs(t, err, tt.ret, "the NVML code stays in the chain")
			if tt.sentinel != nil {
				assert.ErrorIs(t, err, tt.sentinel)
			} else {
				assert.NotErrorIs(t, err, gpu.ErrNoDriver)
				assert.NotErrorIs(t, err, gpu.ErrDriverNotLoaded)
			}
			assert.Contains(t, err.Error(), tt.message)
			assert.Equal(t, 0, lib.shutdowns, "no Shutdown after a failed Init")
		})
	}
}

func TestDiscoverCallFailuresNameTheCall(t *testing.T) {
	calls := []string{
		"SystemGetDriverVersion",
		"SystemGetNVMLVersion",
		"SystemGetCudaDriverVersion",
		"DeviceGetCount",
		"DeviceGetHandleByIndex(device 1)",
		"DeviceGetName(device 1)",
		"DeviceGetUUID(device 1)",
		"DeviceGetMemoryInfo(device 1)",
		"DeviceGetCudaComputeCapability(device 1)",
		"DeviceGetPciInfo(device 1)",
	}
	for _, call := range calls {
		t.Run(call, func(t *testing.T) {
			lib := newFakeNVML(
				h200GPU("GPU-aaaa", "00000000:19:00.0", 1),
				h200GPU("GPU-bbbb", "00000000:3B:00.0", 1),
			)
			lib.fail[call] = nvml.ERROR_GPU_IS_LOST

			got, err := discover(lib)

			require.Error(t, err)
			assert.Zero(t, got)
			assert.Equal(t, "discover GPUs: nvml."+call+": ERROR_GPU_IS_LOST", err.Error())
			assert.ErrorIs(t, err, nvml.ERROR_GPU_IS_LOST)
			assert.Equal(t, 1, lib.shutdowns, "Shutdown must run on every path after Init")
		})
	}
}

func TestDiscoverShutdownFailureIsReported(t *testing.T) {
	lib := newFakeNVML(h200GPU("GPU-aaaa", "00000000:19:00.0", 1))
	lib.shutdownRet = nvml.ERROR_UNKNOWN

	got, err := discover(lib)

	require.Error(t, err)
	assert.Zero(t, got)
	assert.ErrorIs(t, err, nvml.ERROR_UNKNOWN)
	assert.Equal(t, "discover GPUs: nvml.Shutdown: ERROR_UNKNOWN", err.Error())
}

func TestDiscoverShutdownFailureKeepsTheFirstError(t *testing.T) {
	lib := newFakeNVML(h200GPU("GPU-aaaa", "00000000:19:00.0", 1))
	lib.fail["DeviceGetCount"] = nvml.ERROR_UNKNOWN
	lib.shutdownRet = nvml.ERROR_UNINITIALIZED

	_, err := discover(lib)

	require.Error(t, err)
	assert.ErrorIs(t, err, nvml.ERROR_UNKNOWN)
	assert.ErrorIs(t, err, nvml.ERROR_UNINITIALIZED)
	assert.Contains(t, err.Error(), "nvml.DeviceGetCount")
	assert.Contains(t, err.Error(), "nvml.Shutdown")
}

func TestDiscoverRejectsAnInconsistentReading(t *testing.T) {
	lib := newFakeNVML(
		h200GPU("GPU-same", "00000000:19:00.0", 1),
		h200GPU("GPU-same", "00000000:3B:00.0", 1),
	)

	_, err := discover(lib)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "share UUID GPU-same")
	assert.Equal(t, 1, lib.shutdowns)
}

// go-nvml's own DGX H200 mock checks that the adapter drives a full
// nvml.Interface the way the real library is driven.
// unclocked is go-nvml's mock server, whose devices have no clock functions (they
// panic): its devices answer NOT_SUPPORTED, as a GPU without clock reporting does.
type unclocked struct{ goNVML }

func (u unclocked) DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return) {
	d, ret := u.goNVML.DeviceGetHandleByIndex(index)
	return unclockedDevice{d}, ret
}

type unclockedDevice struct{ nvmlDevice }

func (unclockedDevice) GetClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	return 0, nvml.ERROR_NOT_SUPPORTED
}

func (unclockedDevice) GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	return 0, nvml.ERROR_NOT_SUPPORTED
}

func TestDiscoverThroughGoNVMLMockServer(t *testing.T) {
	got, err := discover(unclocked{goNVML{dgxh200.New()}})

	require.NoError(t, err)
	assert.Equal(t, "550.54.15", got.DriverVersion)
	assert.Equal(t, "12.550.54.15", got.NVMLVersion)
	assert.Equal(t, 12040, got.CUDADriverVersion)
	require.Len(t, got.Devices, 8)
	uuids := map[string]bool{}
	for i, d := range got.Devices {
		assert.Equal(t, i, d.Index)
		assert.Equal(t, "NVIDIA H200 141GB HBM3e", d.Name)
		assert.Equal(t, "9.0", d.ComputeCapability)
		assert.Equal(t, uint64(144384*1024*1024), d.MemoryTotalBytes)
		uuids[d.UUID] = true
	}
	assert.Len(t, uuids, 8)
}

func TestCString(t *testing.T) {
	var buf [8]int8
	for i, c := range []byte("ab") {
		buf[i] = int8(c)
	}
	buf[3] = 'z' // after the NUL: must be ignored
	assert.Equal(t, "ab", cString(buf[:]))
	assert.Equal(t, "", cString(nil))
}

// A device that reports no clocks (NOT_SUPPORTED) is read all the same, its clocks 0.
func TestDiscoverWithoutClocks(t *testing.T) {
	lib := newFakeNVML(h200GPU("GPU-aaaa", "00000000:19:00.0", 1000))
	lib.fail["DeviceGetClockInfo(device 0)"] = nvml.ERROR_NOT_SUPPORTED
	lib.fail["DeviceGetMaxClockInfo(device 0)"] = nvml.ERROR_NOT_SUPPORTED
	got, err := discover(lib)
	require.NoError(t, err)
	assert.Zero(t, got.Devices[0].SMClockMHz)
	assert.Zero(t, got.Devices[0].SMClockMaxMHz)
}
