package gpu

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeH200s are n fake NVML devices: H200s, 141 GiB each.
func fakeH200s(n int) []Device {
	out := make([]Device, n)
	for i := range out {
		out[i] = Device{Index: i, Name: "NVIDIA H200", UUID: fmt.Sprintf("GPU-fake-%d", i), MemoryTotalBytes: 150754820096,
			MemoryFreeBytes: 150109880320, ComputeCapability: "9.0", PCIBusID: fmt.Sprintf("00000000:00:%02x.0", i+6)}
	}
	return out
}

// Rows needing 1 or 2 GPUs on hosts of 1, 2 and 8 fake GPUs all run, some side by side,
// and no GPU is ever held by two rows at once.
func TestPoolNeverLeasesAGPUTwice(t *testing.T) {
	for _, gpus := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("%d GPUs", gpus), func(t *testing.T) {
			p := NewPool(fakeH200s(gpus), 1)
			var mu sync.Mutex
			inUse := map[string]string{} // UUID -> row
			var most, running atomic.Int32
			var wg sync.WaitGroup
			for i := range 24 {
				need := 1 + i%2
				if need > gpus {
					need = 1
				}
				row := fmt.Sprintf("row-%02d-needs-%d", i, need)
				wg.Go(func() {
					l, err := p.Acquire(t.Context(), row, Needs{Count: need}, false, nil)
					if !assert.NoError(t, err) {
						return
					}
					defer l.Release()
					mu.Lock()
					for _, u := range l.UUIDs() {
						assert.Empty(t, inUse[u], "%s leased to %s while %s holds it", u, row, inUse[u])
						inUse[u] = row
					}
					mu.Unlock()
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
					running.Add(-1)
					mu.Lock()
					for _, u := range l.UUIDs() {
						delete(inUse, u)
					}
					mu.Unlock()
				})
			}
			wg.Wait()
			assert.Empty(t, p.Held(), "every lease given back")
			if gpus == 1 {
				assert.EqualValues(t, 1, most.Load(), "one GPU: one row at a time")
			}
			if gpus == 8 {
				assert.Greater(t, most.Load(), int32(1), "eight GPUs: rows ran side by side")
			}
		})
	}
}

// A row that fails releases its GPUs, and the row waiting for them gets them.
func TestPoolFailingRowReleasesItsGPUs(t *testing.T) {
	p := NewPool(fakeH200s(2), 1)
	row := func(name string, fail bool) error {
		l, err := p.Acquire(t.Context(), name, Needs{Count: 2}, false, nil)
		if err != nil {
			return err
		}
		defer l.Release()
		if fail {
			return errors.New("build failed")
		}
		return nil
	}
	require.EqualError(t, row("fails", true), "build failed")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	l, err := p.Acquire(ctx, "next", Needs{Count: 2}, false, nil)
	require.NoError(t, err, "the failed row's GPUs came back")
	assert.Equal(t, []string{"GPU-fake-0", "GPU-fake-1"}, l.UUIDs())
	l.Release()
	l.Release() // a second release does nothing
	assert.Empty(t, p.Held())
}

// A row waits while its GPUs are held, gives up with its context, and never waits for
// what the host cannot give.
func TestPoolWaitsAndRefuses(t *testing.T) {
	p := NewPool(fakeH200s(2), 1)
	held, err := p.Acquire(t.Context(), "holder", Needs{Count: 2}, false, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx, "waiter", Needs{Count: 1}, false, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "row waiter waited for 1 GPU")

	got := make(chan *Lease)
	go func() {
		l, err := p.Acquire(t.Context(), "waiter", Needs{Count: 1}, false, nil)
		assert.NoError(t, err)
		got <- l
	}()
	time.Sleep(20 * time.Millisecond)
	held.Release()
	l := <-got
	assert.Len(t, l.UUIDs(), 1)

	_, err = p.Acquire(t.Context(), "too-big", Needs{Count: 3}, false, nil)
	var shortage *ShortageError
	require.ErrorAs(t, err, &shortage, "three GPUs never come from two: no wait")
	_, err = p.Acquire(t.Context(), "too-old", Needs{Count: 1, MinComputeCapability: "10.0"}, false, nil)
	require.ErrorAs(t, err, &shortage)
}

// Rows that say they may share get the same GPU; a row that does not waits.
func TestPoolSharing(t *testing.T) {
	p := NewPool(fakeH200s(1), 1)
	a, err := p.Acquire(t.Context(), "a", Needs{Count: 1}, true, nil)
	require.NoError(t, err)
	b, err := p.Acquire(t.Context(), "b", Needs{Count: 1}, true, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"GPU-fake-0": {"a", "b"}}, p.Held())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx, "exclusive", Needs{Count: 1}, false, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded, "an exclusive row never joins shared ones")
	a.Release()
	b.Release()
}

// CPU rows keep their own limit, whatever the GPUs do.
func TestPoolCPUSlots(t *testing.T) {
	p := NewPool(nil, 2)
	a, err := p.Acquire(t.Context(), "cpu-a", Needs{}, false, nil)
	require.NoError(t, err)
	_, err = p.Acquire(t.Context(), "cpu-b", Needs{}, false, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(ctx, "cpu-c", Needs{}, false, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "a CPU row slot")
	a.Release()
	c, err := p.Acquire(t.Context(), "cpu-c", Needs{}, false, nil)
	require.NoError(t, err)
	assert.Empty(t, c.UUIDs())
}

// Beside lists the rows whose leases overlapped, and two rows' lists agree.
func TestPoolBeside(t *testing.T) {
	p := NewPool(fakeH200s(2), 1)
	clock := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	p.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	a, _ := p.Acquire(t.Context(), "a", Needs{Count: 1}, false, nil)
	b, _ := p.Acquire(t.Context(), "b", Needs{Count: 1}, false, nil)
	a.Release()
	c, _ := p.Acquire(t.Context(), "c", Needs{}, false, nil)
	b.Release()
	c.Release()
	rows := func(ns []Neighbour) (out []string) {
		for _, n := range ns {
			out = append(out, n.Row)
		}
		return out
	}
	assert.Equal(t, []string{"b"}, rows(a.Beside()), "c started after a ended")
	assert.Equal(t, []string{"a", "c"}, rows(b.Beside()))
	assert.Equal(t, []string{"b"}, rows(c.Beside()))
	assert.Equal(t, []string{"GPU-fake-1"}, a.Beside()[0].GPUs)
}
