package nvmlread

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// fakeGPU is what fakeNVML reports for one device.
type fakeGPU struct {
	name          string
	uuid          string
	memory        nvml.Memory
	major, minor  int
	busID         string
	smMHz, maxMHz uint32
}

// fakeNVML is an in-memory nvmlLibrary. fail maps a call, spelled as in the
// error it should produce ("SystemGetDriverVersion", "DeviceGetUUID(device 1)"),
// to the code that call returns instead of SUCCESS.
type fakeNVML struct {
	initRet          nvml.Return
	shutdownRet      nvml.Return
	driver           string
	nvmlVersion      string
	cudaVersion      int
	gpus             []fakeGPU
	fail             map[string]nvml.Return
	inits, shutdowns int
}

func newFakeNVML(gpus ...fakeGPU) *fakeNVML {
	return &fakeNVML{
		driver:      "580.159.04",
		nvmlVersion: "13.580.159.04",
		cudaVersion: 13000,
		gpus:        gpus,
		fail:        map[string]nvml.Return{},
	}
}

func (f *fakeNVML) ret(call string) nvml.Return {
	if r, ok := f.fail[call]; ok {
		return r
	}
	return nvml.SUCCESS
}

func (f *fakeNVML) Init() nvml.Return {
	f.inits++
	return f.initRet
}

func (f *fakeNVML) Shutdown() nvml.Return {
	f.shutdowns++
	return f.shutdownRet
}

func (f *fakeNVML) SystemGetDriverVersion() (string, nvml.Return) {
	return f.driver, f.ret("SystemGetDriverVersion")
}

func (f *fakeNVML) SystemGetNVMLVersion() (string, nvml.Return) {
	return f.nvmlVersion, f.ret("SystemGetNVMLVersion")
}

func (f *fakeNVML) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return f.cudaVersion, f.ret("SystemGetCudaDriverVersion")
}

func (f *fakeNVML) DeviceGetCount() (int, nvml.Return) {
	return len(f.gpus), f.ret("DeviceGetCount")
}

func (f *fakeNVML) DeviceGetHandleByIndex(index int) (nvmlDevice, nvml.Return) {
	if r := f.ret(fmt.Sprintf("DeviceGetHandleByIndex(device %d)", index)); r != nvml.SUCCESS {
		return nil, r
	}
	if index < 0 || index >= len(f.gpus) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return fakeHandle{f: f, index: index}, nvml.SUCCESS
}

type fakeHandle struct {
	f     *fakeNVML
	index int
}

func (h fakeHandle) gpu() fakeGPU { return h.f.gpus[h.index] }

func (h fakeHandle) ret(call string) nvml.Return {
	return h.f.ret(fmt.Sprintf("%s(device %d)", call, h.index))
}

func (h fakeHandle) GetName() (string, nvml.Return) {
	return h.gpu().name, h.ret("DeviceGetName")
}

func (h fakeHandle) GetUUID() (string, nvml.Return) {
	return h.gpu().uuid, h.ret("DeviceGetUUID")
}

func (h fakeHandle) GetMemoryInfo() (nvml.Memory, nvml.Return) {
	return h.gpu().memory, h.ret("DeviceGetMemoryInfo")
}

func (h fakeHandle) GetCudaComputeCapability() (int, int, nvml.Return) {
	return h.gpu().major, h.gpu().minor, h.ret("DeviceGetCudaComputeCapability")
}

func (h fakeHandle) GetClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	return h.gpu().smMHz, h.ret("DeviceGetClockInfo")
}

func (h fakeHandle) GetMaxClockInfo(nvml.ClockType) (uint32, nvml.Return) {
	return h.gpu().maxMHz, h.ret("DeviceGetMaxClockInfo")
}

func (h fakeHandle) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	var p nvml.PciInfo
	for i, c := range []byte(h.gpu().busID) {
		p.BusId[i] = int8(c)
	}
	return p, h.ret("DeviceGetPciInfo")
}
