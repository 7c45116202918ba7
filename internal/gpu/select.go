package gpu

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Needs is what one row asks of the host's GPUs; zero is CPU only (Select picks nothing).
type Needs struct {
	Count int
	// MinMemoryBytes is checked against total memory; free memory, a snapshot, ranks matches.
	MinMemoryBytes uint64
	// MinComputeCapability is "major.minor", e.g. "9.0"; empty means any.
	MinComputeCapability string
}

// String describes the needs in the words used by selection errors.
func (n Needs) String() string {
	if n == (Needs{}) {
		return "no GPU (CPU only)"
	}
	s := fmt.Sprintf("%d GPUs", n.Count)
	if n.Count == 1 {
		s = "1 GPU"
	}
	var with []string
	if n.MinMemoryBytes > 0 {
		with = append(with, "memory total >= "+formatBytes(n.MinMemoryBytes))
	}
	if n.MinComputeCapability != "" {
		with = append(with, "compute capability >= "+n.MinComputeCapability)
	}
	if len(with) > 0 {
		s += " with " + strings.Join(with, " and ")
	}
	return s
}

// ErrNotEnoughGPUs is matched by errors.Is on every *ShortageError.
var ErrNotEnoughGPUs = errors.New("not enough matching GPUs")

// Rejection says why one GPU of a reading did not match the needs.
type Rejection struct {
	Device  Device
	Reasons []string
}

// ShortageError is returned by Select when fewer GPUs match than the needs ask for. Its
// message gives every GPU of the reading its verdict, so a failed row explains itself.
type ShortageError struct {
	Needs    Needs
	Matching []Device    // in index order
	Rejected []Rejection // in index order
	verdicts []string    // one per GPU, in index order
}

func (e *ShortageError) Error() string {
	msg := fmt.Sprintf("select GPUs: need %s; %d of %d visible GPUs match", e.Needs, len(e.Matching), len(e.verdicts))
	if len(e.verdicts) == 0 {
		return msg + " (the reading lists no GPU)"
	}
	return msg + ":\n  " + strings.Join(e.verdicts, "\n  ")
}

func (e *ShortageError) Is(target error) bool {
	return target == ErrNotEnoughGPUs
}

// Select picks n.Count GPUs of r that meet n, preferring the most free memory, then the
// lower index, in that order. Fewer matches than asked for is a *ShortageError.
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
		return cmp.Or(cmp.Compare(b.MemoryFreeBytes, a.MemoryFreeBytes), a.Index-b.Index)
	})
	return chosen[:n.Count], nil
}

// match sorts devices by index into those that meet n and those that do not: the
// ShortageError to return when fewer than n.Count match.
func match(devices []Device, n Needs, minCap *capability) *ShortageError {
	devices = slices.Clone(devices)
	slices.SortFunc(devices, func(a, b Device) int { return a.Index - b.Index })
	shortage := &ShortageError{Needs: n}
	for _, d := range devices {
		if reasons := rejectionReasons(d, n, minCap); len(reasons) > 0 {
			shortage.Rejected = append(shortage.Rejected, Rejection{Device: d, Reasons: reasons})
			shortage.verdicts = append(shortage.verdicts, describe(d)+": "+strings.Join(reasons, "; "))
			continue
		}
		shortage.Matching = append(shortage.Matching, d)
		shortage.verdicts = append(shortage.verdicts, describe(d)+": matches")
	}
	return shortage
}

// validate rejects needs no sane row has: a zero Count with other fields set is a
// forgotten count, not CPU only.
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

// formatBytes keeps the exact count: "80.0 GiB < 80.0 GiB" would explain nothing.
func formatBytes(n uint64) string {
	return fmt.Sprintf("%.1f GiB (%d bytes)", float64(n)/(1<<30), n)
}
