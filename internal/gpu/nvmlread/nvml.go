package nvmlread

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// nvmlLibrary is the part of NVML that discovery calls. It exists so that
// discovery's logic and error handling are tested without a GPU.
type nvmlLibrary interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetNVMLVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return)
}

// nvmlDevice is the part of an NVML device handle that discovery reads.
// Discovery calls the handle's methods rather than the library's
// DeviceGetX(handle) forms because go-nvml's mock server implements only the
// former.
type nvmlDevice interface {
	GetName() (string, nvml.Return)
	GetUUID() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetCudaComputeCapability() (int, int, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return)
}

// goNVML adapts an nvml.Interface (the real library, or go-nvml's mock
// server) to nvmlLibrary; only the device handle's type needs narrowing.
type goNVML struct {
	nvml.Interface
}

func (g goNVML) DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return) {
	return g.Interface.DeviceGetHandleByIndex(index)
}
