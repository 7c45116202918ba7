package gpu

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Pool hands a host's GPUs to the rows of one run: a row leases its GPUs for its whole
// life, and no other row gets them until it releases them, unless both may share. A CPU
// row leases one of the CPU slots. Every lease is kept after its release, so a row can
// say which rows ran beside it (Beside): its timings are honest only next to that list.
type Pool struct {
	mu       sync.Mutex
	devices  []Device
	cpuSlots int
	cpuBusy  int
	holders  map[string][]*Lease // UUID -> live leases on it
	changed  chan struct{}       // closed and replaced on every release
	leases   []*Lease
	now      func() time.Time
}

// Lease is one row's hold on its GPUs (none for a CPU row) from Start until End.
type Lease struct {
	Row     string
	Devices []Device
	Shared  bool // the row said it may share its GPUs with other sharing rows
	Start   time.Time
	End     time.Time // zero while held
	pool    *Pool
}

// Neighbour is a row whose lease overlapped another's: its GPUs and when it held them.
type Neighbour struct {
	Row   string    `json:"row"`
	GPUs  []string  `json:"gpus,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"` // zero: still running when this list was made
}

// NewPool makes a pool with cpuSlots (at least 1) CPU rows at a time.
func NewPool(devices []Device, cpuSlots int) *Pool {
	return &Pool{devices: slices.Clone(devices), cpuSlots: max(cpuSlots, 1), holders: map[string][]*Lease{},
		changed: make(chan struct{}), now: time.Now}
}

// SetDevices gives a pool made without devices the host's GPUs; one that has some keeps them.
func (p *Pool) SetDevices(devices []Device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.devices) == 0 {
		p.devices = slices.Clone(devices)
	}
}

// Acquire leases n.Count GPUs that meet n, or a CPU slot when n is zero, waiting while
// other rows hold them; it fails at once (ShortageError) when the host can never satisfy
// n. When it has to wait, it calls onWait (if not nil) once with the rows holding leases.
func (p *Pool) Acquire(ctx context.Context, row string, n Needs, share bool, onWait func(holders []string)) (*Lease, error) {
	var matching []Device // the host's GPUs that meet n, by index
	if n != (Needs{}) {
		minCap, err := n.validate()
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		shortage := match(p.devices, n, minCap)
		p.mu.Unlock()
		if len(shortage.Matching) < n.Count {
			return nil, shortage
		}
		matching = shortage.Matching
	}
	for waited := false; ; waited = true {
		p.mu.Lock()
		l, wait, holders := p.tryLease(row, n.Count, share, matching), p.changed, p.liveRows()
		p.mu.Unlock()
		if l != nil {
			return l, nil
		}
		if !waited && onWait != nil {
			onWait(holders)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("row %s waited for %s and gave up: %w", row, n.Wanted(), ctx.Err())
		}
	}
}

// Wanted says what a row with these needs waits for in a pool.
func (n Needs) Wanted() string {
	if n == (Needs{}) {
		return "a CPU row slot"
	}
	return n.String()
}

// tryLease takes count of the matching GPUs that are free now, or a CPU row slot when
// count is 0; the caller holds p.mu.
func (p *Pool) tryLease(row string, count int, share bool, matching []Device) *Lease {
	l := &Lease{Row: row, Shared: share, Start: p.now(), pool: p}
	if count == 0 {
		if p.cpuBusy >= p.cpuSlots {
			return nil
		}
		p.cpuBusy++
		p.leases = append(p.leases, l)
		return l
	}
	for _, d := range matching {
		if len(l.Devices) == count {
			break
		}
		free := true
		for _, h := range p.holders[d.UUID] {
			free = free && share && h.Shared
		}
		if free {
			l.Devices = append(l.Devices, d)
		}
	}
	if len(l.Devices) < count {
		return nil
	}
	for _, d := range l.Devices {
		p.holders[d.UUID] = append(p.holders[d.UUID], l)
	}
	p.leases = append(p.leases, l)
	return l
}

// Release is idempotent.
func (l *Lease) Release() {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if !l.End.IsZero() {
		return
	}
	l.End = p.now()
	if len(l.Devices) == 0 {
		p.cpuBusy--
	}
	for _, d := range l.Devices {
		p.holders[d.UUID] = slices.DeleteFunc(p.holders[d.UUID], func(h *Lease) bool { return h == l })
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// liveRows are the rows holding a lease now; the caller holds p.mu.
func (p *Pool) liveRows() []string {
	var out []string
	for _, l := range p.leases {
		if l.End.IsZero() {
			out = append(out, l.Row)
		}
	}
	return out
}

func (l *Lease) UUIDs() []string {
	out := make([]string, len(l.Devices))
	for i, d := range l.Devices {
		out[i] = d.UUID
	}
	return out
}

// Beside lists the other rows whose leases overlapped this one so far, in start order.
// Called once the lease is released, A lists B exactly when B lists A.
func (l *Lease) Beside() []Neighbour {
	p := l.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	end := l.End
	if end.IsZero() {
		end = p.now()
	}
	var out []Neighbour
	for _, o := range p.leases {
		if o == l || !o.Start.Before(end) || (!o.End.IsZero() && !l.Start.Before(o.End)) {
			continue
		}
		out = append(out, Neighbour{Row: o.Row, GPUs: o.UUIDs(), Start: o.Start, End: o.End})
	}
	return out
}

// Held lists the rows holding each GPU now, by UUID (for tests and progress lines).
func (p *Pool) Held() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for uuid, hs := range p.holders {
		for _, h := range hs {
			out[uuid] = append(out[uuid], h.Row)
		}
	}
	return out
}
