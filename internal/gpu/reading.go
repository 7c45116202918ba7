package gpu

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Reading is what NVML reported of this host's GPUs at one moment; its JSON is evidence.
type Reading struct {
	NVMLVersion   string `json:"nvml_version"`
	DriverVersion string `json:"driver_version"`
	// CUDADriverVersion keeps NVML's integer form, 1000*major + 10*minor
	// (13000 is CUDA 13.0), so the evidence holds exactly what NVML said.
	CUDADriverVersion int      `json:"cuda_driver_version"`
	Count             int      `json:"count"`
	Devices           []Device `json:"devices"`
}

// Device is one GPU of a Reading; UUID pins it, Index is NVML's order on this host.
type Device struct {
	Index            int    `json:"index"`
	Name             string `json:"name"`
	UUID             string `json:"uuid"`
	MemoryTotalBytes uint64 `json:"memory_total_bytes"`
	MemoryFreeBytes  uint64 `json:"memory_free_bytes"`
	// ComputeCapability is "major.minor", e.g. "9.0" for Hopper.
	ComputeCapability string `json:"compute_capability"`
	PCIBusID          string `json:"pci_bus_id"`
	// SMClockMHz and SMClockMaxMHz are NVML's SM clock when read and its maximum; 0
	// (absent) where NVML does not report them, and in readings made before they were read.
	SMClockMHz    uint32 `json:"sm_clock_mhz,omitempty"`
	SMClockMaxMHz uint32 `json:"sm_clock_max_mhz,omitempty"`
}

// ParseReading loads a Reading's JSON strictly (unknown fields, trailing data and a
// reading that fails Validate are errors): a misread fixture would pass tests wrongly.
func ParseReading(data []byte) (Reading, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var r Reading
	if err := dec.Decode(&r); err != nil {
		return Reading{}, fmt.Errorf("parse GPU reading: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Reading{}, errors.New("parse GPU reading: trailing data after the JSON object")
	}
	if r.Devices == nil {
		r.Devices = []Device{}
	}
	if err := r.Validate(); err != nil {
		return Reading{}, fmt.Errorf("parse GPU reading: %w", err)
	}
	return r, nil
}

// JSON is the reading as evidence keeps it: indented, with a trailing newline.
func (r Reading) JSON() ([]byte, error) {
	if r.Devices == nil {
		r.Devices = []Device{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode GPU reading: %w", err)
	}
	return append(b, '\n'), nil
}

// Validate reports the first inconsistency that makes the reading unusable for selection.
func (r Reading) Validate() error {
	if r.DriverVersion == "" {
		return errors.New("reading: driver_version is empty")
	}
	if r.NVMLVersion == "" {
		return errors.New("reading: nvml_version is empty")
	}
	if r.CUDADriverVersion <= 0 {
		return fmt.Errorf("reading: cuda_driver_version %d is not positive", r.CUDADriverVersion)
	}
	if r.Count != len(r.Devices) {
		return fmt.Errorf("reading: count %d but %d devices listed", r.Count, len(r.Devices))
	}
	uuids := make(map[string]int, len(r.Devices))
	indexes := make(map[int]bool, len(r.Devices))
	for _, d := range r.Devices {
		if err := d.validate(); err != nil {
			return fmt.Errorf("reading: %w", err)
		}
		if prev, dup := uuids[d.UUID]; dup {
			return fmt.Errorf("reading: GPU %d and GPU %d share UUID %s", prev, d.Index, d.UUID)
		}
		uuids[d.UUID] = d.Index
		if indexes[d.Index] {
			return fmt.Errorf("reading: index %d appears twice", d.Index)
		}
		indexes[d.Index] = true
	}
	return nil
}

func (d Device) validate() error {
	if d.Index < 0 {
		return fmt.Errorf("GPU index %d is negative", d.Index)
	}
	if d.UUID == "" {
		return fmt.Errorf("GPU %d: uuid is empty", d.Index)
	}
	if d.Name == "" {
		return fmt.Errorf("GPU %d (%s): name is empty", d.Index, d.UUID)
	}
	if d.MemoryTotalBytes == 0 {
		return fmt.Errorf("GPU %d (%s): memory_total_bytes is 0", d.Index, d.UUID)
	}
	if d.MemoryFreeBytes > d.MemoryTotalBytes {
		return fmt.Errorf("GPU %d (%s): memory_free_bytes %d exceeds memory_total_bytes %d",
			d.Index, d.UUID, d.MemoryFreeBytes, d.MemoryTotalBytes)
	}
	if _, err := parseCapability(d.ComputeCapability); err != nil {
		return fmt.Errorf("GPU %d (%s): %w", d.Index, d.UUID, err)
	}
	return nil
}
