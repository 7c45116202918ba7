package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var batchPrompts = []string{"add film grain", "blur", "add film grain", "invert the colors"}

// batchItems writes one item per prompt over the same image, and returns the items file.
func batchItems(t *testing.T, img string) (string, []batchItem) {
	t.Helper()
	dir := t.TempDir()
	var items []batchItem
	var buf bytes.Buffer
	for i, p := range batchPrompts {
		it := batchItem{ID: fmt.Sprintf("req-%d", i), Image: img, Prompt: p,
			Settings: map[string]string{"size": "20x12", "seed": "42"}, Output: filepath.Join(dir, fmt.Sprintf("%d.png", i))}
		items = append(items, it)
		require.NoError(t, json.NewEncoder(&buf).Encode(it))
	}
	path := filepath.Join(dir, "items.jsonl")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path, items
}

func readBatch(t *testing.T, path string) (float64, []batchLine) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	var head map[string]float64
	require.NoError(t, json.Unmarshal([]byte(rows[0]), &head))
	var lines []batchLine
	for _, r := range rows[1:] {
		var l batchLine
		require.NoError(t, json.Unmarshal([]byte(r), &l))
		lines = append(lines, l)
	}
	return head["load_ms"], lines
}

// A batch gives, for each item, the bytes a one-shot `refedit run` gives, after one load.
func TestBatchMatchesOneShotRuns(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 10, 6)
	items, want := batchItems(t, img)
	report := filepath.Join(t.TempDir(), "report.jsonl")
	code, _, stderr := refedit(t, "run", bundle, "--batch", items, "--report", report)
	require.Equal(t, 0, code, stderr)
	load, lines := readBatch(t, report)
	assert.GreaterOrEqual(t, load, 0.0)
	require.Len(t, lines, len(want))
	for i, it := range want {
		one := filepath.Join(t.TempDir(), "one.png")
		code, _, stderr := refedit(t, "run", bundle, "--image", img, "--prompt", it.Prompt, "--size", "20x12", "--seed", "42", "--output", one)
		require.Equal(t, 0, code, stderr)
		a, _ := os.ReadFile(one)
		b, _ := os.ReadFile(it.Output)
		assert.Equal(t, a, b, "item %d (%s)", i, it.Prompt)
		assert.Equal(t, it.ID, lines[i].ID)
	}
}

// --leak-state is the broken batch of the negative control: the first item matches, the
// later ones carry the previous output and differ.
func TestBatchLeakStateChangesLaterItems(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 10, 6)
	items, _ := batchItems(t, img)
	clean, leaky := filepath.Join(t.TempDir(), "clean.jsonl"), filepath.Join(t.TempDir(), "leaky.jsonl")
	code, _, stderr := refedit(t, "run", bundle, "--batch", items, "--report", clean)
	require.Equal(t, 0, code, stderr)
	_, good := readBatch(t, clean)
	code, _, stderr = refedit(t, "run", bundle, "--batch", items, "--report", leaky, "--leak-state")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "FAULT INJECTION ON")
	_, bad := readBatch(t, leaky)
	require.Len(t, bad, len(good))
	assert.Equal(t, good[0].OutputSHA256, bad[0].OutputSHA256)
	for i := 1; i < len(good); i++ {
		assert.NotEqual(t, good[i].OutputSHA256, bad[i].OutputSHA256, "item %d", i)
	}
}

func TestBatchUsageAndInputErrors(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 10, 6)
	items, _ := batchItems(t, img)
	report := filepath.Join(t.TempDir(), "r.jsonl")
	code, _, stderr := refedit(t, "run", bundle, "--batch", items)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--batch ITEMS and --report REPORT go together")
	code, _, stderr = refedit(t, "run", bundle, "--batch", items, "--report", report, "--prompt", "blur")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "with --batch every edit's comes from ITEMS")

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"id":"x","image":"/i","prompt":"blur","output":"/o","extra":1}`+"\n"), 0o644))
	code, _, stderr = refedit(t, "run", bundle, "--batch", bad, "--report", report)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "line 1")
	require.NoError(t, os.WriteFile(bad, []byte("\n"), 0o644))
	code, _, stderr = refedit(t, "run", bundle, "--batch", bad, "--report", report)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "no items")
}
