package nvmlread

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// nvmlLibrary is the part of NVML discovery calls, so that tests need no GPU.
type nvmlLibrary interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetNVMLVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return)
}

// nvmlDevice is the part of a device handle discovery reads: the handle's methods, which
// go-nvml's mock server implements, not the library's DeviceGetX(handle) forms.
type nvmlDevice interface {
	GetName() (string, nvml.Return)
	GetUUID() (string, nvml.Return)
	GetMemoryInfo() (nvml.Memory, nvml.Return)
	GetCudaComputeCapability() (int, int, nvml.Return)
	GetPciInfo() (nvml.PciInfo, nvml.Return)
	GetClockInfo(nvml.ClockType) (uint32, nvml.Return)
	GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return)
}

// goNVML adapts an nvml.Interface (the library, or go-nvml's mock) to nvmlLibrary.
type goNVML struct{ nvml.Interface }

func (g goNVML) DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return) {
	return g.Interface.DeviceGetHandleByIndex(index)
}
