package qual

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the README and the docs leads to a file of the repository: the
// README is a front page whose topics live under docs/, and a moved file must not leave a
// dead link behind.
func TestDocsLinksResolve(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	families, err := filepath.Glob(filepath.Join(root, "families", "*", "README.md"))
	require.NoError(t, err)
	files := append(append([]string{filepath.Join(root, "README.md")}, docs...), families...)
	require.Greater(t, len(files), 5)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.HasPrefix(target, "http") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			_, err := os.Stat(filepath.Join(filepath.Dir(f), target))
			assert.NoError(t, err, "%s links to %s", f, m[1])
		}
	}
	front, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	assert.Less(t, strings.Count(string(front), "\n"), 150, "the README is a front page: topics go under docs/")
}

// The README's fault table says what each injected fault did, measured by a test: every
// row names a test of this package, and every fault test is in the table.
func TestFaultTableNamesItsTests(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	rows, err := readmeTable(string(b), "## When a run is stopped, or the host fails")
	require.NoError(t, err)
	require.Greater(t, len(rows), 1)
	src := ""
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		src += string(b)
	}
	named := map[string]bool{}
	for _, r := range rows[1:] {
		cells := strings.Split(r, " | ")
		test := cells[len(cells)-1]
		named[test] = true
		assert.Contains(t, src, "\nfunc "+test+"(t *testing.T)", "README fault table row %q names a test this package does not have", cells[0])
	}
	for _, test := range []string{"TestStoppedRunsLeaveNothing", "TestInterruptAtEveryStage", "TestSecondSignalForcesTheExit",
		"TestEngineRestartedMidServe", "TestDiskFullWhileWritingEvidence", "TestServerOOMKilled"} {
		assert.True(t, named[test], "%s injects a fault the README's table does not list", test)
	}
}

// docs/ci.md's matrix is the matrix of the repository's own tables (ciDocTables): one
// entry per row, in the tables' own names, so a row added or renamed there shows (a row a
// table adds only when a variable is set, TRTMC's own perf-serve row, is left out, as the
// example's command leaves it out). A table a user adds (docs/adding-a-family.md) is not
// the example's.
func TestCIDocMatrixIsTheTables(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "docs", "ci.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "The matrix of this repository's own tables")
	require.True(t, ok, "docs/ci.md has the matrix example")
	_, rest, ok = strings.Cut(rest, "```json\n")
	require.True(t, ok)
	block, _, _ := strings.Cut(rest, "```\n")
	var m struct {
		Matrix struct {
			Include []struct{ Name, Test string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(block), &m), block)
	var doc, want []string
	for _, e := range m.Matrix.Include {
		doc = append(doc, e.Test+"/"+e.Name)
	}
	for _, tb := range tables() {
		if !slices.Contains(ciDocTables, tb.name()) {
			continue
		}
		for _, c := range tb.rows {
			if c.Name != "qwen-double-trtmc-perf-serve" {
				want = append(want, tb.name()+"/"+c.Name)
			}
		}
	}
	assert.ElementsMatch(t, want, doc, "docs/ci.md's matrix: make tables && go run ./scripts/matrix -evidence \"$(mktemp -d)\" -run '^(%s)$' prints it", strings.Join(ciDocTables, "|"))
}

// ciDocTables are the tables docs/ci.md's matrix example is made of: the repository's own.
var ciDocTables = []string{"TestRefEdit", "TestQwenImageEdit", "TestReferenceSmoke", "TestReferenceSmokePool", "TestPerfServeReference", "TestTRTMCDouble"}
