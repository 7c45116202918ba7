package prsummary_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/merged"
	"qualkit/internal/prsummary"
)

// A merged run's index.html in the browser (see index_chromium_test.go): two committed
// runs merged as two unsigned shards, three rows, each with its stage strip, timing
// table, hardware and pictures, linked into the shards' folders.
func TestIndexInChromiumMerged(t *testing.T) {
	bin := prsummary.Chromium(t)
	tmp := t.TempDir()
	var inputs []merged.Input
	for _, s := range []struct{ name, kind, junit string }{{"a", "qualified", "junit-qualified.xml"}, {"b", "second", "junit-second.xml"}} {
		src := prsummary.CommittedRunPath(t, s.kind)
		dir := filepath.Join(tmp, "shard-"+s.name)
		require.NoError(t, os.CopyFS(filepath.Join(dir, filepath.Base(src)), os.DirFS(src)))
		b, err := os.ReadFile(filepath.Join("..", "evidencecheck", "testdata", s.junit))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, merged.JUnitFile), b, 0o644))
		in, err := merged.ReadInput(dir)
		require.NoError(t, err)
		inputs = append(inputs, in)
	}
	matrix := filepath.Join(tmp, "matrix.json")
	require.NoError(t, os.WriteFile(matrix, []byte(`{"created": "2026-12-01T00:00:00Z", "matrix": {"include": [{"name": "refedit-v1"}, {"name": "refedit-v1-second"}, {"name": "refedit-v1-beside"}]}}`), 0o644))
	out := filepath.Join(tmp, "merged")
	// The checker's verification of each shard is internal/evidencecheck's to test
	// (merged_v2_test.go); here only the page is.
	_, err := merged.Merge(out, matrix, inputs, func(string, string) error { return nil })
	require.NoError(t, err)
	dom := prsummary.InBrowser(t, bin, out, merged.IndexFile,
		map[string]string{"refedit-v1": "qualified", "refedit-v1-second": "qualified", "refedit-v1-beside": "qualified"},
		filepath.Join("testdata", "browser", "index-merged.png"))
	assert.Contains(t, dom, "UNSIGNED shards: a, b (merged with UNSIGNED=1)")
	assert.Contains(t, dom, `<section id="row-refedit-v1-beside">`)
}
