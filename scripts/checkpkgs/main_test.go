package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small module: schema <- harness <- qual, harness <- report, tool alone.
var testPkgs = []pkg{
	{ImportPath: "qualkit/internal/schema", Dir: "/r/internal/schema"},
	{ImportPath: "qualkit/internal/harness", Dir: "/r/internal/harness", Deps: []string{"qualkit/internal/schema"}},
	{ImportPath: "qualkit/internal/report", Dir: "/r/internal/report", XTestImports: []string{"qualkit/internal/harness"}},
	{ImportPath: qualPkg, Dir: "/r/qual", TestImports: []string{"qualkit/internal/harness", "qualkit/internal/schema"}},
	{ImportPath: "qualkit/scripts/tool", Dir: "/r/scripts/tool"},
}

func TestPlanPicksChangedPackagesAndTheirDependents(t *testing.T) {
	for _, tt := range []struct {
		name    string
		changed []string
		want    plan
	}{
		{"nothing: the judges and the recipes alone", nil, plan{Judges: true, Recipes: true}},
		{"a folder of no package", []string{"/r/docs"}, plan{Judges: true, Recipes: true}},
		{"a leaf", []string{"/r/scripts/tool"}, plan{Lint: []string{"qualkit/scripts/tool"}, Tests: []string{"qualkit/scripts/tool"}, Judges: true, Recipes: true}},
		{"only qual: linted, and its no-row tests run", []string{"/r/qual"},
			plan{Lint: []string{qualPkg}, Qual: true, Judges: true, Recipes: true}},
		{"a package qual imports: qual compiled and its no-row tests run (the judges among the harness's)", []string{"/r/internal/harness"},
			plan{Lint: []string{"qualkit/internal/harness"}, Tests: []string{"qualkit/internal/harness", "qualkit/internal/report"}, Qual: true, Recipes: true}},
		{"deps through Deps too", []string{"/r/internal/schema"},
			plan{Lint: []string{"qualkit/internal/schema"}, Tests: []string{"qualkit/internal/harness", "qualkit/internal/schema"}, Qual: true, Recipes: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := map[string]bool{}
			for _, d := range tt.changed {
				changed[d] = true
			}
			assert.Equal(t, tt.want, makePlan(testPkgs, changed))
		})
	}
}

// When only qual changed there is something to do (the message "no Go package changed"
// was printed here before): qual is gofmt'ed, vetted, staticchecked, and its no-row
// tests run under -short.
func TestOnlyQualChangedRunsQualsNoRowTests(t *testing.T) {
	p := makePlan(testPkgs, map[string]bool{"/r/qual": true})
	cmds := p.commands(testPkgs)
	var lines []string
	for _, c := range cmds {
		lines = append(lines, strings.Join(c, " "))
	}
	require.Len(t, lines, 6, "%q", lines)
	assert.Equal(t, "gofmt -l /r/qual", lines[0])
	assert.Equal(t, "go vet -tags "+BuildTags+" qualkit/qual", lines[1])
	assert.Equal(t, "go tool staticcheck -tags "+BuildTags+" qualkit/qual", lines[2])
	assert.True(t, strings.HasPrefix(lines[3], "go test -short -count=1 -run ^(TestTables"), lines[3])
	assert.True(t, strings.HasSuffix(lines[3], ")$ qualkit/qual"), lines[3])
	assert.Equal(t, "go test -short -count=1 -run ^TestJudge qualkit/internal/harness", lines[4], "the stages' judges, every time")

	assert.Equal(t, "go test -short -count=1 qualkit/scripts/recipes", lines[5], "the README recipes, every time")

	assert.Equal(t, [][]string{{"go", "test", "-short", "-count=1", "-run", "^TestJudge", "qualkit/internal/harness"},
		{"go", "test", "-short", "-count=1", "qualkit/scripts/recipes"}},
		makePlan(testPkgs, nil).commands(testPkgs), "nothing changed: the judges and the recipes alone")
}

// The judges make check runs every time are tests of the harness: a rename that left
// none would silently run nothing.
func TestJudgeTestsExist(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "harness", "*_test.go"))
	require.NoError(t, err)
	re := regexp.MustCompile(judgeTests)
	var judges []string
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && re.MatchString(fn.Name.Name) {
				judges = append(judges, fn.Name.Name)
			}
		}
	}
	for _, stage := range []string{"CaseDeclaration", "Case", "ServerIdentity", "Benchmark", "Quality", "Latents", "Influence", "Identity"} {
		assert.Contains(t, judges, "TestJudge"+stage, "the judge tests of %s", stage)
	}
}

// Every name in qualTests is a test function of qual, and the -run pattern made of them
// selects each whole (a renamed test would otherwise silently stop running).
func TestQualTestsExist(t *testing.T) {
	tests := testFuncs(t, filepath.Join("..", "..", "qual"))
	p := plan{Qual: true}.commands(nil)
	require.Len(t, p, 1)
	re := regexp.MustCompile(p[0][5])
	for _, name := range qualTests {
		assert.True(t, tests[name], "qualTests names %s, which is no test of qual/", name)
		assert.True(t, re.MatchString(name), name)
	}
	assert.False(t, re.MatchString("TestRefEdit"), "the pattern selects no row")
	assert.False(t, re.MatchString("TestTablesX"), "the pattern selects whole names")
}

// A package with long tests of its own code runs its asDependent subset when only a
// package it imports changed (a new family: the checker imports families/all), and its
// whole -short set when it changed itself.
func TestDependentsRunTheirSubset(t *testing.T) {
	const checker = "qualkit/internal/evidencecheck"
	pkgs := []pkg{
		{ImportPath: "qualkit/families/all", Dir: "/r/families/all"},
		{ImportPath: checker, Dir: "/r/internal/evidencecheck", Deps: []string{"qualkit/families/all"}},
	}
	p := makePlan(pkgs, map[string]bool{"/r/families/all": true})
	assert.Equal(t, []string{"qualkit/families/all"}, p.Tests)
	assert.Equal(t, map[string]string{checker: asDependent[checker]}, p.Subsets)
	assert.Contains(t, p.commands(pkgs), []string{"go", "test", "-short", "-count=1", "-run", asDependent[checker], checker})

	p = makePlan(pkgs, map[string]bool{"/r/families/all": true, "/r/internal/evidencecheck": true})
	assert.Equal(t, []string{"qualkit/families/all", checker}, p.Tests, "changed itself: every -short test")
	assert.Empty(t, p.Subsets)
}

// Every test an asDependent pattern names is a test of its package: a rename would
// silently run nothing.
func TestAsDependentNamesExist(t *testing.T) {
	for path, run := range asDependent {
		tests := testFuncs(t, filepath.Join("..", "..", strings.TrimPrefix(path, "qualkit/")))
		names := strings.Split(strings.Trim(strings.TrimPrefix(strings.TrimSuffix(run, ")$"), "^("), "^$"), "|")
		for _, name := range names {
			if name != "" {
				assert.True(t, tests[name], "asDependent[%s] names %s, which is no test there", path, name)
			}
		}
	}
}

// BuildTags names every build tag of the module's files (platform tags aside), and the
// lint of make test uses the same list.
func TestBuildTagsAreEveryTag(t *testing.T) {
	root := filepath.Join("..", "..")
	tags := map[string]bool{}
	constraint := regexp.MustCompile(`(?m)^//go:build (.+)$`)
	word := regexp.MustCompile(`[A-Za-z0-9_]+`)
	platform := map[string]bool{"linux": true, "darwin": true, "windows": true, "unix": true, "cgo": true}
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == ".cache" || d.Name() == "evidence") {
			if err == nil {
				return filepath.SkipDir
			}
			return err
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range constraint.FindAllStringSubmatch(string(b), -1) {
			for _, w := range word.FindAllString(m[1], -1) {
				if !platform[w] {
					tags[w] = true
				}
			}
		}
		return nil
	}))
	var found []string
	for tag := range tags {
		found = append(found, tag)
	}
	slices.Sort(found)
	assert.Equal(t, strings.Join(found, ","), BuildTags)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	assert.Contains(t, string(mk), "vet -tags "+BuildTags+" ./...", "make lint vets every tag")
}

// testFuncs are the Test functions the _test.go files of dir declare.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no test files in %s", dir)
	tests := map[string]bool{}
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && strings.HasPrefix(fn.Name.Name, "Test") {
				tests[fn.Name.Name] = true
			}
		}
	}
	return tests
}
