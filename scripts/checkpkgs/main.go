// Command checkpkgs prints the packages `make check` lints and tests: those holding a
// file changed since BASE (default HEAD: the work not yet committed, untracked files
// included), and, for testing, every package whose code or tests import one of them. The
// end-to-end qual package is left out: `make test` runs it.
//
//	go run ./scripts/checkpkgs [-base REF] [-dependents]
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

type pkg struct {
	ImportPath, Dir                 string
	Deps, TestImports, XTestImports []string
}

func main() {
	base := flag.String("base", "HEAD", "git ref the changes are taken from")
	dependents := flag.Bool("dependents", false, "add the packages that import a changed one (for tests)")
	flag.Parse()
	changed, err := changedDirs(*base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkpkgs:", err)
		os.Exit(1)
	}
	pkgs, err := list()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkpkgs:", err)
		os.Exit(1)
	}
	var hit []string
	for _, p := range pkgs {
		if changed[p.Dir] {
			hit = append(hit, p.ImportPath)
		}
	}
	out := slices.Clone(hit)
	if *dependents {
		for _, p := range pkgs {
			for _, h := range hit {
				if slices.Contains(p.Deps, h) || slices.Contains(p.TestImports, h) || slices.Contains(p.XTestImports, h) {
					out = append(out, p.ImportPath)
					break
				}
			}
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	out = slices.DeleteFunc(out, func(s string) bool { return s == "qualkit/qual" })
	fmt.Println(strings.Join(out, " "))
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
