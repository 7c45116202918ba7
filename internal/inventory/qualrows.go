package inventory

import (
	"fmt"

	"qualkit/internal/schema"
)

// QualRow is one row of a qual/ table, as the table registry exports it (`go test
// ./qual -qualkit.tables`, which `make tables` writes to .cache/tables.json): the one
// list of tables, read here instead of scanning the tables' source.
type QualRow struct {
	Test, Name, Family, Profile string
	Smoke, Double               bool // neither is ever counted as a checkpoint
}

// Counts says whether the row can qualify its profile: smoke and contract-double rows
// never do.
func (r QualRow) Counts() bool { return !r.Smoke && !r.Double }

func (r QualRow) String() string { return fmt.Sprintf("%s/%s", r.Test, r.Name) }

// ReadTables reads the rows of the table registry's export (schema.ReadTables): every
// row of every table, in order. A row without a profile is refused: the inventory could
// not place it.
func ReadTables(path string) ([]QualRow, error) {
	tables, err := schema.ReadTables(path)
	if err != nil {
		return nil, fmt.Errorf("qual rows: %w", err)
	}
	var rows []QualRow
	for _, t := range tables {
		for _, r := range t.Details {
			if r.Profile == "" {
				return nil, fmt.Errorf("qual rows: %s: row %s of %s names no profile", path, r.Row, t.Test)
			}
			rows = append(rows, QualRow{Test: r.Test, Name: r.Row, Family: r.Family, Profile: r.Profile, Smoke: r.Smoke, Double: r.Double})
		}
	}
	return rows, nil
}

// Profiles lists the profiles the rows name, in row order: the implemented list
// LoadProgress takes.
func Profiles(rows []QualRow) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if !r.Double { // a double's row implements nothing of the checkpoint
			out = append(out, r.Profile)
		}
	}
	return out
}
