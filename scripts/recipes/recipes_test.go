package recipes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/trtmcdouble"
	"qualkit/internal/dockertest"
)

// READMEs are the documents whose command blocks are recipes, relative to the
// repository root.
var READMEs = []string{"README.md", "families/qwen_image/README.md"}

// h100Reading is a real NVML reading of an H100 80GB (the device pool's, 2026-12-03),
// which the scripts' gpuread prints: the host has one H100 80GB.
const h100Reading = "docs/evidence/h200-perf-serve-reference/h200.json"

// Every command block of the READMEs is a recipe script and every script a block: the
// same lines, in the same order. Fast (no script runs): `make check` runs it.
func TestREADMEBlocksAreRecipes(t *testing.T) {
	root := repoRoot(t)
	blocks, err := commandBlocks(root)
	require.NoError(t, err)
	require.NotEmpty(t, blocks)
	named := map[string]bool{}
	for _, b := range blocks {
		for _, s := range b.scripts {
			named[s] = true
			lines, err := scriptLines(filepath.Join(root, s))
			if !assert.NoError(t, err, "%s:%d names %s", b.file, b.line, s) {
				continue
			}
			assert.NoError(t, sameLines(b, s, lines))
		}
	}
	all, err := filepath.Glob(filepath.Join(root, "scripts", "recipes", "*.txtar"))
	require.NoError(t, err)
	for _, f := range all {
		rel, _ := filepath.Rel(root, f)
		assert.True(t, named[filepath.ToSlash(rel)], "%s: no README block names it (<!-- recipe: %s --> before a command block): remove it, or name it", rel, filepath.ToSlash(rel))
	}
}

// The recipes run, each in a fresh clone of HEAD on a host shaped like the reader's
// (scripts/recipes/README.md).
func TestRecipesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the README blocks are compared with their scripts (TestREADMEBlocksAreRecipes); the scripts run in make test")
	}
	root := repoRoot(t)
	blocks, err := commandBlocks(root)
	require.NoError(t, err)
	head, err := output(root, "git", "rev-parse", "HEAD")
	require.NoError(t, err)
	dirty, err := output(root, "git", "status", "--porcelain", "--untracked-files=no")
	require.NoError(t, err)
	if dirty != "" {
		t.Logf("the scripts run in a clone of HEAD %s, without the uncommitted changes:\n%s", head, dirty)
	}
	// The double's checkouts, one per layout, and its Python image, saved from this
	// machine's engine for the scripts' engines.
	gen := t.TempDir()
	pyImage, err := trtmcdouble.PythonImage(root)
	require.NoError(t, err)
	if _, err := output(root, "docker", "image", "inspect", pyImage); err != nil {
		t.Fatalf("the double's Python image %s is not in this machine's engine: make it with `make double-image` (%v)", pyImage, err)
	}
	standin := filepath.Join(gen, "standin.tar")
	_, err = output(root, "docker", "save", "-o", standin, pyImage)
	require.NoError(t, err)
	checkouts := map[string]string{}
	for layout, spec := range map[string]trtmcdouble.CheckoutSpec{
		"families": {Layout: trtmcdouble.LayoutFamilies, Serving: trtmcdouble.ServingPerfServe, PerfServe: os.Getenv("QUALKIT_TRTMC_PERF_SERVE"), PythonImage: pyImage},
		"e9132e79": {Layout: trtmcdouble.LayoutLegacy, Serving: trtmcdouble.ServingNone, PythonImage: pyImage},
	} {
		checkouts[layout] = filepath.Join(gen, "trtmc-"+layout)
		require.NoError(t, trtmcdouble.Checkout(t.Context(), root, checkouts[layout], spec))
	}
	gpuread := filepath.Join(gen, "gpuread")
	require.NoError(t, os.WriteFile(gpuread, []byte("#!/bin/sh\nexec cat "+filepath.Join(root, h100Reading)+"\n"), 0o755))

	// The scripts as testscript runs them: each README line replaced by its number
	// (lines[name][n]), so that testscript's own parsing (quotes, $, #) never touches it.
	scripts := filepath.Join(gen, "scripts")
	require.NoError(t, os.Mkdir(scripts, 0o755))
	lines := map[string][]string{}
	engines := map[string]string{}
	for _, b := range blocks {
		for _, s := range b.scripts {
			name := strings.TrimSuffix(filepath.Base(s), ".txtar")
			text, ls, err := numbered(filepath.Join(root, s))
			require.NoError(t, err)
			lines[name] = ls
			require.NoError(t, os.WriteFile(filepath.Join(scripts, name+".txtar"), text, 0o644))
			engines[name] = dockertest.Start(t).Host()
		}
	}
	env := baseEnv(t)
	testscript.Run(t, testscript.Params{
		Dir: scripts,
		Setup: func(e *testscript.Env) error {
			name := strings.TrimPrefix(filepath.Base(e.WorkDir), "script-")
			clone := filepath.Join(e.WorkDir, "qualkit")
			if _, err := output(e.WorkDir, "git", "clone", "-q", "--no-checkout", root, clone); err != nil {
				return err
			}
			if _, err := output(clone, "git", "checkout", "-q", head); err != nil {
				return err
			}
			home := filepath.Join(e.WorkDir, "home")
			if err := os.Mkdir(home, 0o755); err != nil {
				return err
			}
			e.Cd = clone
			e.Vars = append(e.Vars, env...)
			e.Vars = append(e.Vars, "HOME="+home, "DOCKER_HOST="+engines[name], "QUALKIT_GPUREAD="+gpuread,
				"STANDIN="+standin, "TRTMC_FAMILIES="+checkouts["families"], "TRTMC_E9132E79="+checkouts["e9132e79"])
			e.Values[linesKey{}] = lines[name]
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sh": runLine, "ci": ciRunsLine, "exitcode": exitCode, "standin": loadStandin,
		},
		RequireExplicitExec: true,
	})
}

type linesKey struct{}

// runLine runs README line N with bash, in the script's folder and environment; what the
// line exports and where it goes (cd) last for the script's later lines, as in the
// reader's shell. Its exit status is kept for exitcode.
func runLine(ts *testscript.TestScript, neg bool, args []string) {
	line := readmeLine(ts, args)
	ts.Logf("$ %s", line)
	state := filepath.Join(ts.Getenv("WORK"), ".line-state")
	err := ts.Exec("bash", "-c", line+"\n__qk=$?; { pwd; env -0; } > "+strconv.Quote(state)+"; exit $__qk")
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("%s: %v", line, err)
	}
	if b, err := os.ReadFile(state); err == nil {
		dir, vars, _ := strings.Cut(string(b), "\n")
		if dir != "" {
			ts.Check(ts.Chdir(dir))
		}
		for _, kv := range strings.Split(vars, "\x00") {
			k, v, ok := strings.Cut(kv, "=")
			switch {
			case !ok, k == "_", k == "SHLVL", k == "PWD", k == "OLDPWD", ts.Getenv(k) == v:
			default:
				ts.Setenv(k, v)
			}
		}
		os.Remove(state)
	}
	ts.Setenv("SH_EXIT", strconv.Itoa(code))
	switch {
	case neg && code == 0:
		ts.Fatalf("%s: succeeded, the script expects it to fail", line)
	case !neg && code != 0:
		ts.Fatalf("%s: exit status %d", line, code)
	}
}

// ciRunsLine holds README line N (a command and a comment) to CI: .ci/run runs that
// command (with what it names beside the clone after it, such as TRTMC=DIR). It is for
// the line CI runs and this test cannot: `make test` runs this test.
func ciRunsLine(ts *testscript.TestScript, neg bool, args []string) {
	line := readmeLine(ts, args)
	if neg {
		ts.Fatalf("ci: no negation")
	}
	cmd, _, _ := strings.Cut(line, "#")
	want := strings.Fields(cmd)
	for _, l := range strings.Split(ts.ReadFile(".ci/run"), "\n") {
		if f := strings.Fields(l); len(f) >= len(want) && strings.Join(f[:len(want)], " ") == strings.Join(want, " ") {
			ts.Logf(".ci/run runs %q", strings.TrimSpace(l))
			return
		}
	}
	ts.Fatalf(".ci/run does not run %q", strings.Join(want, " "))
}

// exitCode N: the last README line exited with status N.
func exitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: exitcode N")
	}
	if got := ts.Getenv("SH_EXIT"); got != args[0] {
		ts.Fatalf("the last line exited with status %s, want %s", got, args[0])
	}
}

// standin DOCKERFILE: the stand-in for the dev Dockerfile's base image, which cannot be
// had here (TRTMC's NGC image): the double's Python image ($STANDIN, saved from this
// machine's engine) loaded into the script's engine and tagged with the name the
// Dockerfile's FROM gives, so that its real COPY lines run against the real context.
func loadStandin(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: standin DOCKERFILE")
	}
	from := ""
	for _, l := range strings.Split(ts.ReadFile(args[0]), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.EqualFold(f[0], "FROM") {
			from = f[1]
			break
		}
	}
	if from == "" {
		ts.Fatalf("%s has no FROM line", args[0])
	}
	out, err := exec.Command("docker", "-H", ts.Getenv("DOCKER_HOST"), "load", "-q", "-i", ts.Getenv("STANDIN")).CombinedOutput()
	if err != nil {
		ts.Fatalf("docker load: %v: %s", err, out)
	}
	loaded := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "Loaded image:"))
	if loaded != from {
		if out, err := exec.Command("docker", "-H", ts.Getenv("DOCKER_HOST"), "tag", loaded, from).CombinedOutput(); err != nil {
			ts.Fatalf("docker tag: %v: %s", err, out)
		}
	}
	ts.Logf("the stand-in base %s (the double's Python image) is %s", loaded, from)
}

func readmeLine(ts *testscript.TestScript, args []string) string {
	lines, _ := ts.Value(linesKey{}).([]string)
	n := -1
	if len(args) == 1 {
		n, _ = strconv.Atoi(args[0])
	}
	if n < 0 || n >= len(lines) {
		ts.Fatalf("a README line command takes the line's number (the test writes it): %q", args)
	}
	return lines[n]
}

// baseEnv is what the scripts' shell inherits from this host beside testscript's own
// (PATH, WORK, TMPDIR): the machine's caches (Go's, the venv cache under
// XDG_CACHE_HOME), pip's configuration and the locale. Nothing of make test's own
// (RUNTIME, TESTCONTAINERS_RYUK_DISABLED, QUALKIT_*): the reader's shell has none.
func baseEnv(t *testing.T) []string {
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	env := []string{"XDG_CACHE_HOME=" + cache}
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE", "GOFLAGS", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOTOOLCHAIN"} {
		v, err := output(".", "go", "env", k)
		require.NoError(t, err)
		env = append(env, k+"="+v)
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PIP_") || k == "LANG" || k == "USER" {
			env = append(env, kv)
		}
	}
	return env
}

// block is a command block of a README: its lines, and the scripts its recipe comment names.
type block struct {
	file    string
	line    int // of the first command line
	lines   []string
	scripts []string
}

var (
	fence        = regexp.MustCompile("^```\\s*([A-Za-z0-9_-]*)\\s*$")
	recipe       = regexp.MustCompile(`^<!-- recipe: (.+) -->$`)
	generated    = regexp.MustCompile(`^<!-- make docs: `)
	generatedEnd = regexp.MustCompile(`^<!-- /make docs -->$`)
)

// commandBlocks reads the READMEs' command blocks (```, ```bash, ```sh, ```shell). A
// block inside a `make docs` region is output that scripts/docs writes, not commands.
func commandBlocks(root string, files ...string) ([]block, error) {
	if len(files) == 0 {
		files = READMEs
	}
	var blocks []block
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(b), "\n")
		inGenerated := false
		for i := 0; i < len(lines); i++ {
			l := lines[i]
			switch {
			case generated.MatchString(l):
				inGenerated = true
				continue
			case generatedEnd.MatchString(l):
				inGenerated = false
				continue
			}
			m := fence.FindStringSubmatch(l)
			if m == nil && !strings.HasPrefix(l, "```") {
				continue
			}
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
				end++
			}
			commands := m != nil && (m[1] == "" || m[1] == "bash" || m[1] == "sh" || m[1] == "shell")
			if commands && !inGenerated {
				bl := block{file: f, line: i + 2, lines: lines[i+1 : end]}
				prev := i - 1
				for prev >= 0 && strings.TrimSpace(lines[prev]) == "" {
					prev--
				}
				if prev >= 0 {
					if rm := recipe.FindStringSubmatch(strings.TrimSpace(lines[prev])); rm != nil {
						bl.scripts = strings.Fields(rm[1])
					}
				}
				if len(bl.scripts) == 0 {
					errs = append(errs, fmt.Errorf("%s:%d: a command block without a recipe: put <!-- recipe: scripts/recipes/NAME.txtar --> on the line before it, and its lines in that script (scripts/recipes/README.md)", f, i+1))
				}
				blocks = append(blocks, bl)
			}
			i = end
		}
	}
	return blocks, errors.Join(errs...)
}

// readmeCommand is a script line that holds a README line: `sh LINE`, `! sh LINE`, `ci LINE`.
var readmeCommand = regexp.MustCompile(`^(! )?(sh|ci) (.*)$`)

// scriptLines lists the README lines a script holds, in order.
func scriptLines(path string) ([]string, error) {
	_, lines, err := numbered(path)
	return lines, err
}

// numbered returns the script with each README line replaced by its number, and the lines.
func numbered(path string) ([]byte, []string, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, nil, err
	}
	var lines []string
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(a.Comment)))
	for sc.Scan() {
		l := sc.Text()
		if m := readmeCommand.FindStringSubmatch(l); m != nil {
			fmt.Fprintf(&out, "%s%s %d\n", m[1], m[2], len(lines))
			lines = append(lines, m[3])
			continue
		}
		out.WriteString(l + "\n")
	}
	a.Comment = []byte(out.String())
	return txtar.Format(a), lines, sc.Err()
}

// sameLines says how a README block and its script differ, if they do.
func sameLines(b block, script string, lines []string) error {
	n := max(len(b.lines), len(lines))
	for i := range n {
		var want, got string
		if i < len(b.lines) {
			want = b.lines[i]
		}
		if i < len(lines) {
			got = lines[i]
		}
		if want != got {
			return fmt.Errorf("%s:%d and %s differ at the block's line %d:\n  README: %q\n  script: %q\nthe commands a reader types must be the ones the script runs: change both (scripts/recipes/README.md)",
				b.file, b.line+i, script, i+1, want, got)
		}
	}
	return nil
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// output runs a command in dir and returns its trimmed stdout, or an error with its output.
func output(dir, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(context.Background(), name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(b)), nil
}

// What counts as a command block, and what a block without a recipe comment gets.
func TestCommandBlocksNeedARecipe(t *testing.T) {
	root := t.TempDir()
	doc := "# Title\n\n" +
		"<!-- recipe: scripts/recipes/a.txtar scripts/recipes/b.txtar -->\n```bash\nmake one  # a comment\n```\n\n" +
		"<!-- make docs: output -->\n```\nchecker: ok\n```\n<!-- /make docs -->\n\n" +
		"```json\n{\"not\": \"commands\"}\n```\n\n" +
		"Text.\n\n```sh\nmake two\n```\n"
	require.NoError(t, os.WriteFile(filepath.Join(root, "DOC.md"), []byte(doc), 0o644))
	blocks, err := commandBlocks(root, "DOC.md")
	require.Len(t, blocks, 2)
	assert.Equal(t, block{file: "DOC.md", line: 5, lines: []string{"make one  # a comment"}, scripts: []string{"scripts/recipes/a.txtar", "scripts/recipes/b.txtar"}}, blocks[0])
	assert.Equal(t, []string{"make two"}, blocks[1].lines)
	assert.EqualError(t, err, "DOC.md:20: a command block without a recipe: put <!-- recipe: scripts/recipes/NAME.txtar --> on the line before it, and its lines in that script (scripts/recipes/README.md)")

	assert.NoError(t, sameLines(blocks[0], "a.txtar", []string{"make one  # a comment"}))
	assert.ErrorContains(t, sameLines(blocks[0], "a.txtar", []string{"make one # a comment"}), "DOC.md:5 and a.txtar differ at the block's line 1")
	assert.ErrorContains(t, sameLines(blocks[0], "a.txtar", []string{"make one  # a comment", "make three"}), `README: ""`)
}

// A script's README lines are its sh, ! sh and ci lines, in order; testscript gets their numbers.
func TestScriptLinesAreNumbered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.txtar")
	require.NoError(t, os.WriteFile(path, []byte("# comment\nsh make 'x' $Y # z\nstdout ok\n! sh false\nci make test\n-- f.txt --\nsh not a line\n"), 0o644))
	text, lines, err := numbered(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"make 'x' $Y # z", "false", "make test"}, lines)
	assert.Equal(t, "# comment\nsh 0\nstdout ok\n! sh 1\nci 2\n-- f.txt --\nsh not a line\n", string(text))
}
