package gpu

import (
	"errors"
	"fmt"
)

// DeviceRequestFields are the fields of a Docker device request that pin a
// container to exact GPUs. They mirror
// github.com/moby/moby/api/types/container.DeviceRequest, which this package
// must not import; Count is left out on purpose because Docker rejects a
// request that sets both Count and DeviceIDs.
type DeviceRequestFields struct {
	Driver       string
	DeviceIDs    []string
	Capabilities [][]string
}

// DeviceRequest returns the device request for the selected GPUs, by UUID
// (indexes can change between boots; UUIDs cannot). An empty selection is an
// error rather than an empty request, because a request without GPUs would
// start the container on CPU without anyone noticing: a CPU-only row should
// add no device request at all.
func DeviceRequest(devs []Device) (DeviceRequestFields, error) {
	if len(devs) == 0 {
		return DeviceRequestFields{}, errors.New("device request: no GPU selected; a CPU-only row needs no device request")
	}
	ids := make([]string, 0, len(devs))
	seen := make(map[string]bool, len(devs))
	for _, d := range devs {
		if d.UUID == "" {
			return DeviceRequestFields{}, fmt.Errorf("device request: GPU %d (%s) has no UUID", d.Index, d.Name)
		}
		if seen[d.UUID] {
			return DeviceRequestFields{}, fmt.Errorf("device request: GPU %d (%s) selected twice", d.Index, d.UUID)
		}
		seen[d.UUID] = true
		ids = append(ids, d.UUID)
	}
	return DeviceRequestFields{
		Driver:       "nvidia",
		DeviceIDs:    ids,
		Capabilities: [][]string{{"gpu"}},
	}, nil
}
