package evidencecheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/merged"
)

const (
	secondRow = "refedit-v1-second"
	besideRow = "refedit-v1-beside" // ran beside secondRow in the second shard's run
)

// secondRun is the folder name of the committed second shard's run.
func secondRun(t *testing.T) string {
	t.Helper()
	return filepath.Base(testRun(t, "second"))
}

// shardCopy lays out a committed run as `make shard` writes a shard: the run folder and
// its JUnit under <tmp>/shard-<name>/.
func shardCopy(t *testing.T, name, kind, junit string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shard-"+name)
	run := runCopy(t, kind)
	require.NoError(t, os.CopyFS(filepath.Join(dir, filepath.Base(run)), os.DirFS(run)))
	b, err := os.ReadFile(filepath.Join("testdata", junit))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, merged.JUnitFile), b, 0o644))
	return dir
}

func writeMatrix(t *testing.T, rows ...string) string {
	t.Helper()
	var entries []string
	for _, r := range rows {
		entries = append(entries, `{"name": "`+r+`", "runner": "cpu"}`)
	}
	p := filepath.Join(t.TempDir(), "matrix.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"created": "2026-12-01T00:00:00Z", "matrix": {"include": [`+strings.Join(entries, ", ")+`]}}`), 0o644))
	return p
}

func inputs(t *testing.T, dirs ...string) []merged.Input {
	t.Helper()
	var out []merged.Input
	for _, d := range dirs {
		in, err := merged.ReadInput(d)
		require.NoError(t, err)
		out = append(out, in)
	}
	return out
}

// mergedRun merges the two committed qualified runs (two CPU shards of one commit).
func mergedRun(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "merged")
	_, err := merged.Merge(out, writeMatrix(t, qualifiedRow, secondRow, besideRow),
		inputs(t, shardCopy(t, "a", "qualified", "junit-qualified.xml"), shardCopy(t, "b", "second", "junit-second.xml")), Check)
	require.NoError(t, err)
	return out
}

// resumMerged rewrites the merged SHA256SUMS over every file: the forger's last step.
func resumMerged(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, merged.WriteSums(dir))
}

func TestMergedRunOfTwoShardsPasses(t *testing.T) {
	dir := mergedRun(t)
	require.True(t, IsMerged(dir))
	rep := VerifyMerged(dir)
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{qualifiedRow, besideRow, secondRow}, rep.Rows)
	assert.Greater(t, rep.Claims, 500, "both shards' claims re-derived")
	summary, err := os.ReadFile(filepath.Join(dir, merged.SummaryFile))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "| "+qualifiedRow+" |")
	assert.Contains(t, string(summary), "| "+secondRow+" |")
	junit, err := os.ReadFile(filepath.Join(dir, merged.JUnitFile))
	require.NoError(t, err)
	assert.Contains(t, string(junit), "TestMakeTestdata/refedit-v1/report")
	assert.Contains(t, string(junit), "TestMakeShardTestdata/rows/refedit-v1-second/report")
}

// A missing, duplicated or unlisted shard is refused at merge time, and nothing is written.
func TestMergeRefusesGaps(t *testing.T) {
	a := func() string { return shardCopy(t, "a", "qualified", "junit-qualified.xml") }
	b := func() string { return shardCopy(t, "b", "second", "junit-second.xml") }
	for name, tc := range map[string]struct {
		matrix []string
		shards []string
		want   string
	}{
		"missing shard":    {[]string{qualifiedRow, secondRow, besideRow, "refedit-v1-third"}, []string{a(), b()}, "matrix row refedit-v1-third: no shard ran it (missing shard)"},
		"duplicated shard": {[]string{qualifiedRow, secondRow, besideRow}, []string{a(), b(), shardCopy(t, "c", "qualified", "junit-qualified.xml")}, "matrix row refedit-v1: ran in 2 shards (a, c): duplicated"},
		"unlisted row":     {[]string{qualifiedRow, besideRow}, []string{a(), b()}, "shard b ran row refedit-v1-second, which the matrix does not list"},
		"a shard that does not check": {[]string{qualifiedRow, secondRow, besideRow}, []string{a(), func() string {
			d := b()
			editPNG(t, filepath.Join(d, secondRun(t), secondRow, "identity/01-profiling-native.png"))
			return d
		}()}, "shard b does not check"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			_, err := merged.Merge(out, writeMatrix(t, tc.matrix...), inputs(t, tc.shards...), Check)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NoDirExists(t, out, "nothing is written")
		})
	}
}

// Shards of two commits never merge.
func TestGapsOtherCommit(t *testing.T) {
	shards := []merged.Shard{{Name: "a", Commit: "c1", Rows: []string{"x"}}, {Name: "b", Commit: "c2", Rows: []string{"y"}}}
	assert.Equal(t, []string{"shard b ran commit c2, shard a ran c1: a merged run is of one commit"}, merged.Gaps([]string{"x", "y"}, shards))
}

// Each forgery of a merged run, checksums recomputed, fails with the file and the claim.
func TestMergedTamperingFails(t *testing.T) {
	shardB := filepath.Join("shards", "b", secondRun(t))
	for name, tc := range map[string]struct {
		edit func(t *testing.T, dir string)
		want string
	}{
		"a shard's PNG edited, merged sums fixed": {func(t *testing.T, dir string) {
			editPNG(t, filepath.Join(dir, shardB, secondRow, "identity/01-profiling-native.png"))
		}, shardB + "/" + secondRow + "/identity/01-profiling-native.png: sha256 (" + secondRow + "/SHA256SUMS)"},
		"a shard's PNG edited, its sums and the merged sums fixed": {func(t *testing.T, dir string) {
			editPNG(t, filepath.Join(dir, shardB, secondRow, "identity/01-profiling-native.png"))
			resum(t, filepath.Join(dir, shardB))
		}, "merged.json: shard b sha256sums_sha256"},
		"a row dropped from SUMMARY.md": {func(t *testing.T, dir string) {
			p := filepath.Join(dir, merged.SummaryFile)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			var keep []string
			for _, l := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(l, "| "+secondRow+" |") {
					keep = append(keep, l)
				}
			}
			writeFile(t, p, strings.Join(keep, "\n"))
		}, "SUMMARY.md: derived from the shards"},
		"a shard removed with merged.json rewritten": {func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "shards", "b")))
			editJSON(t, filepath.Join(dir, merged.ManifestFile), func(d map[string]any) {
				d["shards"] = d["shards"].([]any)[:1]
				d["rows"] = []any{qualifiedRow}
			})
		}, "merged.json: shards cover the matrix: evidence says every matrix row in exactly one shard, one commit, file says matrix row refedit-v1-second: no shard ran it (missing shard)"},
		"a test case renamed in junit.xml": {func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, merged.JUnitFile), `name="TestMakeShardTestdata/rows/refedit-v1-second/build"`, `name="TestMakeShardTestdata/rows/refedit-v1-second/build-renamed"`)
		}, "junit.xml: derived from the shards"},
		"another commit claimed": {func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, merged.ManifestFile), func(d map[string]any) { d["harness_commit"] = "0000000" })
		}, "merged.json: harness_commit"},
		"an extra file": {func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "shards", "notes.txt"), "added")
		}, "shards/notes.txt: exact file set"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := mergedRun(t)
			require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil {
					err = os.Chmod(p, 0o755)
				}
				return err
			}))
			tc.edit(t, dir)
			resumMerged(t, dir)
			failsWith(t, VerifyMerged(dir).Err(), tc.want)
		})
	}
}

// Two rows that ran side by side name each other; a forged lease list does not pass.
func TestLeasesOfRowsSideBySide(t *testing.T) {
	rep := Verify(runCopy(t, "second"), "")
	require.NoError(t, rep.Err())
	for name, tc := range map[string]struct {
		edit func(t *testing.T, dir string)
		want string
	}{
		"a neighbour dropped": {func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, secondRow, "results.json"), func(d map[string]any) {
				d["lease"].(map[string]any)["ran_beside"] = []any{}
			})
		}, secondRow + "/results.json: lease.ran_beside: evidence says " + besideRow + " (the rows of this run whose leases overlapped this row's), file says \"\""},
		"a neighbour invented": {func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, secondRow, "results.json"), func(d map[string]any) {
				l := d["lease"].(map[string]any)
				l["ran_beside"] = append(l["ran_beside"].([]any), map[string]any{"row": "ghost", "start": "2026-12-03T00:00:00Z"})
			})
		}, `lease.ran_beside: evidence says ` + besideRow + ` (the rows of this run whose leases overlapped this row's), file says "ghost ` + besideRow + `"`},
		"one GPU claimed by both rows at once": {func(t *testing.T, dir string) {
			for _, row := range []string{secondRow, besideRow} {
				editJSON(t, filepath.Join(dir, row, "results.json"), func(d map[string]any) {
					d["lease"].(map[string]any)["gpus"] = []any{"GPU-x"}
				})
			}
		}, "lease.gpus: evidence says GPU GPU-x held by one row at a time"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := runCopy(t, "second")
			tc.edit(t, dir)
			resum(t, dir)
			failsWith(t, Verify(dir, "").Err(), tc.want)
		})
	}
}
