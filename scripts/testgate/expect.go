package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// goTests lists "<import path>/<name>" of every top-level Test and Fuzz function in the
// test files go list selects for the packages under the build tags: the tests a
// complete `go test` of those packages runs.
func goTests(pattern, tags string) ([]string, error) {
	args := []string{"list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.Command("go", append(args, pattern)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("go list %s: %v: %s", pattern, err, ee.Stderr)
		}
		return nil, fmt.Errorf("go list %s: %w", pattern, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var tests []string
	for dec.More() {
		var p struct {
			ImportPath, Dir           string
			TestGoFiles, XTestGoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
			names, err := testFuncs(filepath.Join(p.Dir, f))
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				tests = append(tests, p.ImportPath+"/"+n)
			}
		}
	}
	if len(tests) == 0 {
		return nil, fmt.Errorf("go list %s: no Test or Fuzz function found", pattern)
	}
	return tests, nil
}

// testFunc matches the names go test runs as tests: Test or Fuzz, then nothing or a
// character that is not a lower-case letter.
var testFunc = regexp.MustCompile(`^(Test|Fuzz)([^a-z].*)?$`)

// testFuncs are the top-level Test and Fuzz functions of one file (TestMain aside).
func testFuncs(path string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if ok && fn.Recv == nil && fn.Name.Name != "TestMain" && testFunc.MatchString(fn.Name.Name) &&
			fn.Type.Params != nil && len(fn.Type.Params.List) == 1 {
			out = append(out, fn.Name.Name)
		}
	}
	return out, nil
}

// pytestIDs turns `pytest --collect-only -q` node ids into JUnit ids as pytest's
// --junitxml writes them: "path/to/test_x.py::Class::test_y[p]" is classname
// "path.to.test_x.Class", name "test_y[p]".
func pytestIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pytest collection: %w", err)
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			break // the node ids end at the first blank line; warnings and the count follow
		}
		if !strings.Contains(line, "::") {
			continue
		}
		parts := strings.Split(line, "::")
		class := strings.ReplaceAll(strings.TrimSuffix(parts[0], ".py"), "/", ".")
		if len(parts) > 2 {
			class += "." + strings.Join(parts[1:len(parts)-1], ".")
		}
		ids = append(ids, class+"/"+parts[len(parts)-1])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("pytest collection %s lists no test", path)
	}
	return ids, nil
}
