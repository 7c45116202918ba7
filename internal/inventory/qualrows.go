package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// QualRow is one row of a qual/ table, as the table registry exports it (`go test
// ./qual -qualkit.tables`, which `make tables` writes to .cache/tables.json): the one
// list of tables, read here instead of scanning the tables' source.
type QualRow struct {
	Test    string `json:"test"` // the table's test function
	Name    string `json:"row"`
	Family  string `json:"family"`
	Profile string `json:"profile"`
	Smoke   bool   `json:"smoke"`  // a reduced or random-weight row, never counted as a checkpoint
	Double  bool   `json:"double"` // served by a contract double, never counted as a checkpoint
}

// Counts says whether the row can qualify its profile: smoke and contract-double rows
// never do.
func (r QualRow) Counts() bool { return !r.Smoke && !r.Double }

func (r QualRow) String() string { return fmt.Sprintf("%s/%s", r.Test, r.Name) }

// ReadTables reads the rows of the table registry's export (`go test ./qual
// -qualkit.tables`; `make tables` writes .cache/tables.json): every row of every table,
// in order. A row without a profile is refused: the inventory could not place it.
func ReadTables(path string) ([]QualRow, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("qual rows: no table registry export at %s: run make tables (go test ./qual -run '^$' -args -qualkit.tables > %s)", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("qual rows: %w", err)
	}
	var tables []struct {
		Test    string    `json:"test"`
		Details []QualRow `json:"details"`
	}
	if err := json.Unmarshal(b, &tables); err != nil {
		return nil, fmt.Errorf("qual rows: %s: %w", path, err)
	}
	var rows []QualRow
	for _, t := range tables {
		for _, r := range t.Details {
			if r.Profile == "" {
				return nil, fmt.Errorf("qual rows: %s: row %s of %s names no profile", path, r.Name, t.Test)
			}
			rows = append(rows, r)
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
