package qwenimage

import (
	"strings"

	"qualkit/internal/evidencerules"
)

// diffusersPairReference is where the diffusers reference's correctness case writes the
// quality pair's reference image (its CPU float32 run), under its artifacts folder.
const diffusersPairReference = "cpu.png"

// The checker's rules for this package's backends (evidencerules). TRTMC's come from
// its layout table (layouts: the file each layout's case writes, the formula its
// thresholds bound); the diffusers reference's pair is its CPU image, judged with
// qualkit's own formula.
func init() {
	evidencerules.Register(TRTMC{}.Backend(), evidencerules.Rules{
		PairReference: func(layout, _ string) string {
			if l, ok := layoutNamed(layout); ok {
				return l.PairReference
			}
			return ""
		},
		PairMetric: func(layout string) string {
			if l, ok := layoutNamed(layout); ok {
				return l.PairMetric
			}
			return "the metric of a TRTMC layout (" + strings.Join(layoutNames(), ", ") + ")"
		},
	})
	// TRTMC's perf-serve serving the diffusers reference's pipeline: the pair is the same
	// parity case's, judged the same way.
	for _, backend := range []string{Diffusers{}.Backend(), PerfServeReference{}.Backend()} {
		evidencerules.Register(backend, evidencerules.Rules{
			PairReference: func(string, string) string { return diffusersPairReference },
			PairMetric:    func(string) string { return "" },
		})
	}
}

func layoutNamed(name string) (Layout, bool) {
	for _, l := range layouts {
		if l.Name == name {
			return l, true
		}
	}
	return Layout{}, false
}

func layoutNames() []string {
	var out []string
	for _, l := range layouts {
		out = append(out, l.Name)
	}
	return out
}
