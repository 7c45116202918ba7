package inventory

import (
	"cmp"
	"fmt"

	"qualkit/internal/schema"
)

// Status is how far a profile's qualification has got, from the evidence that exists.
type Status string

const (
	Planned         Status = "planned"          // no qual row names it
	Implemented     Status = "implemented"      // a qual row exists
	FamilyValidated Status = "family-validated" // evidence: the unchanged correctness case passed on the bundle
	AIPerfQualified Status = "aiperf-qualified" // evidence: every stage passed in one run, zero skips
)

func (s Status) rank() int {
	switch s {
	case Implemented:
		return 1
	case FamilyValidated:
		return 2
	case AIPerfQualified:
		return 3
	}
	return 0
}

// Progress is what qual/ and the evidence folder say about profiles.
type Progress struct {
	implemented map[string]bool
	best        map[string]Proof
	// Notes are evidence files that were found but prove nothing, and why.
	Notes []string
}

// LoadProgress takes the profiles that qual/ has rows for and an optional evidence
// root (see evidence.go for the layout), and keeps the strongest verified proof
// per profile; between equal levels the later run id (run ids sort by time) wins.
func LoadProgress(implemented []string, evidenceRoot string) (*Progress, error) {
	p := &Progress{implemented: map[string]bool{}, best: map[string]Proof{}}
	for _, name := range implemented {
		p.implemented[name] = true
	}
	proofs, notes, err := readEvidence(evidenceRoot)
	if err != nil {
		return nil, err
	}
	p.Notes = notes
	for _, pr := range proofs {
		old, ok := p.best[pr.Profile]
		if !ok || cmp.Or(cmp.Compare(pr.Level.rank(), old.Level.rank()), cmp.Compare(pr.RunID, old.RunID)) > 0 {
			p.best[pr.Profile] = pr
		}
	}
	return p, nil
}

// status decides one profile. Evidence without a qual row does not raise a profile:
// the row is what makes a result reproducible, so such a profile stays planned.
func (p *Progress) status(profile string) (Status, string, string) {
	proof, proven := p.best[profile]
	if !p.implemented[profile] {
		if proven {
			return Planned, fmt.Sprintf("no qual row names this profile; %s claims %q, but without a row it stays planned", proof.Path, proof.Claim), ""
		}
		return Planned, "no qual row names this profile", ""
	}
	if !proven {
		return Implemented, "a qual row names this profile; no verified evidence yet", ""
	}
	return proof.Level, fmt.Sprintf("a qual row names this profile; %s (run %s) says %q, verified against %s",
		proof.Path, proof.RunID, proof.Claim, schema.ChecksumFile), proof.Path
}

func (inv *Inventory) ApplyProgress(p *Progress) {
	for i := range inv.Profiles {
		pr := &inv.Profiles[i]
		pr.Status, pr.StatusReason, pr.Evidence = p.status(pr.Profile)
	}
}
