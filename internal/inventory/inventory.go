package inventory

import (
	"fmt"
	"path/filepath"

	"qualkit/internal/schema"
)

// Inventory is every testcase profile of one TRTMC checkout, classified.
type Inventory struct {
	// Source names the checkout in reports: its directory name, never an absolute path,
	// so the same checkout renders the same INVENTORY.md wherever it lies.
	Source   string
	Profiles []Profile
}

// Load reads and classifies a TRTMC checkout. Every profile starts planned;
// ApplyProgress raises what qual/ and evidence/ prove.
func Load(trtmcDir string) (*Inventory, error) {
	co, err := readCheckout(trtmcDir)
	if err != nil {
		return nil, err
	}
	inv := &Inventory{Source: filepath.Base(co.root), Profiles: classify(co)}
	inv.ApplyProgress(&Progress{})
	return inv, nil
}

// ReadJSON loads an inventory that WriteJSON wrote (the repository's inventory.json,
// written by `make inventory`), so reports need no TRTMC checkout beside the clone.
// Statuses start planned again: ApplyProgress re-derives them from qual/ and evidence/.
func ReadJSON(path string) (*Inventory, error) {
	var profiles []Profile
	if err := schema.ReadJSON(path, &profiles); err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	inv := &Inventory{Source: filepath.Base(path), Profiles: profiles}
	inv.ApplyProgress(&Progress{})
	return inv, nil
}

// Counts is the number of profiles per class; every class is present, zero or not.
func (inv *Inventory) Counts() map[Class]int {
	n := make(map[Class]int, len(Classes))
	for _, c := range Classes {
		n[c] = 0
	}
	for _, p := range inv.Profiles {
		n[p.Class]++
	}
	return n
}

// Group is the image-edit group: every profile that is not out_of_group.
func (inv *Inventory) Group() []Profile {
	var g []Profile
	for _, p := range inv.Profiles {
		if p.Class.InGroup() {
			g = append(g, p)
		}
	}
	return g
}
