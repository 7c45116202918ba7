package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

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
	// Controls is the sha256 of the family's declared controls (DeclaredSHA256); ""
	// where the export could not read them: before the controls stage, or a family that
	// reads them from a checkout the export does not see (TRTMC's, the double's).
	Controls string `json:"controls,omitempty"`
}

func (t TableRow) String() string {
	return fmt.Sprintf("family %s, backend %s, model %s, profile %s, smoke %t, double %t, %d measured + %d warmup",
		t.Family, t.Backend, t.Model, t.Profile, t.Smoke, t.Double, t.Measured, t.Warmup)
}

// Table is one qual table as `qual.test -qualkit.tables` prints it (qual/tables_test.go;
// `make tables` writes .cache/tables.json): scripts/testgate reads its rows and stages,
// scripts/matrix and the inventory its rows' details.
type Table struct {
	Package  string       `json:"package"`
	Test     string       `json:"test"`
	Hardware bool         `json:"hardware"`
	Rows     []string     `json:"rows"`
	Stages   []string     `json:"stages"`  // the subtests of every row, in order
	Details  []RowDetails `json:"details"` // one per row, in the order of Rows
}

// RowDetails is what a CI job and the inventory know of one row before it runs: the
// checkpoint it names, the host it asks for, and how long its stages may take.
type RowDetails struct {
	Row               string       `json:"row"`
	Test              string       `json:"test"`
	Family            string       `json:"family"`
	Model             string       `json:"model"`
	Profile           string       `json:"profile"`
	Smoke             bool         `json:"smoke"`  // a reduced or random-weight row, never counted as a checkpoint
	Double            bool         `json:"double"` // served by a contract double, never counted as a checkpoint
	GPUs              int          `json:"gpus"`
	GPUMemoryBytes    uint64       `json:"gpu_memory_bytes"`
	ComputeCapability string       `json:"compute_capability"`
	Container         bool         `json:"container"`
	Deadlines         RowDeadlines `json:"deadlines_s"`
	Requests          int          `json:"requests"` // measured + warmup
	Hardware          bool         `json:"hardware"`
}

// RowDeadlines are a row's stage deadlines after the harness's defaults, in seconds.
type RowDeadlines struct {
	Build       float64 `json:"build"`
	Correctness float64 `json:"correctness"`
	Ready       float64 `json:"ready"`
	Request     float64 `json:"request"` // one HTTP request
	Native      float64 `json:"native"`  // one native task call
}

// ReadTables reads the tables file: every table, in order; none is an error.
func ReadTables(path string) ([]Table, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tables: no export of the qual tables at %s: run make tables", path)
	}
	if err != nil {
		return nil, fmt.Errorf("tables: %w", err)
	}
	var tables []Table
	if err := json.Unmarshal(b, &tables); err != nil {
		return nil, fmt.Errorf("tables %s: %w (write it again with: make tables)", path, err)
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("tables %s lists no table: write it again with: make tables", path)
	}
	return tables, nil
}
