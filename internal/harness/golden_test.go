package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from this run")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./internal/harness/ -run %s -update", t.Name())
	assert.Equal(t, string(want), string(got), "%s changed: if on purpose, run go test ./internal/harness/ -run %s -update and review the diff", path, t.Name())
}

// volatile are the keys whose values differ between runs of the same row (times, the
// test binary's hash in the cache key, whether the build's first command won the race
// with preflight's checks); the golden file holds their names, not values.
var volatile = regexp.MustCompile(`(_s|_ms|^p50|^p95|^mean.*|^wall.*|^images_per_s|^cache_key|^builder.*|^harness_commit|^fraction.*|^ratio|^physical_ratio|^start|^end|^build_early|^build_why)$`)

var cachePath = regexp.MustCompile(`bundles/[0-9a-f]{32}/`)

// normalize replaces volatile values and this run's temporary paths with placeholders.
func normalize(v any, key, root string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if sub, ok := e.(map[string]any); ok && k == "stages_s" {
				for name := range sub {
					sub[name] = "<wall_s>"
				}
				continue
			}
			x[k] = normalize(e, k, root)
		}
	case []any:
		for i, e := range x {
			x[i] = normalize(e, key, root)
		}
	case float64, bool:
		if volatile.MatchString(key) {
			return "<" + key + ">"
		}
	case string:
		if volatile.MatchString(key) {
			return "<" + key + ">"
		}
		x = strings.ReplaceAll(x, os.Args[0], "<test binary>")
		x = cachePath.ReplaceAllString(x, "bundles/<cache_key>/")
		return strings.ReplaceAll(x, root, "<root>")
	}
	return v
}

// The results.json a passing row writes, and its Markdown row: a renamed key, a lost
// field or a changed column shows up here as a diff to review.
func TestGoldenResultAndRow(t *testing.T) {
	p := newPipeline(t, false)
	s := p.start(t)
	res, err := s.Run(context.Background(), p.row("golden", ""), t.TempDir(), Reproduce(t.Name()))
	require.NoError(t, err)

	raw, err := os.ReadFile(filepath.Join(s.Evidence.Dir, "golden", schema.ResultsFile))
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(normalize(doc, "", p.root)))
	golden(t, "results.golden.json", out.Bytes())

	// The row with fixed numbers, so that formatting changes show and timing noise does not.
	res.StartupS, res.ImagesPerS = 1.5, 0.25
	res.HTTP.P50, res.HTTP.P95, res.Task.P50, res.Task.P95 = 4012.3, 4200.9, 3900.1, 4100
	res.Bundle.SHA256 = strings.Repeat("ab", 32)
	golden(t, "row.golden.md", []byte(schema.RowMarkdownHeader()+MarkdownRow(res)))
}
