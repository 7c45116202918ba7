package familytest

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// The guide and the family it builds.
const (
	guidePath  = "docs/adding-a-family.md"
	examplePkg = "families/example"
	exampleRow = "example-v1"
)

// guideBlock is one code block of the guide that becomes code: a whole new file
// (file=PATH), or lines for a file of the tree (into=PATH: the block's first line is a
// line of that file, the others go right after it).
type guideBlock struct {
	path string
	into bool
	code string
	line int // where the block starts in the guide, for messages
}

var guideFence = regexp.MustCompile("^```go (file|into)=(\\S+)$")

// guideBlocks reads the marked blocks of a guide, in order.
func guideBlocks(md string) ([]guideBlock, error) {
	var out []guideBlock
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		m := guideFence.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		b := guideBlock{path: m[2], into: m[1] == "into", line: i + 1}
		var code []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			code = append(code, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s:%d: the block is never closed", guidePath, b.line)
		}
		b.code = strings.Join(code, "\n") + "\n"
		out = append(out, b)
	}
	return out, nil
}

// guideFiles are the files the blocks make, by their path in the repository: a new
// file's whole text, or a file of the tree with the lines added.
func guideFiles(root string, blocks []guideBlock) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d (%s)", guidePath, b.line, b.path)
		if !filepath.IsLocal(b.path) {
			return nil, fmt.Errorf("%s: a block's path must be inside the repository", where)
		}
		cur, seen := files[b.path]
		if !seen {
			var err error
			cur, err = os.ReadFile(filepath.Join(root, b.path))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if b.into != (err == nil) {
				if b.into {
					return nil, fmt.Errorf("%s: into= adds lines to a file of the tree, and there is none: make it a file= block", where)
				}
				return nil, fmt.Errorf("%s: file= makes a new file, and the tree has one: add lines to it with into=", where)
			}
		}
		if !b.into {
			if seen {
				return nil, fmt.Errorf("%s: a second file= block for the same file", where)
			}
			files[b.path] = []byte(b.code)
			continue
		}
		anchor, add, _ := strings.Cut(b.code, "\n")
		text := "\n" + string(cur)
		if n := strings.Count(text, "\n"+anchor+"\n"); n != 1 {
			return nil, fmt.Errorf("%s: the block's first line %q must be a line of %s exactly once, found %d: bring the guide up to date with the file", where, anchor, b.path, n)
		}
		at := strings.Index(text, "\n"+anchor+"\n") + len(anchor) + 2
		files[b.path] = []byte(text[1:at] + add + text[at:])
	}
	return files, nil
}

// overlay writes the blocks' files into dir and returns go's -overlay file that lays
// them over the tree at root: go builds them where they would be, and nothing is written
// into the tree.
func overlay(root, dir string, blocks []guideBlock) (string, error) {
	files, err := guideFiles(root, blocks)
	if err != nil {
		return "", err
	}
	replace := map[string]string{}
	for rel, data := range files {
		tmp := filepath.Join(dir, fmt.Sprintf("%d-%s", len(replace), filepath.Base(rel)))
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return "", err
		}
		replace[filepath.Join(root, rel)] = tmp
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "overlay.json")
	return path, os.WriteFile(path, b, 0o644)
}

// execIn runs a program in dir with the module cache only (GOPROXY=off: the guide's code
// needs nothing beside the module), and gives its output with any error. A test that
// times out stops it as the user would, with SIGINT: the qual binary then ends its row and
// removes what it started.
func execIn(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	if d, ok := t.Deadline(); ok {
		// The guide's go test would have go's default 10 minutes: on a loaded host (load
		// 30 on 2 cores, docs/ci.md) its row takes longer. It gets this test's own time,
		// less a margin to write its evidence in.
		left := max(time.Until(d)-2*time.Minute, time.Minute).Round(time.Second)
		cmd.Env = append(cmd.Env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -timeout="+left.String()))
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// repoRoot is the folder of go.mod above the test's folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		require.NotEqual(t, dir, filepath.Dir(dir), "no go.mod above the test's folder")
	}
}

// familyTests builds the guide's family's tests over the tree and runs them. Their
// folder exists only in the overlay, so the binary runs in a temporary folder (go test
// would run it, and vet, in the package's folder).
func familyTests(t *testing.T, root string, blocks []guideBlock) (string, error) {
	t.Helper()
	dir := t.TempDir()
	ov, err := overlay(root, dir, blocks)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "family.test")
	if out, err := execIn(t, root, "go", "test", "-c", "-vet=off", "-overlay", ov, "-o", bin, "./"+examplePkg); err != nil {
		return out, fmt.Errorf("build the family's tests: %w", err)
	}
	return execIn(t, dir, bin, "-test.v", "-test.count=1")
}

// without is the blocks with the one line of path's block that contains s left out, or
// with path's blocks left out when s is "".
func without(t *testing.T, blocks []guideBlock, path, s string) []guideBlock {
	t.Helper()
	var out []guideBlock
	found := 0
	for _, b := range blocks {
		if b.path != path {
			out = append(out, b)
			continue
		}
		found++
		if s == "" {
			continue
		}
		lines := strings.Split(b.code, "\n")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, s) })
		require.GreaterOrEqual(t, i, 0, "%s has no line with %q", path, s)
		require.Equal(t, 1, strings.Count(b.code, s), "%s has more than one line with %q", path, s)
		b.code = strings.Join(slices.Delete(lines, i, i+1), "\n")
		out = append(out, b)
	}
	require.Positive(t, found, "the guide has no block for %s", path)
	return out
}

// The guide's family is real code: its blocks build over the tree, its tests pass, and
// they fail when the guide drops a piece the contract requires. Without -short its row
// runs every stage as a process and its evidence checks, with the checker the guide's
// families/all line links it into, and fails without that line.
func TestGuideFamily(t *testing.T) {
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, guidePath))
	require.NoError(t, err)
	blocks, err := guideBlocks(string(md))
	require.NoError(t, err)
	var paths []string
	for _, b := range blocks {
		paths = append(paths, b.path)
	}
	for _, want := range []string{examplePkg + "/family.go", examplePkg + "/rules.go", examplePkg + "/family_test.go",
		"families/all/all.go", "qual/example_test.go", "qual/tables_test.go"} {
		require.Contains(t, paths, want, "the guide gives %s", want)
	}

	files, err := guideFiles(root, blocks)
	require.NoError(t, err)
	for rel, data := range files {
		if !strings.HasSuffix(rel, ".go") {
			continue
		}
		got, err := format.Source(data)
		if assert.NoError(t, err, rel) {
			assert.Equal(t, string(got), string(data), "%s as the guide makes it is not gofmt-clean", rel)
		}
	}

	out, err := familyTests(t, root, blocks)
	require.NoError(t, err, "the guide's family's tests:\n%s", out)
	assert.Contains(t, out, "--- PASS: TestConformance")

	for name, c := range map[string]struct {
		blocks []guideBlock
		want   string
	}{
		"without Identity": {without(t, blocks, examplePkg+"/family.go", "Identity:"), "Spec.Identity needs a Path and a Check"},
		"without rules.go": {without(t, blocks, examplePkg+"/rules.go", ""), `undefined: Rules`},
	} {
		out, err := familyTests(t, root, c.blocks)
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s: the family's tests build and fail:\n%s", name, out)
		assert.Contains(t, out, c.want, name)
		assert.Regexp(t, `--- FAIL: TestConformance|undefined: Rules`, out, name)
	}

	t.Run("row", func(t *testing.T) {
		if testing.Short() {
			t.Skip("builds qual and runs the guide's row with AIPerf (about 45 s): make test runs it")
		}
		guideRow(t, root, blocks)
	})
}

// guideRow follows the guide literally, as a newcomer does: in a fresh clone of the tree
// (its uncommitted changes committed there, so the clone is the tree under test), after
// `make setup`, it writes the guide's files and runs the guide's last command block line
// by line, the row and `checkevidence` inside the clone included, so the checker holds
// the row to the clone's commit and its recorded changes, as it does for the user. Then,
// with the families/all line taken back, the checker fails the row on its backend.
func guideRow(t *testing.T, root string, blocks []guideBlock) {
	clone := cloneTree(t, root)
	files, err := guideFiles(clone, blocks)
	require.NoError(t, err)
	for rel, data := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(clone, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(clone, rel), data, 0o644))
	}
	out, err := execIn(t, clone, "make", "setup")
	require.NoError(t, err, "make setup in the clone:\n%s", out)

	md, err := os.ReadFile(filepath.Join(root, guidePath))
	require.NoError(t, err)
	lines := lastBashBlock(string(md))
	require.Len(t, lines, 3, "the guide ends with the family's tests, the row and the checker")
	for _, line := range lines {
		out, err = execIn(t, clone, "bash", "-c", line)
		require.NoError(t, err, "the guide's %q in a fresh clone:\n%s", line, out)
	}
	assert.Contains(t, out, "ok: 1 row(s)", "the checker re-derives the guide's row")

	found, _ := filepath.Glob(filepath.Join(clone, "evidence", "*", exampleRow, "results.json"))
	found = slices.DeleteFunc(found, func(p string) bool { return strings.Contains(p, "/latest/") }) // the link to the run
	require.Len(t, found, 1, "one results.json of the row")
	var res schema.Result
	b, err := os.ReadFile(found[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, schema.StatusSmoke, res.Status, res.Reason)
	assert.Equal(t, "example", res.Checkpoint.Backend)
	assert.Equal(t, "process", res.Runtime)
	require.NotEmpty(t, res.Stages)
	for _, st := range res.Stages {
		assert.Equal(t, schema.Pass, st.Status, "stage %s: %s", st.Name, st.Error)
	}

	out, err = execIn(t, clone, "git", "checkout", "--", "families/all/all.go")
	require.NoError(t, err, out)
	out, err = execIn(t, clone, "bash", "-c", lines[len(lines)-1])
	assert.Error(t, err, "without the families/all line:\n%s", out)
	assert.Contains(t, out, `checkpoint.backend: evidence says a backend whose evidence rules the checker knows`)
}

// lastBashBlock is the command lines of the guide's last bash block, comments dropped.
func lastBashBlock(md string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch t := strings.TrimSpace(l); {
		case t == "```bash":
			in, lines = true, nil
		case in && t == "```":
			in = false
		case in && t != "":
			if i := strings.Index(t, " #"); i >= 0 {
				t = strings.TrimSpace(t[:i])
			}
			lines = append(lines, t)
		}
	}
	return lines
}

// cloneTree is a fresh clone of root's repository whose one new commit holds root's
// tracked and untracked (not ignored) files as they are now: the tree under test, clean.
func cloneTree(t *testing.T, root string) string {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "qualkit")
	git := func(dir string, args ...string) string {
		out, err := execIn(t, dir, "git", append([]string{"-c", "user.name=qualkit", "-c", "user.email=qualkit@localhost"}, args...)...)
		require.NoError(t, err, "git %s:\n%s", strings.Join(args, " "), out)
		return out
	}
	git(root, "clone", "-q", root, clone)
	for _, rel := range strings.Split(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00") {
		if rel == "" {
			continue
		}
		src, dst := filepath.Join(root, rel), filepath.Join(clone, rel)
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			os.Remove(dst) // deleted in the tree
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		os.Remove(dst)
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(src)
			require.NoError(t, err)
			require.NoError(t, os.Symlink(target, dst))
			continue
		}
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst, b, fi.Mode().Perm()))
	}
	git(clone, "add", "-A")
	git(clone, "commit", "-q", "--allow-empty", "-m", "the tree under test")
	return clone
}

// A block the test cannot place where the guide says is an error naming the block and
// what to do, never a file put somewhere else.
func TestGuideBlocksRefuseWhatTheyCannotPlace(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.go"), []byte("package a\n\nvar x = []int{\n}\n"), 0o644))
	place := func(md string) (map[string][]byte, error) {
		blocks, err := guideBlocks(md)
		if err != nil {
			return nil, err
		}
		return guideFiles(root, blocks)
	}
	files, err := place("text\n```go into=a.go\nvar x = []int{\n\t1,\n```\n\n```go file=b/b.go\npackage b\n```\n")
	require.NoError(t, err)
	assert.Equal(t, "package a\n\nvar x = []int{\n\t1,\n}\n", string(files["a.go"]))
	assert.Equal(t, "package b\n", string(files["b/b.go"]))

	for md, want := range map[string]string{
		"```go into=a.go\nvar y = 1\n\t2,\n```\n":                            `docs/adding-a-family.md:1 (a.go): the block's first line "var y = 1" must be a line of a.go exactly once, found 0`,
		"```go file=a.go\npackage a\n```\n":                                  "file= makes a new file, and the tree has one: add lines to it with into=",
		"```go into=c.go\npackage c\n```\n":                                  "into= adds lines to a file of the tree, and there is none",
		"```go file=../x.go\npackage x\n```\n":                               "a block's path must be inside the repository",
		"```go file=b.go\npackage b\n```\n```go file=b.go\n":                 "docs/adding-a-family.md:4: the block is never closed",
		"```go file=b.go\npackage b\n```\n```go file=b.go\npackage b\n```\n": "a second file= block for the same file",
	} {
		_, err := place(md)
		assert.ErrorContains(t, err, want, md)
	}
}
