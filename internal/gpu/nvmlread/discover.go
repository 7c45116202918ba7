// Package nvmlread reads this host's GPUs through NVML (go-nvml, cgo + dlopen of
// libnvidia-ml.so.1) into a gpu.Reading. Only the gpuread program imports it: the
// harness and the qualification test binary run that program instead, so that they
// need no cgo and a plain `go test ./qual/...` compiles no C.
package nvmlread

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"qualkit/internal/gpu"
)

// Discover reads this host's GPUs through NVML (its own library handle, not go-nvml's
// package-level one). Without the driver the error matches gpu.ErrNoDriver or
// gpu.ErrDriverNotLoaded; any other names the NVML call and wraps its nvml.Return.
func Discover() (gpu.Reading, error) {
	return discover(goNVML{nvml.New()})
}

func discover(lib nvmlLibrary) (reading gpu.Reading, err error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		// NVML needs no Shutdown after a failed Init.
		return gpu.Reading{}, fmt.Errorf("discover GPUs: %w", initError(ret))
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS {
			err = errors.Join(err, fmt.Errorf("discover GPUs: %w", callError("Shutdown", ret)))
		}
		if err != nil {
			reading = gpu.Reading{}
		}
	}()

	r, err := read(lib)
	if err != nil {
		return gpu.Reading{}, fmt.Errorf("discover GPUs: %w", err)
	}
	if err := r.Validate(); err != nil {
		return gpu.Reading{}, fmt.Errorf("discover GPUs: NVML reported an unusable %w", err)
	}
	return r, nil
}

func initError(ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return fmt.Errorf("nvml.Init: %w: %w", ret, gpu.ErrNoDriver)
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("nvml.Init: %w: %w", ret, gpu.ErrDriverNotLoaded)
	default:
		return callError("Init", ret)
	}
}

// callError names the call and keeps its nvml.Return for errors.Is.
func callError(call string, ret nvml.Return) error {
	return fmt.Errorf("nvml.%s: %w", call, ret)
}

func read(lib nvmlLibrary) (gpu.Reading, error) {
	var r gpu.Reading
	var ret nvml.Return
	if r.DriverVersion, ret = lib.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		return gpu.Reading{}, callError("SystemGetDriverVersion", ret)
	}
	if r.NVMLVersion, ret = lib.SystemGetNVMLVersion(); ret != nvml.SUCCESS {
		return gpu.Reading{}, callError("SystemGetNVMLVersion", ret)
	}
	if r.CUDADriverVersion, ret = lib.SystemGetCudaDriverVersion(); ret != nvml.SUCCESS {
		return gpu.Reading{}, callError("SystemGetCudaDriverVersion", ret)
	}
	if r.Count, ret = lib.DeviceGetCount(); ret != nvml.SUCCESS {
		return gpu.Reading{}, callError("DeviceGetCount", ret)
	}
	r.Devices = make([]gpu.Device, 0, r.Count)
	for i := range r.Count {
		d, err := readDevice(lib, i)
		if err != nil {
			return gpu.Reading{}, err
		}
		r.Devices = append(r.Devices, d)
	}
	return r, nil
}

func readDevice(lib nvmlLibrary, index int) (gpu.Device, error) {
	call := func(name string) string { return fmt.Sprintf("%s(device %d)", name, index) }
	h, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetHandleByIndex"), ret)
	}
	d := gpu.Device{Index: index}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetName"), ret)
	}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetUUID"), ret)
	}
	mem, ret := h.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetMemoryInfo"), ret)
	}
	d.MemoryTotalBytes, d.MemoryFreeBytes = mem.Total, mem.Free
	major, minor, ret := h.GetCudaComputeCapability()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetCudaComputeCapability"), ret)
	}
	d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return gpu.Device{}, callError(call("DeviceGetPciInfo"), ret)
	}
	d.PCIBusID = cString(pci.BusId[:])
	// The SM clock now and its maximum, which timings depend on; 0 where not reported.
	if mhz, ret := h.GetClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		d.SMClockMHz = mhz
	}
	if mhz, ret := h.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		d.SMClockMaxMHz = mhz
	}
	return d, nil
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}
