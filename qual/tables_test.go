package qual

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

// table is one qualification table: the test function that walks it, and its rows.
type table struct {
	test string
	rows harness.Table
	// hardware marks tables whose rows need what CI never has (a GPU, TRTMC): `make
	// test` leaves their test out (never started, so never a skip) and runs the rows'
	// preflight unit tests instead.
	hardware bool
}

// tables lists every qualification table. It is the one list: doctor reads it, each
// table's test function walks its rows through qualifyTable, and the Makefile derives
// the -skip pattern and the expected stage subtests from `qual.test -qualkit.tables`.
// A new table is a rows variable, a test function calling qualifyTable, and a line here.
var tables = []table{
	{test: "TestRefEdit", rows: refeditRows},
	{test: "TestQwenImageEdit", rows: qwenImageEditRows, hardware: true},
	{test: "TestReferenceSmoke", rows: qwenReferenceRows, hardware: true},
	{test: "TestQwenDouble", rows: qwenDoubleRows},
}

// qualifyTable qualifies every row of the table whose test t is, each as a subtest.
func qualifyTable(t *testing.T) {
	t.Helper()
	i := slices.IndexFunc(tables, func(tb table) bool { return tb.test == t.Name() })
	if i < 0 {
		t.Fatalf("%s is not in the tables list (qual/tables_test.go): add it there, so that doctor and `make test` know it", t.Name())
	}
	for _, c := range tables[i].rows {
		t.Run(c.Name, func(t *testing.T) { suite.Qualify(t, c) })
	}
}

// tableJSON is one table as -qualkit.tables prints it (scripts/testgate reads it).
type tableJSON struct {
	Package  string   `json:"package"`
	Test     string   `json:"test"`
	Hardware bool     `json:"hardware"`
	Rows     []string `json:"rows"`
	Stages   []string `json:"stages"`
}

// printTables writes the tables as JSON for the Makefile and the test gate.
func printTables(w io.Writer) int {
	var out []tableJSON
	for _, tb := range tables {
		j := tableJSON{Package: "qualkit/qual", Test: tb.test, Hardware: tb.hardware, Stages: harness.StageNames()}
		for _, c := range tb.rows {
			j.Rows = append(j.Rows, c.Name)
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

// The tables list and the test functions agree: every table's test exists and walks it
// through qualifyTable, and every function calling qualifyTable is listed.
func TestTablesListEveryQualifyingTest(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var callers []string
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Name.Name == "qualifyTable" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "qualifyTable" {
						callers = append(callers, fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	sort.Strings(callers)
	listed := tableTests()
	sort.Strings(listed)
	assert.Equal(t, listed, callers, "qual/tables_test.go's tables and the test functions calling qualifyTable differ")
	for _, tb := range tables {
		assert.NotEmpty(t, tb.rows, "table %s has no rows", tb.test)
	}
}
