package schema

import "fmt"

// TableRow is one row of a qual table as a commit's own code defines it (the evidence
// checker reads them through evidencecheck.Repo): what a row of a run at that commit
// must name in its results.json.
type TableRow struct {
	Test     string `json:"test"` // the table's test function
	Row      string `json:"row"`
	Family   string `json:"family"`
	Backend  string `json:"backend"`
	Model    string `json:"model"`
	Profile  string `json:"profile"`
	Smoke    bool   `json:"smoke"`
	Double   bool   `json:"double"`
	Measured int    `json:"measured"`
	Warmup   int    `json:"warmup"`
}

func (t TableRow) String() string {
	return fmt.Sprintf("family %s, backend %s, model %s, profile %s, smoke %t, double %t, %d measured + %d warmup",
		t.Family, t.Backend, t.Model, t.Profile, t.Smoke, t.Double, t.Measured, t.Warmup)
}
