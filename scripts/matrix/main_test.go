package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

func est(s float64) *float64 { return &s }

func names(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func TestSortEntries(t *testing.T) {
	cases := []struct {
		name string
		in   []Entry
		want []string
	}{
		{
			name: "GPU rows first, then unknown estimates, then longest first, ties by name",
			in: []Entry{
				{Name: "cpu-short", EstimateS: est(10)},
				{Name: "cpu-unknown"},
				{Name: "gpu-short", GPUs: 1, EstimateS: est(100)},
				{Name: "cpu-long", EstimateS: est(500)},
				{Name: "gpu-unknown-b", GPUs: 2},
				{Name: "gpu-long", GPUs: 1, EstimateS: est(3000)},
				{Name: "gpu-unknown-a", GPUs: 8},
				{Name: "cpu-tie-b", EstimateS: est(10)},
			},
			want: []string{"gpu-unknown-a", "gpu-unknown-b", "gpu-long", "gpu-short",
				"cpu-unknown", "cpu-long", "cpu-short", "cpu-tie-b"},
		},
		{
			name: "a GPU row with a short estimate still goes before a long CPU row",
			in:   []Entry{{Name: "cpu", EstimateS: est(9999)}, {Name: "gpu", GPUs: 1, EstimateS: est(1)}},
			want: []string{"gpu", "cpu"},
		},
		{
			name: "all unknown: by name",
			in:   []Entry{{Name: "c"}, {Name: "a"}, {Name: "b"}},
			want: []string{"a", "b", "c"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sortEntries(c.in)
			assert.Equal(t, c.want, names(c.in))
		})
	}
}

func TestRunnerClass(t *testing.T) {
	cases := []struct {
		row  schema.RowDetails
		want string
	}{
		{schema.RowDetails{}, "cpu"},
		{schema.RowDetails{Container: true}, "cpu-docker"},
		{schema.RowDetails{GPUs: 1}, "gpu-1x"},
		{schema.RowDetails{GPUs: 1, GPUMemoryBytes: 75 << 30, Container: true}, "gpu-1x75"},
		{schema.RowDetails{GPUs: 1, GPUMemoryBytes: 80 << 30}, "gpu-1x80"},
		{schema.RowDetails{GPUs: 1, GPUMemoryBytes: 80e9}, "gpu-1x75"}, // 74.5 GiB rounds up
		{schema.RowDetails{GPUs: 1, GPUMemoryBytes: 1}, "gpu-1x1"},
		{schema.RowDetails{GPUs: 2, GPUMemoryBytes: 40 << 30}, "gpu-2x40"},
		{schema.RowDetails{GPUs: 8, GPUMemoryBytes: 141 << 30}, "gpu-8x141"},
		{schema.RowDetails{GPUs: 8}, "gpu-8x"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, RunnerClass(c.row), "%+v", c.row)
	}
}

func TestTimeoutMinutes(t *testing.T) {
	cases := []struct {
		name string
		row  schema.RowDetails
		want int
	}{
		{"the reference row: 5+5+1 + 6*(1+1) + 5 + 3*1 + 10", schema.RowDetails{Requests: 6,
			Deadlines: schema.RowDeadlines{Build: 300, Correctness: 300, Ready: 60, Request: 60, Native: 60}}, 41},
		{"the Qwen row: 120+60+30 + 6*(10+10) + 5 + 3*10 + 10", schema.RowDetails{Requests: 6,
			Deadlines: schema.RowDeadlines{Build: 7200, Correctness: 3600, Ready: 1800, Request: 600, Native: 600}}, 375},
		{"a part of a minute rounds up", schema.RowDetails{Requests: 1,
			Deadlines: schema.RowDeadlines{Build: 1, Correctness: 0, Ready: 0, Request: 0.5, Native: 0.5}}, 16},
		{"whole minutes stay", schema.RowDetails{Requests: 0, Deadlines: schema.RowDeadlines{Build: 120}}, 17},
		{"every deadline at the harness default (30 min)", schema.RowDetails{Requests: 2,
			Deadlines: schema.RowDeadlines{Build: 1800, Correctness: 1800, Ready: 1800, Request: 1800, Native: 1800}}, 90 + 120 + 5 + 90 + 10},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, TimeoutMinutes(c.row), c.name)
	}
}

func TestRunPatternSelectsTheRowWhole(t *testing.T) {
	assert.Equal(t, `^TestRefEdit$/^refedit-v1$`, RunPattern("TestRefEdit", "refedit-v1"))
	assert.Equal(t, `^TestQwenImageEdit$/^qwen-image\.edit$`, RunPattern("TestQwenImageEdit", "qwen-image.edit"))
}

var testRows = []schema.RowDetails{
	{Row: "refedit-v1", Test: "TestRefEdit", Requests: 6,
		Deadlines: schema.RowDeadlines{Build: 300, Correctness: 300, Ready: 60, Request: 60, Native: 60}},
	{Row: "qwen-image-edit-2511", Test: "TestQwenImageEdit", GPUs: 1, GPUMemoryBytes: 75 << 30, Container: true, Requests: 6, Hardware: true,
		Deadlines: schema.RowDeadlines{Build: 7200, Correctness: 3600, Ready: 1800, Request: 600, Native: 600}},
	{Row: "qwen-double-b64-body", Test: "TestTRTMCDouble", Container: true, Requests: 6,
		Deadlines: schema.RowDeadlines{Build: 300, Correctness: 300, Ready: 120, Request: 60, Native: 60}},
	{Row: "qwen-double-file-records", Test: "TestTRTMCDouble", Container: true, Requests: 6,
		Deadlines: schema.RowDeadlines{Build: 300, Correctness: 300, Ready: 120, Request: 60, Native: 60}},
}

func TestSelectRows(t *testing.T) {
	cases := []struct {
		run, skip string
		want      []string
	}{
		{"", "", []string{"refedit-v1", "qwen-image-edit-2511", "qwen-double-b64-body", "qwen-double-file-records"}},
		{RunPattern("TestTRTMCDouble", "qwen-double-b64-body"), "", []string{"qwen-double-b64-body"}},
		{"^TestTRTMCDouble$", "", []string{"qwen-double-b64-body", "qwen-double-file-records"}},
		{"Qwen", "", []string{"qwen-image-edit-2511"}}, // the headline selects the checkpoint row alone
		{"", "^TestQwenImageEdit$", []string{"refedit-v1", "qwen-double-b64-body", "qwen-double-file-records"}},
		{"TestTRTMCDouble/records", "", []string{"qwen-double-file-records"}},
		// A pattern deeper than a row (one stage) still selects the row: the unit of the
		// matrix is a whole row.
		{"^TestRefEdit$/^refedit-v1$/^build$", "", []string{"refedit-v1"}},
	}
	for _, c := range cases {
		got, err := selectRows(testRows, c.run, c.skip)
		require.NoError(t, err, "-run %q -skip %q", c.run, c.skip)
		var rows []string
		for _, r := range got {
			rows = append(rows, r.Row)
		}
		assert.Equal(t, c.want, rows, "-run %q -skip %q", c.run, c.skip)
	}
}

func TestSelectRowsErrors(t *testing.T) {
	_, err := selectRows(testRows, "^TestNoSuch$", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `-run "^TestNoSuch$"`, "the error names the pattern")
	assert.Contains(t, err.Error(), "TestRefEdit/refedit-v1", "and lists the rows there are")

	_, err = selectRows(testRows, "", "Test")
	assert.ErrorContains(t, err, `-skip "Test" selects no row`)

	_, err = selectRows(testRows, "[", "")
	assert.ErrorContains(t, err, `-run "["`)

	dup := append(append([]schema.RowDetails{}, testRows...), schema.RowDetails{Row: "refedit-v1", Test: "TestOther"})
	_, err = selectRows(dup, "", "")
	assert.ErrorContains(t, err, "TestRefEdit/refedit-v1 and TestOther/refedit-v1 share a name")
	_, err = selectRows(dup, "^TestOther$", "")
	assert.NoError(t, err, "selecting one of the two is fine")
}

func TestEntries(t *testing.T) {
	es := entries(testRows, map[string]Estimate{
		"refedit-v1":           {WallS: 18.4, From: "r2/refedit-v1/results.json"},
		"qwen-double-b64-body": {WallS: 60, From: "r1/qwen-double-b64-body/results.json"},
	}, time.Date(2026, 12, 6, 4, 30, 0, 0, time.UTC))
	assert.Equal(t, []string{"qwen-image-edit-2511", "qwen-double-file-records", "qwen-double-b64-body", "refedit-v1"}, names(es))
	assert.Equal(t, Entry{
		Name: "qwen-image-edit-2511", Test: "TestQwenImageEdit", Run: `^TestQwenImageEdit$/^qwen-image-edit-2511$`,
		Command: `make shard RUN='^TestQwenImageEdit$/^qwen-image-edit-2511$' SHARD=qwen-image-edit-2511 MATRIX_CREATED=2026-12-06T04:30:00Z`,
		Runner:  "gpu-1x75", GPUs: 1, TimeoutMinutes: 375,
	}, es[0])
	ref := es[3]
	assert.Equal(t, "cpu", ref.Runner)
	assert.Equal(t, "cpu-docker", es[1].Runner)
	require.NotNil(t, ref.EstimateS)
	assert.Equal(t, 18.4, *ref.EstimateS)
	assert.Equal(t, "r2/refedit-v1/results.json", ref.EstimateFrom)

	// An entry without an estimate prints null and an empty source.
	b, err := json.Marshal(es[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"estimate_s":null,"estimate_from":""`)
}

// writeRun writes a run folder: run.json (none when finished is zero) and a
// results.json per row with that wall time.
func writeRun(t *testing.T, root, id string, finished time.Time, walls map[string]float64) {
	t.Helper()
	dir := filepath.Join(root, id)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	if !finished.IsZero() {
		writeJSON(t, filepath.Join(dir, schema.RunFile), schema.RunInfo{RunID: id, Finished: finished})
	}
	for row, wall := range walls {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, row), 0o755))
		writeJSON(t, filepath.Join(dir, row, schema.ResultsFile), schema.Result{RunID: id, Row: row,
			Stages:     []schema.StageResult{{Name: schema.StagePreflight, Status: schema.Pass}, {Name: schema.StageBuild, Status: schema.Pass}},
			TimeBudget: &schema.TimeBudget{WallS: wall}})
	}
}

func writeJSON(t *testing.T, file string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, b, 0o644))
}

func TestFindEstimatesPicksTheNewestRun(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		setup    func(t *testing.T, root string)
		wantWall float64
		wantFrom string
	}{
		{
			name: "the run that finished last, though its folder name sorts first",
			setup: func(t *testing.T, root string) {
				writeRun(t, root, "20261203T090000Z-2", t0.Add(time.Hour), map[string]float64{"refedit-v1": 20})
				writeRun(t, root, "20261203T080000Z-1", t0.Add(2*time.Hour), map[string]float64{"refedit-v1": 30})
			},
			wantWall: 30, wantFrom: "20261203T080000Z-1/refedit-v1/results.json",
		},
		{
			name: "no run.json: by run id",
			setup: func(t *testing.T, root string) {
				writeRun(t, root, "20261203T080000Z-1", time.Time{}, map[string]float64{"refedit-v1": 20})
				writeRun(t, root, "20261203T090000Z-2", time.Time{}, map[string]float64{"refedit-v1": 25})
			},
			wantWall: 25, wantFrom: "20261203T090000Z-2/refedit-v1/results.json",
		},
		{
			name: "a finished run beats a folder without run.json",
			setup: func(t *testing.T, root string) {
				writeRun(t, root, "20261203T080000Z-1", t0, map[string]float64{"refedit-v1": 20})
				writeRun(t, root, "20261203T090000Z-2", time.Time{}, map[string]float64{"refedit-v1": 25})
			},
			wantWall: 20, wantFrom: "20261203T080000Z-1/refedit-v1/results.json",
		},
		{
			name: "a newer run that stopped the row before its last stage is no measure of it",
			setup: func(t *testing.T, root string) {
				writeRun(t, root, "20261203T080000Z-1", t0, map[string]float64{"refedit-v1": 20})
				writeRun(t, root, "20261203T090000Z-2", t0.Add(time.Hour), nil)
				require.NoError(t, os.MkdirAll(filepath.Join(root, "20261203T090000Z-2", "refedit-v1"), 0o755))
				writeJSON(t, filepath.Join(root, "20261203T090000Z-2", "refedit-v1", schema.ResultsFile), schema.Result{Row: "refedit-v1",
					Stages:     []schema.StageResult{{Name: schema.StagePreflight, Status: schema.Fail}, {Name: schema.StageBuild, Status: schema.NotRun}},
					TimeBudget: &schema.TimeBudget{WallS: 0.5}})
			},
			wantWall: 20, wantFrom: "20261203T080000Z-1/refedit-v1/results.json",
		},
		{
			name: "evidence/latest is not a run of its own, and results.json without a time budget is no estimate",
			setup: func(t *testing.T, root string) {
				writeRun(t, root, "20261203T080000Z-1", t0, map[string]float64{"refedit-v1": 20})
				writeRun(t, root, "20261203T090000Z-2", t0.Add(time.Hour), nil)
				require.NoError(t, os.MkdirAll(filepath.Join(root, "20261203T090000Z-2", "refedit-v1"), 0o755))
				writeJSON(t, filepath.Join(root, "20261203T090000Z-2", "refedit-v1", schema.ResultsFile), schema.Result{Row: "refedit-v1"})
				require.NoError(t, os.Symlink("20261203T080000Z-1", filepath.Join(root, "latest")))
				require.NoError(t, os.WriteFile(filepath.Join(root, "junit.xml"), []byte("<x/>"), 0o644))
			},
			wantWall: 20, wantFrom: "20261203T080000Z-1/refedit-v1/results.json",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			c.setup(t, root)
			got, err := findEstimates(root)
			require.NoError(t, err)
			assert.Equal(t, map[string]Estimate{"refedit-v1": {WallS: c.wantWall, From: c.wantFrom}}, got)
		})
	}
}

func TestFindEstimatesWithoutEvidence(t *testing.T) {
	got, err := findEstimates(filepath.Join(t.TempDir(), "absent"))
	require.NoError(t, err)
	assert.Empty(t, got)

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "r1", "refedit-v1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "r1", "refedit-v1", schema.ResultsFile), []byte("{"), 0o644))
	_, err = findEstimates(root)
	assert.ErrorContains(t, err, filepath.Join("r1", "refedit-v1", schema.ResultsFile), "a broken results.json is named")
}

const tablesJSON = `[
  {"package": "qualkit/qual", "test": "TestRefEdit", "hardware": false, "rows": ["refedit-v1"], "stages": ["preflight"],
   "details": [{"row": "refedit-v1", "test": "TestRefEdit", "gpus": 0, "gpu_memory_bytes": 0, "compute_capability": "", "container": false,
     "deadlines_s": {"build": 300, "correctness": 300, "ready": 60, "request": 60, "native": 60}, "requests": 6, "hardware": false}]},
  {"package": "qualkit/qual", "test": "TestQwenImageEdit", "hardware": true, "rows": ["qwen-image-edit-2511"], "stages": ["preflight"],
   "details": [{"row": "qwen-image-edit-2511", "test": "TestQwenImageEdit", "gpus": 1, "gpu_memory_bytes": 80530636800, "compute_capability": "8.0", "container": true,
     "deadlines_s": {"build": 7200, "correctness": 3600, "ready": 1800, "request": 600, "native": 600}, "requests": 6, "hardware": true}]}
]`

func TestRunPrintsTheMatrix(t *testing.T) {
	dir := t.TempDir()
	tables := filepath.Join(dir, "tables.json")
	require.NoError(t, os.WriteFile(tables, []byte(tablesJSON), 0o644))
	evidence := filepath.Join(dir, "evidence")
	writeRun(t, evidence, "20261203T080000Z-1", time.Now(), map[string]float64{"refedit-v1": 18.5})

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-tables", tables, "-evidence", evidence}, &stdout, &stderr), stderr.String())
	var m Matrix
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &m))
	assert.Equal(t, []string{"qwen-image-edit-2511", "refedit-v1"}, names(m.Matrix.Include))
	assert.WithinDuration(t, time.Now(), m.Created, time.Minute, "the matrix says when it was made")
	assert.Contains(t, m.Matrix.Include[0].Command, " MATRIX_CREATED="+m.Created.Format(time.RFC3339), "and each job's command signs it")
	assert.Equal(t, 18.5, *m.Matrix.Include[1].EstimateS)

	// -run selects one row; -out writes the file.
	out := filepath.Join(dir, "matrix.json")
	stdout.Reset()
	require.Equal(t, 0, run([]string{"-tables", tables, "-evidence", evidence, "-run", "^TestRefEdit$/^refedit-v1$", "-out", out}, &stdout, &stderr), stderr.String())
	assert.Empty(t, stdout.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, []string{"refedit-v1"}, names(m.Matrix.Include))

	// No row matched: exit 1, naming the pattern.
	stderr.Reset()
	assert.Equal(t, 1, run([]string{"-tables", tables, "-run", "^TestNoSuch$"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `-run "^TestNoSuch$"`)
}

func TestRunInputErrors(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"-tables", filepath.Join(dir, "absent.json")}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "make tables")

	old := filepath.Join(dir, "old.json")
	require.NoError(t, os.WriteFile(old, []byte(`[{"test": "TestRefEdit", "rows": ["refedit-v1"], "stages": []}]`), 0o644))
	stderr.Reset()
	assert.Equal(t, 1, run([]string{"-tables", old}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "older qual.test")

	stderr.Reset()
	assert.Equal(t, 2, run([]string{"stray"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `unexpected argument "stray"`)

	// A matrix left untracked in a work tree would make its next run dirty.
	tree := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", tree).Run())
	stderr.Reset()
	assert.Equal(t, 2, run([]string{"-out", filepath.Join(tree, "matrix.json")}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "make every run of it dirty")
	assert.NoFileExists(t, filepath.Join(tree, "matrix.json"))
}

// resultTime reads schema.Result's own keys: a key renamed there cannot read as zero here.
func TestResultTimeReadsTheSchemaKeys(t *testing.T) {
	b, err := json.Marshal(schema.Result{Row: "refedit-v1", Stages: []schema.StageResult{{Name: schema.StagePreflight, Status: schema.Pass}},
		TimeBudget: &schema.TimeBudget{WallS: 18.4}})
	require.NoError(t, err)
	var got resultTime
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, "refedit-v1", got.Row)
	assert.True(t, got.ranWhole())
	require.NotNil(t, got.TimeBudget)
	assert.Equal(t, 18.4, got.TimeBudget.WallS)
}
