package evidencecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"qualkit/internal/schema"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unread lists the layout's entries that name no reader and give no reason why none is
// needed, that give both, or whose readers are no function of funcs.
func unread(layout []schema.LayoutFile, funcs map[string]bool) []string {
	var out []string
	for _, f := range layout {
		switch {
		case len(f.ReadBy) == 0 && f.NotEvidence == "":
			out = append(out, f.Path+": no reader and no reason it is not evidence")
		case len(f.ReadBy) > 0 && f.NotEvidence != "":
			out = append(out, f.Path+": both a reader and a reason it is not evidence")
		}
		for _, fn := range f.ReadBy {
			if !funcs[fn] {
				out = append(out, f.Path+": its reader "+fn+" is no function of package evidencecheck")
			}
		}
	}
	return out
}

// packageFuncs are the functions and methods this package's non-test files declare.
func packageFuncs(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	funcs := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok {
				funcs[fn.Name.Name] = true
			}
		}
	}
	return funcs
}

// Every file the evidence may hold is read by a check, or its entry says why it is not
// evidence: no file is kept that nothing holds to anything.
func TestEveryFileIsRead(t *testing.T) {
	funcs := packageFuncs(t)
	assert.Empty(t, unread(schema.RunLayout, funcs), "RunLayout")
	assert.Empty(t, unread(schema.RowLayout, funcs), "RowLayout")

	// The test can fail: an entry with neither, with both, with a reader that is gone.
	bad := []schema.LayoutFile{
		{Path: "serve/new.log", Need: schema.Optional},
		{Path: "serve/both.log", Need: schema.Optional, ReadBy: []string{"checkServe"}, NotEvidence: "it is a console"},
		{Path: "serve/gone.log", Need: schema.Optional, ReadBy: []string{"checkSomethingRemoved"}},
	}
	assert.Equal(t, []string{
		"serve/new.log: no reader and no reason it is not evidence",
		"serve/both.log: both a reader and a reason it is not evidence",
		"serve/gone.log: its reader checkSomethingRemoved is no function of package evidencecheck",
	}, unread(bad, funcs))
}
