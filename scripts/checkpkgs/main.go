// Command checkpkgs is `make check`, the inner loop: it lints (gofmt, vet, staticcheck)
// the packages holding a file changed since BASE (default HEAD, untracked files
// included), then runs go test -short on those and every package importing one. qual
// runs only its tests that need no row (qualTests); the stages' judges run every time.
//
//	go run ./scripts/checkpkgs [-base REF] [-n]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// harnessPkg holds the stages; judgeTests selects its tests of the stages' pure judges.
const (
	harnessPkg = "qualkit/internal/harness"
	judgeTests = "^TestJudge"
)

// recipesPkg holds the README recipes, tested every time (a README edit changes no Go
// package).
const recipesPkg = "qualkit/scripts/recipes"

// qualPkg is the package of the qualification rows: -short skips none of its tests, so
// it is tested with qualTests alone.
const qualPkg = "qualkit/qual"

// qualTests are qual's tests that run no row and need no container, AIPerf or venv.
// TestQualTestsExist keeps every name a test of qual.
var qualTests = []string{
	"TestTablesJSONDetails", "TestTablesJSONDeadlineDefaults", "TestTablesReconcileWithTheInventory",
	"TestDocsLinksResolve", "TestFaultTableNamesItsTests", "TestNegativeControlsTableMatchesREADME",
	"TestFlagPathsResolveAgainstTheRepositoryRoot", "TestDoctorSelectsRowsLikeRun", "TestHeadlineRunSelectsTheCheckpointTables", "TestCIDocMatrixIsTheTables",
}

// BuildTags are the module's own build tags, every one: vet and staticcheck see the files
// behind each (a file only one tag builds rots unseen otherwise). TestBuildTagsAreEveryTag
// holds the list to the //go:build lines.
const BuildTags = "mktestdata,trtmcdata,trtmcperfserve"

// asDependent is what a package with long tests runs when it is tested only because it
// imports a changed package: the tests a change elsewhere can break.
var asDependent = map[string]string{
	"qualkit/internal/evidencecheck": "^(TestCommittedRunsPass|TestCommittedH200RunPasses|TestCommittedOrderRunsPass|TestUnknownFamilyFails|TestContractWithTheHarness)$",
	"qualkit/scripts/mergeevidence":  "^TestUsage$",
	"qualkit/scripts/docs":           "^$",
}

type pkg struct {
	ImportPath, Dir                 string
	Deps, TestImports, XTestImports []string
}

type plan struct {
	Lint  []string // import paths, qual included when it changed
	Tests []string // import paths, qual left out
	// Subsets: packages tested only as dependents, with their asDependent pattern.
	Subsets map[string]string
	Qual    bool // qual changed or imports a changed package
	Judges  bool // run the harness's judge tests alone (it is not in Tests)
	Recipes bool // test the README recipes' package (it is not in Tests)
}

func main() {
	base := flag.String("base", "HEAD", "git ref the changes are taken from")
	dryRun := flag.Bool("n", false, "print the commands, run none")
	flag.Parse()
	os.Exit(run(*base, *dryRun, os.Stdout, os.Stderr))
}

func run(base string, dryRun bool, stdout, stderr io.Writer) int {
	changed, err := changedDirs(base)
	if err != nil {
		fmt.Fprintln(stderr, "checkpkgs:", err)
		return 1
	}
	pkgs, err := list()
	if err != nil {
		fmt.Fprintln(stderr, "checkpkgs:", err)
		return 1
	}
	p := makePlan(pkgs, changed)
	cmds := p.commands(pkgs)
	if len(p.Lint) == 0 {
		fmt.Fprintf(stdout, "check: no Go package changed since %s (BASE=HEAD~1 checks the last commit)\n", base)
	}
	for _, c := range cmds {
		fmt.Fprintln(stdout, "check:", strings.Join(c, " "))
		if dryRun {
			continue
		}
		if c[0] == "gofmt" {
			out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
			if err != nil || len(bytes.TrimSpace(out)) > 0 {
				fmt.Fprintf(stderr, "check: gofmt needed (or failed: %v):\n%s", err, out)
				return 1
			}
			continue
		}
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(stderr, "check: %s: %v\n", strings.Join(c[:2], " "), err)
			return 1
		}
	}
	return 0
}

// makePlan picks the packages from the folders changed.
func makePlan(pkgs []pkg, changed map[string]bool) plan {
	var p plan
	for _, pk := range pkgs {
		if changed[pk.Dir] {
			p.Lint = append(p.Lint, pk.ImportPath)
		}
	}
	for _, pk := range pkgs {
		imports := func(h string) bool {
			return h == pk.ImportPath || slices.Contains(pk.Deps, h) || slices.Contains(pk.TestImports, h) || slices.Contains(pk.XTestImports, h)
		}
		if !slices.ContainsFunc(p.Lint, imports) {
			continue
		}
		if pk.ImportPath == qualPkg {
			p.Qual = true
			continue
		}
		if run, ok := asDependent[pk.ImportPath]; ok && !changed[pk.Dir] {
			if p.Subsets == nil {
				p.Subsets = map[string]string{}
			}
			p.Subsets[pk.ImportPath] = run
			continue
		}
		p.Tests = append(p.Tests, pk.ImportPath)
	}
	slices.Sort(p.Lint)
	slices.Sort(p.Tests)
	p.Judges = !slices.Contains(p.Tests, harnessPkg)
	p.Recipes = !slices.Contains(p.Tests, recipesPkg)
	return p
}

// commands are the plan's command lines, in order: the judges' and the recipes' alone
// when nothing changed.
func (p plan) commands(pkgs []pkg) [][]string {
	var cmds [][]string
	if len(p.Lint) > 0 {
		gofmt := []string{"gofmt", "-l"}
		for _, pk := range pkgs {
			if slices.Contains(p.Lint, pk.ImportPath) {
				gofmt = append(gofmt, pk.Dir)
			}
		}
		cmds = append(cmds, gofmt,
			append([]string{"go", "vet", "-tags", BuildTags}, p.Lint...),
			append([]string{"go", "tool", "staticcheck", "-tags", BuildTags}, p.Lint...))
	}
	if len(p.Tests) > 0 {
		cmds = append(cmds, append([]string{"go", "test", "-short", "-count=1"}, p.Tests...))
	}
	for _, path := range slices.Sorted(maps.Keys(p.Subsets)) {
		cmds = append(cmds, []string{"go", "test", "-short", "-count=1", "-run", p.Subsets[path], path})
	}
	if p.Qual {
		cmds = append(cmds, []string{"go", "test", "-short", "-count=1", "-run", "^(" + strings.Join(qualTests, "|") + ")$", qualPkg})
	}
	if p.Judges {
		cmds = append(cmds, []string{"go", "test", "-short", "-count=1", "-run", judgeTests, harnessPkg})
	}
	if p.Recipes {
		cmds = append(cmds, []string{"go", "test", "-short", "-count=1", recipesPkg})
	}
	return cmds
}

// changedDirs are the absolute folders of the files changed since base, and of the
// untracked files git does not ignore.
func changedDirs(base string) (map[string]bool, error) {
	root, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	root = strings.TrimSpace(root)
	diff, err := git("diff", "--name-only", base)
	if err != nil {
		return nil, err
	}
	untracked, err := git("ls-files", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(diff + "\n" + untracked))
	for sc.Scan() {
		if f := strings.TrimSpace(sc.Text()); f != "" {
			dirs[filepath.Join(root, filepath.Dir(f))] = true
		}
	}
	return dirs, nil
}

func list() ([]pkg, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
