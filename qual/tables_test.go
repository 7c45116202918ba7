package qual

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/harness"
	"qualkit/internal/inventory"
)

// table is one qualification table: the test that walks it, its rows, and whether they
// need hardware CI never has (a GPU, TRTMC): `make test` leaves such a test out (never
// started, so never a skip) and runs the rows' preflight unit tests instead.
type table struct {
	run      func(*testing.T)
	rows     harness.Table
	hardware bool
}

// tables lists every qualification table, one line each. It is the one list: doctor
// reads it, the Makefile derives the -skip pattern and the expected stage subtests from
// its export (`qual.test -qualkit.tables`), and each table is named by its test function,
// whose name go test's -run, the JUnit files and the evidence know it by (`go test
// ./qual/... -run Qwen` selects the Qwen checkpoint's table alone). The compiler holds
// every listed test to exist; qualify fails a test that walks a table not listed. A
// function, not a variable: the tests it names refer back to it.
func tables() []table {
	return []table{
		{TestRefEdit, refeditRows, false},
		{TestQwenImageEdit, qwenImageEditRows, true},  // the GPU host of families/qwen_image/README.md
		{TestReferenceSmoke, qwenReferenceRows, true}, // a CUDA GPU and QUALKIT_QWEN_PYTHON; scripts/h200/run.sh runs it
		{TestReferenceSmokePool, qwenReferencePoolRows, true},
		{TestPerfServeReference, perfServeReferenceRows, true},
		{TestTRTMCDouble, qwenDoubleRows, false}, // `make qwen-double` runs it alone
	}
}

// The tables' tests: each qualifies the rows its line in tables gives it.
func TestRefEdit(t *testing.T)            { qualify(t) }
func TestQwenImageEdit(t *testing.T)      { qualify(t) }
func TestReferenceSmoke(t *testing.T)     { qualify(t) }
func TestReferenceSmokePool(t *testing.T) { qualify(t) }
func TestPerfServeReference(t *testing.T) { qualify(t) }
func TestTRTMCDouble(t *testing.T)        { needDouble(t); qualify(t) }

// name is the table's name: its test function's.
func (tb table) name() string {
	fn := runtime.FuncForPC(reflect.ValueOf(tb.run).Pointer()).Name()
	return fn[strings.LastIndex(fn, ".")+1:]
}

// qualify qualifies every row of the table whose test t is, each as a subtest.
func qualify(t *testing.T) {
	t.Helper()
	i := slices.IndexFunc(tables(), func(tb table) bool { return tb.name() == t.Name() })
	if i < 0 {
		t.Fatalf("%s is not in the tables list (qual/tables_test.go): add it there, so that doctor and `make test` know it", t.Name())
	}
	for _, c := range tables()[i].rows {
		t.Run(c.Name, func(t *testing.T) {
			// Rows run side by side as the run's pool allows: each leases its GPUs (or a
			// CPU row slot, -qualkit.cpu-rows) for its whole life, and its evidence names
			// the rows that ran beside it.
			t.Parallel()
			suite.Qualify(t, c)
		})
	}
}

// tableJSON is one table as -qualkit.tables prints it (scripts/testgate reads package,
// test, hardware, rows and stages; scripts/matrix reads details).
type tableJSON struct {
	Package  string    `json:"package"`
	Test     string    `json:"test"`
	Hardware bool      `json:"hardware"`
	Rows     []string  `json:"rows"`
	Stages   []string  `json:"stages"`
	Details  []rowJSON `json:"details"` // one per row, in the order of Rows
}

// rowJSON is what a CI job needs to know of one row before it runs it: the host it asks
// for, and how long its stages may take.
type rowJSON struct {
	Row               string        `json:"row"`
	Test              string        `json:"test"`
	Family            string        `json:"family"` // the inventory reads these five (inventory.ReadTables)
	Model             string        `json:"model"`
	Profile           string        `json:"profile"`
	Smoke             bool          `json:"smoke"`
	Double            bool          `json:"double"`
	GPUs              int           `json:"gpus"`
	GPUMemoryBytes    uint64        `json:"gpu_memory_bytes"`
	ComputeCapability string        `json:"compute_capability"`
	Container         bool          `json:"container"`
	Deadlines         deadlinesJSON `json:"deadlines_s"`
	// Requests is every request AIPerf sends (measured + warmup); the harness applies no
	// default to Bench, and a table cannot hold a row without a measured request.
	Requests int  `json:"requests"`
	Hardware bool `json:"hardware"`
}

// deadlinesJSON is a row's family.Deadlines after defaults, in seconds.
type deadlinesJSON struct {
	Build       float64 `json:"build"`
	Correctness float64 `json:"correctness"`
	Ready       float64 `json:"ready"`
	Request     float64 `json:"request"`
	Native      float64 `json:"native"`
}

func rowDetails(tb table, c harness.Checkpoint) rowJSON {
	d := c.Deadlines()
	return rowJSON{
		Row: c.Name, Test: tb.name(), Family: c.Family, Model: c.Model, Profile: c.Profile, Smoke: c.Smoke, Double: c.Double,
		GPUs: c.Needs.GPU.Count, GPUMemoryBytes: c.Needs.GPU.MinMemoryBytes,
		ComputeCapability: c.Needs.GPU.MinComputeCapability, Container: c.Needs.Container,
		Deadlines: deadlinesJSON{
			Build: d.Build.Seconds(), Correctness: d.Correctness.Seconds(), Ready: d.Ready.Seconds(),
			Request: d.Request.Seconds(), Native: d.Native.Seconds(),
		},
		Requests: c.Bench.Measured + c.Bench.Warmup,
		Hardware: tb.hardware,
	}
}

// qualRows are the tables' rows as the inventory reads them: what the PR summary of a run
// and the inventory's reconciliation take (inventory.ReadTables reads the same from the
// export).
func qualRows() []inventory.QualRow {
	var out []inventory.QualRow
	for _, tb := range tables() {
		for _, c := range tb.rows {
			out = append(out, inventory.QualRow{Test: tb.name(), Name: c.Name, Family: c.Family, Profile: c.Profile, Smoke: c.Smoke, Double: c.Double})
		}
	}
	return out
}

// printTables writes the tables as JSON for the Makefile, the test gate and the CI matrix.
func printTables(w io.Writer) int {
	var out []tableJSON
	for _, tb := range tables() {
		j := tableJSON{Package: "qualkit/qual", Test: tb.name(), Hardware: tb.hardware, Stages: harness.StageNames()}
		for _, c := range tb.rows {
			j.Rows = append(j.Rows, c.Name)
			j.Details = append(j.Details, rowDetails(tb, c))
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Println("qual:", err)
		return 2
	}
	return 0
}

// -qualkit.tables prints, for every row of every table, its details in row order, with
// the deadlines after the harness's defaults: what scripts/matrix plans CI jobs from.
func TestTablesJSONDetails(t *testing.T) {
	var b bytes.Buffer
	require.Equal(t, 0, printTables(&b))
	var got []tableJSON
	require.NoError(t, json.Unmarshal(b.Bytes(), &got))
	require.Len(t, got, len(tables()))
	for i, tb := range tables() {
		j := got[i]
		assert.Equal(t, tb.name(), j.Test)
		assert.NotEmpty(t, tb.rows, "table %s has no rows", tb.name())
		require.Len(t, j.Details, len(j.Rows), "table %s: one detail per row", tb.name())
		for k, c := range tb.rows {
			d := j.Details[k]
			assert.Equal(t, c.Name, j.Rows[k])
			assert.Equal(t, c.Name, d.Row, "table %s: details in the order of rows", tb.name())
			assert.Equal(t, tb.name(), d.Test)
			assert.Equal(t, tb.hardware, d.Hardware)
			assert.Equal(t, c.Needs.GPU.Count, d.GPUs)
			assert.Equal(t, c.Needs.Container, d.Container)
			assert.Equal(t, c.Bench.Measured+c.Bench.Warmup, d.Requests)
			assert.Positive(t, d.Deadlines.Build)
			assert.Positive(t, d.Deadlines.Native)
		}
	}

	// The reference row's numbers, pinned: its own deadlines, 5 measured + 1 warmup.
	ref := got[slices.IndexFunc(got, func(j tableJSON) bool { return j.Test == "TestRefEdit" })].Details[0]
	assert.Equal(t, rowJSON{Row: "refedit-v1", Test: "TestRefEdit", Family: "refedit", Model: "qualkit/refedit-v1", Profile: "refedit-v1",
		Deadlines: deadlinesJSON{Build: 300, Correctness: 300, Ready: 60, Request: 60, Native: 60}, Requests: 6}, ref)
	// The Qwen row asks for an 80 GB-class GPU in a container.
	qwen := got[slices.IndexFunc(got, func(j tableJSON) bool { return j.Test == "TestQwenImageEdit" })].Details[0]
	assert.Equal(t, rowJSON{Row: "qwen-image-edit-2511", Test: "TestQwenImageEdit", Family: qwenImageEditRows[0].Family, Model: "Qwen/Qwen-Image-Edit-2511", Profile: "qwen-image-edit-2511", GPUs: 1, GPUMemoryBytes: 75 << 30,
		ComputeCapability: "8.0", Container: true, Hardware: true,
		Deadlines: deadlinesJSON{Build: 7200, Correctness: 3600, Ready: 1800, Request: 600, Native: 600}, Requests: 6}, qwen)
}

// A zero deadline takes the harness's default in the JSON, as it does when the row runs.
func TestTablesJSONDeadlineDefaults(t *testing.T) {
	c := refeditRows[0]
	c.Deadline = family.Deadlines{Build: time.Minute}
	d := rowDetails(table{run: TestRefEdit}, c).Deadlines
	def := family.Deadlines{}.WithDefaults()
	assert.Equal(t, deadlinesJSON{Build: 60, Correctness: def.Correctness.Seconds(), Ready: def.Ready.Seconds(),
		Request: def.Request.Seconds(), Native: def.Native.Seconds()}, d)
}

// The tables against a TRTMC-shaped checkout of the e9132e79 layout (qualkit's own tree,
// schema facts only; the real data is read by the trtmcdata-tagged tests): every full
// image-edit profile has exactly one row that counts, and every row is in the inventory,
// the reference family, smoke or a double's. The registry is the one source: the same
// rows the export prints.
func TestTablesReconcileWithTheInventory(t *testing.T) {
	inv, err := inventory.Load(filepath.Join("..", "internal", "trtmc", "testdata", "e9132e79"))
	require.NoError(t, err)
	rows := qualRows()
	require.NotEmpty(t, rows)
	require.NoError(t, inventory.Reconcile(inv.Profiles, rows, inventory.ReferenceFamily))

	var buf bytes.Buffer
	require.Equal(t, 0, printTables(&buf))
	f := filepath.Join(t.TempDir(), "tables.json")
	require.NoError(t, os.WriteFile(f, buf.Bytes(), 0o644))
	exported, err := inventory.ReadTables(f)
	require.NoError(t, err)
	assert.Equal(t, rows, exported, "the export gives the inventory the rows the tables hold")
}
