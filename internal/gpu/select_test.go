package gpu

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const gib = uint64(1 << 30)

// mixedHost has, by index: a busy H200, an idle H200, an A100 and an idle
// H200 with the same free memory as GPU 1 (for the tie-break).
func mixedHost() Reading {
	devs := []Device{
		{Index: 0, Name: "NVIDIA H200", UUID: "GPU-h200-busy", MemoryTotalBytes: 140 * gib, MemoryFreeBytes: 20 * gib, ComputeCapability: "9.0"},
		{Index: 1, Name: "NVIDIA H200", UUID: "GPU-h200-idle-1", MemoryTotalBytes: 140 * gib, MemoryFreeBytes: 139 * gib, ComputeCapability: "9.0"},
		{Index: 2, Name: "NVIDIA A100-SXM4-40GB", UUID: "GPU-a100", MemoryTotalBytes: 40 * gib, MemoryFreeBytes: 40 * gib, ComputeCapability: "8.0"},
		{Index: 3, Name: "NVIDIA H200", UUID: "GPU-h200-idle-3", MemoryTotalBytes: 140 * gib, MemoryFreeBytes: 139 * gib, ComputeCapability: "9.0"},
	}
	return Reading{NVMLVersion: "13.580.159.04", DriverVersion: "580.159.04", CUDADriverVersion: 13000, Count: len(devs), Devices: devs}
}

func uuidsOf(devs []Device) []string {
	out := make([]string, 0, len(devs))
	for _, d := range devs {
		out = append(out, d.UUID)
	}
	return out
}

func TestSelectZeroNeedsIsCPUOnly(t *testing.T) {
	for name, r := range map[string]Reading{"GPU host": mixedHost(), "empty reading": {}} {
		t.Run(name, func(t *testing.T) {
			got, err := Select(r, Needs{})

			require.NoError(t, err)
			assert.Empty(t, got)
		})
	}
}

func TestSelectPicks(t *testing.T) {
	tests := []struct {
		name  string
		needs Needs
		want  []string
	}{
		{
			name:  "most free memory first, ties by lower index",
			needs: Needs{Count: 2, MinMemoryBytes: 80 * gib, MinComputeCapability: "9.0"},
			want:  []string{"GPU-h200-idle-1", "GPU-h200-idle-3"},
		},
		{
			name:  "total memory decides eligibility, not free memory",
			needs: Needs{Count: 3, MinMemoryBytes: 80 * gib},
			want:  []string{"GPU-h200-idle-1", "GPU-h200-idle-3", "GPU-h200-busy"},
		},
		{
			name:  "older capability passes a lower bar and ranks by free memory",
			needs: Needs{Count: 4, MinComputeCapability: "8.0"},
			want:  []string{"GPU-h200-idle-1", "GPU-h200-idle-3", "GPU-a100", "GPU-h200-busy"},
		},
		{
			name:  "memory bound is inclusive",
			needs: Needs{Count: 4, MinMemoryBytes: 40 * gib},
			want:  []string{"GPU-h200-idle-1", "GPU-h200-idle-3", "GPU-a100", "GPU-h200-busy"},
		},
		{
			name:  "one GPU",
			needs: Needs{Count: 1},
			want:  []string{"GPU-h200-idle-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(mixedHost(), tt.needs)

			require.NoError(t, err)
			assert.Equal(t, tt.want, uuidsOf(got))
		})
	}
}

func TestSelectIsDeterministicWhateverTheDeviceOrder(t *testing.T) {
	r := mixedHost()
	shuffled := r
	shuffled.Devices = []Device{r.Devices[3], r.Devices[2], r.Devices[1], r.Devices[0]}
	needs := Needs{Count: 2, MinComputeCapability: "9.0"}

	want, err := Select(r, needs)
	require.NoError(t, err)
	got, err := Select(shuffled, needs)
	require.NoError(t, err)

	assert.Equal(t, uuidsOf(want), uuidsOf(got))
}

func TestSelectDoesNotReorderTheReading(t *testing.T) {
	r := mixedHost()
	before := uuidsOf(r.Devices)

	_, err := Select(r, Needs{Count: 1})

	require.NoError(t, err)
	assert.Equal(t, before, uuidsOf(r.Devices))
}

func TestSelectShortageExplainsEveryGPU(t *testing.T) {
	_, err := Select(mixedHost(), Needs{Count: 4, MinMemoryBytes: 80 * gib, MinComputeCapability: "9.0"})

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotEnoughGPUs)
	var shortage *ShortageError
	require.ErrorAs(t, err, &shortage)
	assert.Equal(t, []string{"GPU-h200-busy", "GPU-h200-idle-1", "GPU-h200-idle-3"}, uuidsOf(shortage.Matching))
	require.Len(t, shortage.Rejected, 1)
	assert.Equal(t, "GPU-a100", shortage.Rejected[0].Device.UUID)
	assert.Equal(t, "select GPUs: need 4 GPUs with memory total >= 80.0 GiB (85899345920 bytes) and compute capability >= 9.0; 3 of 4 visible GPUs match:\n"+
		"  GPU 0 NVIDIA H200 GPU-h200-busy (memory total 140.0 GiB (150323855360 bytes), free 20.0 GiB (21474836480 bytes), compute capability 9.0): matches\n"+
		"  GPU 1 NVIDIA H200 GPU-h200-idle-1 (memory total 140.0 GiB (150323855360 bytes), free 139.0 GiB (149250113536 bytes), compute capability 9.0): matches\n"+
		"  GPU 2 NVIDIA A100-SXM4-40GB GPU-a100 (memory total 40.0 GiB (42949672960 bytes), free 40.0 GiB (42949672960 bytes), compute capability 8.0): "+
		"memory total 40.0 GiB (42949672960 bytes) < needed 80.0 GiB (85899345920 bytes); compute capability 8.0 < needed 9.0\n"+
		"  GPU 3 NVIDIA H200 GPU-h200-idle-3 (memory total 140.0 GiB (150323855360 bytes), free 139.0 GiB (149250113536 bytes), compute capability 9.0): matches",
		err.Error())
}

func TestSelectShortageOnAHostWithoutGPUs(t *testing.T) {
	r := Reading{NVMLVersion: "13.580.159.04", DriverVersion: "580.159.04", CUDADriverVersion: 13000, Devices: []Device{}}

	_, err := Select(r, Needs{Count: 1, MinComputeCapability: "9.0"})

	require.ErrorIs(t, err, ErrNotEnoughGPUs)
	assert.Equal(t, "select GPUs: need 1 GPU with compute capability >= 9.0; 0 of 0 visible GPUs match (the reading lists no GPU)", err.Error())
}

func TestSelectCapabilityIsComparedNumerically(t *testing.T) {
	r := mixedHost()
	r.Devices[2].ComputeCapability = "10.0"

	got, err := Select(r, Needs{Count: 1, MinComputeCapability: "10.0"})

	require.NoError(t, err)
	assert.Equal(t, []string{"GPU-a100"}, uuidsOf(got))
}

func TestSelectRefusesBadInput(t *testing.T) {
	broken := mixedHost()
	broken.Count = 7
	tests := []struct {
		name    string
		reading Reading
		needs   Needs
		want    string
	}{
		{"negative count", mixedHost(), Needs{Count: -1}, "needs count -1 is negative"},
		{"requirements without a count", mixedHost(), Needs{MinMemoryBytes: 1}, "needs count 0 but sets GPU requirements"},
		{"malformed capability", mixedHost(), Needs{Count: 1, MinComputeCapability: "sm90"}, `compute capability "sm90": want MAJOR.MINOR`},
		{"inconsistent reading", broken, Needs{Count: 1}, "count 7 but 4 devices listed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.reading, tt.needs)

			assert.Nil(t, got)
			require.Error(t, err)
			assert.False(t, errors.Is(err, ErrNotEnoughGPUs), "bad input is not a shortage")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSelectOnH200Fixture(t *testing.T) {
	r := loadH200(t)
	qwenEdit := Needs{Count: 1, MinMemoryBytes: 80 * gib, MinComputeCapability: "9.0"}

	got, err := Select(r, qwenEdit)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0].Name, "H200")

	_, err = Select(r, Needs{Count: len(r.Devices) + 1, MinComputeCapability: "9.0"})
	require.ErrorIs(t, err, ErrNotEnoughGPUs)
	assert.Contains(t, err.Error(), got[0].UUID+" (memory total")

	_, err = Select(r, Needs{Count: 1, MinComputeCapability: "10.0"})
	require.ErrorIs(t, err, ErrNotEnoughGPUs)
	assert.Contains(t, err.Error(), "compute capability 9.0 < needed 10.0")
}
