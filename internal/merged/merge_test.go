package merged

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// fakeShard lays out what Merge reads of a shard (`make shard`'s folder): run.json, one
// row's row.md and results.json, SHA256SUMS and junit.xml. The checker's own tests merge
// real runs; these pin the merge's rules for correctness-only shards.
func fakeShard(t *testing.T, root, name, commit string, correctnessOnly bool, row string, res map[string]any) Input {
	t.Helper()
	dir := filepath.Join(root, "shard-"+name)
	runID := "20261204T000000Z-1-" + name
	run := filepath.Join(dir, runID)
	require.NoError(t, os.MkdirAll(filepath.Join(run, row), 0o755))
	write := func(p string, v any) {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	write(filepath.Join(run, "run.json"), schema.RunInfo{RunID: runID, Started: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), HarnessCommit: commit, Rows: []string{row}, CorrectnessOnly: correctnessOnly})
	write(filepath.Join(run, row, "results.json"), res)
	md := "| checkpoint | status |\n|---|---|\n| " + row + " | " + res["status"].(string) + " |\n"
	require.NoError(t, os.WriteFile(filepath.Join(run, row, "row.md"), []byte(md), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(run, SumsFile), []byte(name+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, JUnitFile), []byte(`<testsuites tests="1" failures="0" errors="0" time="1.0"><testsuite name="`+name+`"></testsuite></testsuites>`), 0o644))
	in, err := ReadInput(dir)
	require.NoError(t, err)
	return in
}

var (
	hardwareLimit = map[string]any{"status": schema.StatusFailed, "failure_kind": schema.KindHardware}
	verified      = map[string]any{"status": schema.StatusCorrectnessOnly, "correctness": map[string]any{"executed": 1, "skipped": 0}}
)

func matrixFile(t *testing.T, dir string, rows ...string) string {
	t.Helper()
	var inc []string
	for _, r := range rows {
		inc = append(inc, `{"name": "`+r+`"}`)
	}
	p := filepath.Join(dir, "matrix.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"created": "2026-12-01T00:00:00Z", "matrix": {"include": [`+strings.Join(inc, ", ")+`]}}`), 0o644))
	return p
}

func pass(string, string) error { return nil }

// A row that met a hardware limit in its shard, and a correctness-only run of it: the
// merged run keeps both, the row stays failed and says where its case was verified.
func TestCorrectnessOnlyShardBesideAHardwareLimit(t *testing.T) {
	tmp := t.TempDir()
	pub := fakeShard(t, tmp, "qwen", "abc", false, "qwen", hardwareLimit)
	ver := fakeShard(t, tmp, "qwen-local", "abc", true, "qwen", verified)
	out := filepath.Join(tmp, "merged")
	m, err := Merge(out, matrixFile(t, tmp, "qwen"), []Input{pub, ver}, pass)
	require.NoError(t, err)
	assert.Equal(t, []string{"qwen"}, m.Rows, "the correctness-only shard covers no row")
	pr, err := os.ReadFile(filepath.Join(out, PRFile))
	require.NoError(t, err)
	assert.Contains(t, string(pr), "| qwen | failed (hardware-limit); correctness verified separately (shard qwen-local: 1 executed, 0 skipped) | qwen |")
	assert.Contains(t, string(pr), "Local verification (the seed's rule for a hardware limit): shard qwen-local")
	summary, err := os.ReadFile(filepath.Join(out, SummaryFile))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "## Local verification: shard qwen-local")
	assert.Contains(t, string(summary), "| qwen | "+schema.StatusCorrectnessOnly+" |")
}

// A correctness-only run is no excuse for anything but a hardware limit, must itself
// have verified the case, and must be of the same commit.
func TestCorrectnessOnlyShardRefused(t *testing.T) {
	for _, tc := range []struct {
		name          string
		public, local map[string]any
		localCommit   string
		want          string
	}{
		{"beside a wrong answer", map[string]any{"status": schema.StatusFailed, "failure_kind": schema.KindCorrectness}, verified, "abc",
			"did not fail it as a hardware limit (failed correctness)"},
		{"beside a pass", map[string]any{"status": schema.StatusQualified}, verified, "abc", "did not fail it as a hardware limit (qualified )"},
		{"its case failed", hardwareLimit, map[string]any{"status": schema.StatusFailed}, "abc", "row qwen is failed, not correctness-verified"},
		{"another commit", hardwareLimit, verified, "def", "shard qwen-local ran commit def, shard qwen ran abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			pub := fakeShard(t, tmp, "qwen", "abc", false, "qwen", tc.public)
			ver := fakeShard(t, tmp, "qwen-local", tc.localCommit, true, "qwen", tc.local)
			out := filepath.Join(tmp, "merged")
			_, err := Merge(out, matrixFile(t, tmp, "qwen"), []Input{pub, ver}, pass)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NoDirExists(t, out)
		})
	}
}

// A shard answers the matrix it is merged under only with a run begun after that matrix
// was made: a genuine run of the same row from an earlier matrix (an earlier CI run's
// shard put in its place) is refused, and so is a matrix that does not say when it was
// made. (Signed shards' statements: the checker's tests, internal/evidencecheck.)
func TestMergeRefusesAShardOlderThanItsMatrix(t *testing.T) {
	tmp := t.TempDir()
	pub := fakeShard(t, tmp, "qwen", "c1", false, "qwen", map[string]any{"status": schema.StatusQualified})
	later := filepath.Join(tmp, "later.json")
	require.NoError(t, os.WriteFile(later, []byte(`{"created": "2026-12-05T00:00:00Z", "matrix": {"include": [{"name": "qwen"}]}}`), 0o644))
	_, err := Merge(filepath.Join(tmp, "merged"), later, []Input{pub}, pass)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shard qwen: its run 20261204T000000Z-1-qwen began 2026-12-04T00:00:00Z, before its matrix was made (2026-12-05T00:00:00Z): a run of an earlier matrix")

	undated := filepath.Join(tmp, "undated.json")
	require.NoError(t, os.WriteFile(undated, []byte(`{"matrix": {"include": [{"name": "qwen"}]}}`), 0o644))
	_, err = Merge(filepath.Join(tmp, "merged"), undated, []Input{pub}, pass)
	require.ErrorContains(t, err, "matrix: no created time")

	_, err = Merge(filepath.Join(tmp, "merged"), matrixFile(t, tmp, "qwen"), []Input{pub}, pass)
	require.NoError(t, err, "a run begun after its matrix was made")
}
