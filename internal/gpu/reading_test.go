package gpu

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadH200 reads the committed H200 reading. Assertions on it must hold for
// the real reading that replaces the placeholder (see testdata/README.md).
func loadH200(t *testing.T) Reading {
	t.Helper()
	data, err := os.ReadFile("testdata/h200.json")
	require.NoError(t, err)
	r, err := ParseReading(data)
	require.NoError(t, err, "testdata/h200.json")
	return r
}

func TestParseReadingH200Fixture(t *testing.T) {
	r := loadH200(t)

	require.NotEmpty(t, r.Devices)
	assert.Equal(t, len(r.Devices), r.Count)
	assert.NotEmpty(t, r.DriverVersion)
	assert.NotEmpty(t, r.NVMLVersion)
	assert.GreaterOrEqual(t, r.CUDADriverVersion, 12000)
	for _, d := range r.Devices {
		assert.Contains(t, d.Name, "H200")
		assert.Equal(t, "9.0", d.ComputeCapability)
		assert.Greater(t, d.MemoryTotalBytes, uint64(140<<30), "an H200 has about 140 GiB")
		assert.NotEmpty(t, d.UUID)
		assert.NotEmpty(t, d.PCIBusID)
	}
}

func TestReadingJSONRoundTrips(t *testing.T) {
	r := loadH200(t)

	b, err := r.JSON()
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(b), "}\n"), "one trailing newline")
	again, err := ParseReading(b)
	require.NoError(t, err)
	assert.Equal(t, r, again)
}

func TestReadingJSONUsesSnakeCaseKeys(t *testing.T) {
	b, err := loadH200(t).JSON()
	require.NoError(t, err)

	var raw struct {
		Top     map[string]json.RawMessage
		Devices []map[string]json.RawMessage `json:"devices"`
	}
	require.NoError(t, json.Unmarshal(b, &raw.Top))
	require.NoError(t, json.Unmarshal(b, &raw))
	assert.ElementsMatch(t,
		[]string{"nvml_version", "driver_version", "cuda_driver_version", "count", "devices"},
		keys(raw.Top))
	require.NotEmpty(t, raw.Devices)
	assert.ElementsMatch(t,
		[]string{"index", "name", "uuid", "memory_total_bytes", "memory_free_bytes", "compute_capability", "pci_bus_id"},
		keys(raw.Devices[0]))
}

func TestEmptyReadingEncodesDevicesAsList(t *testing.T) {
	b, err := Reading{NVMLVersion: "13.580.159.04", DriverVersion: "580.159.04", CUDADriverVersion: 13000}.JSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"devices": []`)
	r, err := ParseReading(b)
	require.NoError(t, err)
	assert.Empty(t, r.Devices)
}

func TestParseReadingRejects(t *testing.T) {
	valid := `{"nvml_version":"13.580.159.04","driver_version":"580.159.04","cuda_driver_version":13000,"count":1,
		"devices":[{"index":0,"name":"NVIDIA H200","uuid":"GPU-a","memory_total_bytes":100,"memory_free_bytes":50,
		"compute_capability":"9.0","pci_bus_id":"00000000:19:00.0"}]}`
	_, err := ParseReading([]byte(valid))
	require.NoError(t, err, "the base document must be valid for the cases below to mean anything")

	tests := []struct {
		name, old, new, want string
	}{
		{"unknown field", `"count":1,`, `"count":1,"gpus":1,`, `unknown field "gpus"`},
		{"count mismatch", `"count":1`, `"count":2`, "count 2 but 1 devices listed"},
		{"empty uuid", `"uuid":"GPU-a"`, `"uuid":""`, "GPU 0: uuid is empty"},
		{"empty name", `"name":"NVIDIA H200"`, `"name":""`, "name is empty"},
		{"free above total", `"memory_free_bytes":50`, `"memory_free_bytes":500`, "memory_free_bytes 500 exceeds memory_total_bytes 100"},
		{"zero total", `"memory_total_bytes":100,"memory_free_bytes":50`, `"memory_total_bytes":0,"memory_free_bytes":0`, "memory_total_bytes is 0"},
		{"bad capability", `"compute_capability":"9.0"`, `"compute_capability":"sm_90"`, `compute capability "sm_90"`},
		{"missing driver", `"driver_version":"580.159.04"`, `"driver_version":""`, "driver_version is empty"},
		{"missing nvml version", `"nvml_version":"13.580.159.04"`, `"nvml_version":""`, "nvml_version is empty"},
		{"missing cuda version", `"cuda_driver_version":13000`, `"cuda_driver_version":0`, "cuda_driver_version 0 is not positive"},
		{"negative index", `"index":0`, `"index":-1`, "GPU index -1 is negative"},
		{"trailing data", `]}`, `]} {}`, "trailing data"},
		{"wrong type", `"count":1`, `"count":"1"`, "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(valid, tt.old, tt.new, 1)
			require.NotEqual(t, valid, doc, "the replacement must apply")

			got, err := ParseReading([]byte(doc))

			assert.Zero(t, got)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "parse GPU reading: ")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestValidateRejectsRepeatedIdentity(t *testing.T) {
	d := Device{Index: 0, Name: "NVIDIA H200", UUID: "GPU-a", MemoryTotalBytes: 1, ComputeCapability: "9.0"}
	base := Reading{NVMLVersion: "v", DriverVersion: "v", CUDADriverVersion: 13000, Count: 2}

	sameUUID := base
	other := d
	other.Index = 1
	sameUUID.Devices = []Device{d, other}
	assert.ErrorContains(t, sameUUID.Validate(), "GPU 0 and GPU 1 share UUID GPU-a")

	sameIndex := base
	other = d
	other.UUID = "GPU-b"
	sameIndex.Devices = []Device{d, other}
	assert.ErrorContains(t, sameIndex.Validate(), "index 0 appears twice")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
