// Package evidencerules holds what the evidence checker must know of each family that
// the evidence cannot be trusted to say of itself: a forger who rewrites results.json
// and recomputes every checksum could point the quality pair at any file, or name
// another formula for it. Each family registers its rules (from its own package, next
// to the code that writes that evidence); the checker looks them up by the row's
// backend and fails a row whose backend registered none.
package evidencerules

import (
	"fmt"
	"slices"
	"sync"
)

// Rules are one backend's.
type Rules struct {
	// PairReference is where the family's correctness case writes the reference image
	// of the quality pair, under correctness/artifacts/, for the bundle's layout (its
	// build setting "layout", "" when it has none) and the row's profile: the pair is
	// judged against that file and no other. "" when the layout has no known rule.
	PairReference func(layout, profile string) string
	// PairMetric is the pair formula (quality.Metric*) the family's thresholds were
	// set for, for the bundle's layout; "" is qualkit's own (windowed SSIM).
	PairMetric func(layout string) string
}

var (
	mu    sync.RWMutex
	rules = map[string]Rules{}
)

// Register records backend's rules; a backend registers once.
func Register(backend string, r Rules) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := rules[backend]; dup {
		panic(fmt.Sprintf("evidencerules: backend %q registered twice", backend))
	}
	if r.PairReference == nil || r.PairMetric == nil {
		panic(fmt.Sprintf("evidencerules: backend %q: both PairReference and PairMetric are required", backend))
	}
	rules[backend] = r
}

// For is backend's rules, if it registered any.
func For(backend string) (Rules, bool) {
	mu.RLock()
	defer mu.RUnlock()
	r, ok := rules[backend]
	return r, ok
}

// Backends lists the registered backends, sorted.
func Backends() []string {
	mu.RLock()
	defer mu.RUnlock()
	var out []string
	for b := range rules {
		out = append(out, b)
	}
	slices.Sort(out)
	return out
}
