package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

func writeRun(t *testing.T, root, id string, p50 float64) {
	t.Helper()
	writeRunAt(t, root, id, p50, time.Time{})
}

func writeRunAt(t *testing.T, root, id string, p50 float64, started time.Time, rows ...string) {
	t.Helper()
	if len(rows) == 0 {
		rows = []string{"r"}
	}
	files := map[string]any{filepath.Join(root, id, schema.RunFile): schema.RunInfo{RunID: id, Rows: rows, Started: started}}
	for _, r := range rows {
		files[filepath.Join(root, id, r, schema.ResultsFile)] = schema.Result{Row: r, Status: schema.StatusQualified, HTTP: &schema.Quantiles{P50: p50, P95: p50}}
	}
	for path, v := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
}

func TestCompareExitsOneOnARegression(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "a", 1000)
	writeRun(t, root, "b", 1000)
	writeRun(t, root, "slow", 2000)
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run([]string{"compare", "-root", root, "a", "b"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "no regression in B")
	out.Reset()
	assert.Equal(t, 1, run([]string{"compare", "-root", root, "a", filepath.Join(root, "slow")}, &out, &errb))
	assert.Contains(t, out.String(), "2 regression(s) in B", "p50 and p95")
	assert.Equal(t, 0, run([]string{"compare", "-root", root, "-band-rel", "1.5", "a", "slow"}, &out, &errb), "a wider band tolerates it")
}

func TestUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run(nil, &out, &errb))
	assert.Equal(t, 2, run([]string{"compare", "only-one"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"compare", "-root", t.TempDir(), "x", "y"}, &out, &errb))
	assert.Contains(t, errb.String(), "run.json")
	assert.Equal(t, 2, run([]string{"frobnicate"}, &out, &errb))
}

func TestListPrintsEveryRun(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "a", 1000)
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"list", "-root", root}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "| a |")
	out.Reset()
	require.Equal(t, 0, run([]string{"list", "-root", t.TempDir()}, &out, &errb))
	assert.Contains(t, out.String(), "no runs under")
}

// latest and previous are the newest and second newest runs by start time, whatever
// their ids say: here the id that sorts first started last.
func TestLatestAndPreviousResolveFromTheRunsList(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	writeRunAt(t, root, "c-oldest", 1000, t0)
	writeRunAt(t, root, "b-previous", 1000, t0.Add(time.Hour))
	writeRunAt(t, root, "a-newest", 2000, t0.Add(2*time.Hour))
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"compare", "-root", root, "previous", "latest"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "A: b-previous")
	assert.Contains(t, out.String(), "B: a-newest")
	assert.Contains(t, out.String(), "2 regression(s) in B")

	out.Reset()
	require.Equal(t, 0, run([]string{"compare", "-root", root, "c-oldest", "previous"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "B: b-previous")
}

// previous is the newest run before the latest that ran the same rows (issue 48: the
// default pair compared runs of different rows); -by-age makes the older of the two
// the baseline, so `make compare latest previous` reads as meant.
func TestPreviousRanTheSameRows(t *testing.T) {
	root := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	writeRunAt(t, root, "same-rows", 1000, t0, "r", "s")
	writeRunAt(t, root, "one-row", 1000, t0.Add(time.Hour), "r")
	writeRunAt(t, root, "newest", 2000, t0.Add(2*time.Hour), "r", "s")
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"compare", "-root", root, "previous", "latest"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "A: same-rows")
	assert.Contains(t, out.String(), "B: newest")
	assert.Contains(t, out.String(), "4 regression(s) in B")

	out.Reset()
	require.Equal(t, 1, run([]string{"compare", "-root", root, "-by-age", "latest", "previous"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "A: same-rows", "the older run is the baseline")
	assert.Contains(t, out.String(), "B: newest")

	writeRunAt(t, root, "other-rows", 1000, t0.Add(3*time.Hour), "t")
	assert.Equal(t, 2, run([]string{"compare", "-root", root, "previous", "latest"}, &out, &errb))
	assert.Contains(t, errb.String(), "previous: none of the 3 run(s) before the latest, other-rows, ran its rows (t)")
}

func TestPreviousNeedsTwoRuns(t *testing.T) {
	root := t.TempDir()
	writeRun(t, root, "only", 1000)
	var out, errb bytes.Buffer
	assert.Equal(t, 2, run([]string{"compare", "-root", root, "previous", "latest"}, &out, &errb))
	assert.Contains(t, errb.String(), "previous: "+root+" holds 1 run(s), previous needs 2")
	errb.Reset()
	assert.Equal(t, 2, run([]string{"compare", "-root", filepath.Join(root, "none"), "previous", "latest"}, &out, &errb))
	assert.Contains(t, errb.String(), "previous: evidence root:")
}
