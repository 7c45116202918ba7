package gpu

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// program writes an executable shell script standing in for gpuread.
func program(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gpuread")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return p
}

func TestReadParsesTheProgramsReading(t *testing.T) {
	b, err := os.ReadFile("testdata/h200.json")
	require.NoError(t, err)
	data := filepath.Join(t.TempDir(), "reading.json")
	require.NoError(t, os.WriteFile(data, b, 0o644))

	r, err := Read(t.Context(), program(t, "cat "+data))

	require.NoError(t, err)
	require.Len(t, r.Devices, 1)
	assert.Equal(t, "NVIDIA H200", r.Devices[0].Name)
}

func TestReadMapsTheNoDriverExitCodes(t *testing.T) {
	_, err := Read(t.Context(), program(t, "echo 'gpuread: nvml.Init: no lib' >&2; exit 3"))
	assert.ErrorIs(t, err, ErrNoDriver)
	assert.ErrorContains(t, err, "libnvidia-ml.so.1")

	_, err = Read(t.Context(), program(t, "exit 4"))
	assert.ErrorIs(t, err, ErrDriverNotLoaded)
}

func TestReadReportsOtherFailuresWithTheProgramsMessage(t *testing.T) {
	_, err := Read(t.Context(), program(t, "echo 'gpuread: nvml.DeviceGetCount: ERROR_UNKNOWN' >&2; exit 1"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrNoDriver)
	assert.ErrorContains(t, err, "nvml.DeviceGetCount: ERROR_UNKNOWN")

	_, err = Read(t.Context(), program(t, "echo '{\"driver_version\": \"1\"'"))
	assert.ErrorContains(t, err, "parse GPU reading")

	_, err = Read(t.Context(), filepath.Join(t.TempDir(), "absent"))
	assert.ErrorContains(t, err, "no such file")

	_, err = Read(t.Context(), "")
	assert.ErrorContains(t, err, "no gpuread program")
}
