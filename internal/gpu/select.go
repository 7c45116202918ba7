package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Needs is what one row asks of the host's GPUs. The zero value means the
// row runs on CPU only: Select then picks nothing and reports no error.
type Needs struct {
	Count int
	// MinMemoryBytes is checked against total memory, not free memory:
	// free memory is only a snapshot, and is used to rank the matches.
	MinMemoryBytes uint64
	// MinComputeCapability is "major.minor", e.g. "9.0"; empty means any.
	MinComputeCapability string
}

// String describes the needs in the words used by selection errors.
func (n Needs) String() string {
	if n == (Needs{}) {
		return "no GPU (CPU only)"
	}
	var b strings.Builder
	if n.Count == 1 {
		b.WriteString("1 GPU")
	} else {
		fmt.Fprintf(&b, "%d GPUs", n.Count)
	}
	var with []string
	if n.MinMemoryBytes > 0 {
		with = append(with, "memory total >= "+formatBytes(n.MinMemoryBytes))
	}
	if n.MinComputeCapability != "" {
		with = append(with, "compute capability >= "+n.MinComputeCapability)
	}
	if len(with) > 0 {
		b.WriteString(" with ")
		b.WriteString(strings.Join(with, " and "))
	}
	return b.String()
}

// ErrNotEnoughGPUs is matched by errors.Is on every *ShortageError.
var ErrNotEnoughGPUs = errors.New("not enough matching GPUs")

// Rejection says why one GPU of a reading did not match the needs.
type Rejection struct {
	Device  Device
	Reasons []string
}

// ShortageError is returned by Select when fewer GPUs match than the needs
// ask for. Its message lists every GPU of the reading with its verdict, so a
// failed row explains itself without a second look at the host.
type ShortageError struct {
	Needs    Needs
	Matching []Device    // in index order
	Rejected []Rejection // in index order
}

func (e *ShortageError) Error() string {
	var b strings.Builder
	visible := len(e.Matching) + len(e.Rejected)
	fmt.Fprintf(&b, "select GPUs: need %s; %d of %d visible GPUs match", e.Needs, len(e.Matching), visible)
	if visible == 0 {
		b.WriteString(" (the reading lists no GPU)")
		return b.String()
	}
	b.WriteString(":")
	type line struct {
		index int
		text  string
	}
	lines := make([]line, 0, visible)
	for _, d := range e.Matching {
		lines = append(lines, line{d.Index, describe(d) + ": matches"})
	}
	for _, r := range e.Rejected {
		lines = append(lines, line{r.Device.Index, describe(r.Device) + ": " + strings.Join(r.Reasons, "; ")})
	}
	slices.SortFunc(lines, func(a, b line) int { return a.index - b.index })
	for _, l := range lines {
		b.WriteString("\n  ")
		b.WriteString(l.text)
	}
	return b.String()
}

// Is lets callers test for a shortage without naming the type.
func (e *ShortageError) Is(target error) bool {
	return target == ErrNotEnoughGPUs
}

// Select picks n.Count GPUs of r that have at least n.MinMemoryBytes of total
// memory and at least n.MinComputeCapability. Among the matches it prefers
// the most free memory, then the lower index, so the same reading always
// gives the same choice. The result is in that order; use Device.UUID to pin
// a container. Fewer matches than asked for is a *ShortageError.
func Select(r Reading, n Needs) ([]Device, error) {
	if n == (Needs{}) {
		return nil, nil
	}
	minCap, err := n.validate()
	if err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("select GPUs: %w", err)
	}

	shortage := match(r.Devices, n, minCap)
	if len(shortage.Matching) < n.Count {
		return nil, shortage
	}

	chosen := slices.Clone(shortage.Matching)
	slices.SortStableFunc(chosen, func(a, b Device) int {
		switch {
		case a.MemoryFreeBytes > b.MemoryFreeBytes:
			return -1
		case a.MemoryFreeBytes < b.MemoryFreeBytes:
			return 1
		}
		return a.Index - b.Index
	})
	return chosen[:n.Count], nil
}

// match sorts devices by index into those that meet n (Matching) and those that do not,
// each with its reasons (Rejected): the ShortageError a caller returns when Matching
// holds fewer than n.Count.
func match(devices []Device, n Needs, minCap *capability) *ShortageError {
	devices = slices.Clone(devices)
	slices.SortFunc(devices, func(a, b Device) int { return a.Index - b.Index })
	shortage := &ShortageError{Needs: n}
	for _, d := range devices {
		if reasons := rejectionReasons(d, n, minCap); len(reasons) > 0 {
			shortage.Rejected = append(shortage.Rejected, Rejection{Device: d, Reasons: reasons})
			continue
		}
		shortage.Matching = append(shortage.Matching, d)
	}
	return shortage
}

// validate rejects needs that cannot come from a sane row. A zero Count with
// other fields set is refused rather than read as CPU-only, since it most
// likely means the row forgot its GPU count.
func (n Needs) validate() (*capability, error) {
	if n.Count < 0 {
		return nil, fmt.Errorf("select GPUs: needs count %d is negative", n.Count)
	}
	if n.Count == 0 {
		return nil, fmt.Errorf("select GPUs: needs count 0 but sets GPU requirements (%s); leave Needs zero for CPU only", n)
	}
	if n.MinComputeCapability == "" {
		return nil, nil
	}
	c, err := parseCapability(n.MinComputeCapability)
	if err != nil {
		return nil, fmt.Errorf("select GPUs: needs: %w", err)
	}
	return &c, nil
}

func rejectionReasons(d Device, n Needs, minCap *capability) []string {
	var reasons []string
	if d.MemoryTotalBytes < n.MinMemoryBytes {
		reasons = append(reasons, fmt.Sprintf("memory total %s < needed %s",
			formatBytes(d.MemoryTotalBytes), formatBytes(n.MinMemoryBytes)))
	}
	if minCap != nil {
		// Validate already parsed every device's capability.
		c, _ := parseCapability(d.ComputeCapability)
		if c.less(*minCap) {
			reasons = append(reasons, fmt.Sprintf("compute capability %s < needed %s", c, minCap))
		}
	}
	return reasons
}

func describe(d Device) string {
	return fmt.Sprintf("GPU %d %s %s (memory total %s, free %s, compute capability %s)",
		d.Index, d.Name, d.UUID, formatBytes(d.MemoryTotalBytes), formatBytes(d.MemoryFreeBytes), d.ComputeCapability)
}

// formatBytes keeps the exact byte count next to the GiB figure, because a
// rounded "80.0 GiB < 80.0 GiB" would not explain a rejection.
func formatBytes(n uint64) string {
	return fmt.Sprintf("%.1f GiB (%d bytes)", float64(n)/(1<<30), n)
}
