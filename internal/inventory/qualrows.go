package inventory

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// QualRow is one row of a qual/ table, as found in its source.
//
// The marker: in qual/*_test.go, every composite literal with a `Profile:` field is a
// row (in practice a harness.Checkpoint), and the field's value must be a string
// literal naming the TRTMC testcase profile (or the reference family's own profile):
//
//	harness.Checkpoint{Name: "qwen-image-edit-2511", Family: "trtmc", Profile: "qwen-image-edit-2511", ...}
//
// `Name:` and `Family:` in the same literal are read when they are string literals.
// A literal is required so that the inventory can read the table without running it.
type QualRow struct {
	File    string // as found under the qual directory given
	Line    int
	Name    string
	Family  string
	Profile string
	Smoke   bool // `Smoke: true`: a reduced or random-weight row, never counted as a checkpoint
	Double  bool // `Double: true`: served by a contract double, never counted as a checkpoint
}

// Counts says whether the row can qualify its profile: smoke and contract-double rows
// never do.
func (r QualRow) Counts() bool { return !r.Smoke && !r.Double }

func (r QualRow) String() string { return fmt.Sprintf("%s:%d (row %q)", r.File, r.Line, r.Name) }

// ReadQualRows scans dir/*_test.go for rows. A missing directory has no rows.
func ReadQualRows(dir string) ([]QualRow, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, fmt.Errorf("qual rows in %s: %w", dir, err)
	}
	sort.Strings(files)
	var rows []QualRow
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("qual rows: parse %s: %w", path, err)
		}
		var bad error
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || bad != nil {
				return bad == nil
			}
			row, isRow, err := qualRow(fset, path, lit)
			if err != nil {
				bad = err
				return false
			}
			if isRow {
				rows = append(rows, row)
			}
			return true
		})
		if bad != nil {
			return nil, bad
		}
	}
	return rows, nil
}

func qualRow(fset *token.FileSet, path string, lit *ast.CompositeLit) (QualRow, bool, error) {
	row := QualRow{File: path, Line: fset.Position(lit.Pos()).Line}
	isRow := false
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		val, isLit := stringLiteral(kv.Value)
		switch key.Name {
		case "Profile":
			isRow = true
			if !isLit || val == "" {
				return row, false, fmt.Errorf("qual row at %s:%d: Profile must be a non-empty string literal so the inventory can read it",
					path, fset.Position(kv.Pos()).Line)
			}
			row.Profile = val
		case "Name":
			row.Name = val
		case "Family":
			row.Family = val
		case "Smoke":
			id, ok := kv.Value.(*ast.Ident)
			row.Smoke = ok && id.Name == "true"
		case "Double":
			id, ok := kv.Value.(*ast.Ident)
			row.Double = ok && id.Name == "true"
		}
	}
	return row, isRow, nil
}

func stringLiteral(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
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
