package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// fakeGPUReading is a fake NVML reading of n H200s (QUALKIT_FAKE_GPUS=n).
func fakeGPUReading(n string) string {
	count, _ := strconv.Atoi(n)
	var devs []string
	for i := range count {
		devs = append(devs, fmt.Sprintf(`{"index": %d, "name": "NVIDIA H200", "uuid": "GPU-fake-%d", "memory_total_bytes": 150754820096, "memory_free_bytes": 150109880320, "compute_capability": "9.0", "pci_bus_id": "00000000:00:%02x.0"}`, i, i, i+6))
	}
	return fmt.Sprintf(`{"nvml_version": "13.580", "driver_version": "580", "cuda_driver_version": 13000, "count": %d, "devices": [%s]}`, count, strings.Join(devs, ",\n"))
}

func fakeGPUReader(t *testing.T, n int) string {
	t.Helper()
	reader := filepath.Join(t.TempDir(), "gpuread")
	require.NoError(t, os.WriteFile(reader, []byte(fmt.Sprintf("#!/bin/sh\nQUALKIT_FAKE=gpuread QUALKIT_FAKE_GPUS=%d exec %s\n", n, os.Args[0])), 0o755))
	return reader
}

// On hosts of 1, 2 and 8 fake GPUs, rows needing 1 or 2 GPUs run side by side as the
// GPUs allow, each on GPUs no overlapping row holds; a row that fails gives its GPUs
// back; each row's evidence names the rows that ran beside it, and the lists agree.
func TestRowsLeaseTheHostsGPUs(t *testing.T) {
	for _, gpus := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("%d GPUs", gpus), func(t *testing.T) {
			p := newPipeline(t, false)
			p.cfg.GPURead = fakeGPUReader(t, gpus)
			s := p.start(t)
			var rows []Checkpoint
			for i := range 4 {
				fault := ""
				if i == 1 {
					fault = faultCaseFails // fails at correctness: its GPUs must come back
				}
				c := p.row(fmt.Sprintf("row-%d", i), fault)
				c.Needs.GPU.Count = min(1+i%2, gpus)
				rows = append(rows, c)
			}
			results := make([]*schema.Result, len(rows))
			var wg sync.WaitGroup
			for i, c := range rows {
				wg.Go(func() {
					res, _ := s.Run(context.Background(), c, t.TempDir(), Reproduce(t.Name()))
					results[i] = res
				})
			}
			wg.Wait()
			byRow := map[string]*schema.Result{}
			for i, res := range results {
				require.NotNil(t, res, rows[i].Name)
				require.NotNil(t, res.Lease, "%s recorded its lease", res.Row)
				assert.Len(t, res.Lease.GPUs, rows[i].Needs.GPU.Count)
				assert.False(t, res.Lease.End.IsZero())
				span := res.Lease.End.Sub(res.Lease.Start).Seconds()
				assert.LessOrEqual(t, res.TimeBudget.WallS, span+0.0005, "%s: the row's wall lies inside its lease, however long its report takes (wall_s is rounded to the ms)", res.Row)
				byRow[res.Row] = res
				want := schema.StatusQualified
				if rows[i].Name == "row-1" {
					want = schema.StatusFailed
				}
				assert.Equal(t, want, res.Status, "%s: %v", res.Row, stageStatuses(res))
			}
			beside := 0
			for _, a := range results {
				for _, b := range results {
					if a == b {
						continue
					}
					overlap := a.Lease.Start.Before(b.Lease.End) && b.Lease.Start.Before(a.Lease.End)
					listed := slices.ContainsFunc(a.Lease.RanBeside, func(n schema.Neighbour) bool { return n.Row == b.Row })
					assert.Equal(t, overlap, listed, "%s lists %s exactly when their leases overlap", a.Row, b.Row)
					if overlap {
						beside++
						for _, g := range a.Lease.GPUs {
							assert.NotContains(t, b.Lease.GPUs, g, "%s and %s overlapped on %s", a.Row, b.Row, g)
						}
					}
				}
			}
			switch gpus {
			case 1:
				assert.Zero(t, beside, "one GPU: one row at a time")
			case 8:
				assert.Positive(t, beside, "eight GPUs: rows ran side by side")
			}
		})
	}
}
