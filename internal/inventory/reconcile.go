package inventory

import (
	"errors"
	"fmt"
	"strings"
)

// ReferenceFamily is qualkit's own image-edit family. Its qual rows qualify no TRTMC
// profile, so they are the one kind of row the inventory does not have to list.
const ReferenceFamily = "refedit"

// Reconcile checks the group against the qual/ tables: every full profile has exactly
// one qual row, and every qual row names a profile of the inventory or belongs to the
// reference family. Smoke and contract-double rows qualify no checkpoint, so neither rule
// counts them.
// All problems are reported at once, full profiles first.
func Reconcile(profiles []Profile, rows []QualRow, referenceFamily string) error {
	known := make(map[string]bool, len(profiles))
	for _, p := range profiles {
		known[p.Profile] = true
	}
	byProfile := map[string][]QualRow{}
	for _, r := range rows {
		if r.Counts() {
			byProfile[r.Profile] = append(byProfile[r.Profile], r)
		}
	}

	var errs []error
	for _, p := range profiles {
		if p.Class != Full {
			continue
		}
		switch rs := byProfile[p.Profile]; len(rs) {
		case 1:
		case 0:
			errs = append(errs, fmt.Errorf("full profile %q (%s) has no qual row: add a row with Profile: %q", p.Profile, p.HFID, p.Profile))
		default:
			where := make([]string, len(rs))
			for i, r := range rs {
				where[i] = r.String()
			}
			errs = append(errs, fmt.Errorf("full profile %q has %d qual rows, want 1: %s", p.Profile, len(rs), strings.Join(where, ", ")))
		}
	}
	for _, r := range rows {
		if !r.Counts() || known[r.Profile] || (referenceFamily != "" && r.Family == referenceFamily) {
			continue
		}
		errs = append(errs, fmt.Errorf("qual row %s names profile %q, which is not in the inventory, and its family %q is not the reference family %q",
			r, r.Profile, r.Family, referenceFamily))
	}
	return errors.Join(errs...)
}
