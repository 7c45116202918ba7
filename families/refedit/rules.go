package refedit

import "qualkit/internal/evidencerules"

// pairReference is where the correctness case writes the quality pair's reference image,
// under its artifacts folder (Quality names it; the checker holds the pair to it).
const pairReference = "reference/pair-photo-grayscale.png"

// The checker's rules for this family's evidence (evidencerules): the pair's reference
// is pairReference, its formula qualkit's own.
func init() {
	evidencerules.Register(Family{}.Backend(), evidencerules.Rules{
		PairReference: func(string, string) string { return pairReference },
		PairMetric:    func(string) string { return "" },
	})
}
