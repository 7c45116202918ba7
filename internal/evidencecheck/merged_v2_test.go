package evidencecheck

import (
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/attest"
	"qualkit/internal/merged"
	"qualkit/internal/prsummary"
)

// A merged run reads like a single run: PR.md and index.html have each row's section
// (its stage strip, timing table, hardware, pictures) rendered from its shard's folder,
// every link of the page resolves, and the shards merged unsigned are named.
func TestMergedPagesReadLikeARunsPages(t *testing.T) {
	dir := mergedRun(t)
	require.NoError(t, VerifyMerged(dir).Err())
	pr, err := os.ReadFile(filepath.Join(dir, merged.PRFile))
	require.NoError(t, err)
	md := string(pr)
	for _, row := range []string{qualifiedRow, secondRow, besideRow} {
		assert.Contains(t, md, "\n### `"+row+"`: ")
	}
	a := "shards/a/" + filepath.Base(testRun(t, "qualified"))
	assert.Contains(t, md, "| HTTP latency p50 / p95 / p99 | ")
	assert.Contains(t, md, "| GPU | none: discover GPUs")
	assert.Contains(t, md, "![contact sheet of "+qualifiedRow+"]("+a+"/"+qualifiedRow+"/pictures/contact-sheet.png)")
	assert.Contains(t, md, "Stages: preflight passed · build passed")
	assert.Contains(t, md, "UNSIGNED shards: a, b (merged with UNSIGNED=1)")
	assert.Contains(t, md, "| UNSIGNED |")
	assert.Contains(t, md, "\n## Shard a: run ")

	page, err := os.ReadFile(filepath.Join(dir, merged.IndexFile))
	require.NoError(t, err)
	assert.Equal(t, prsummary.IndexVersion, prsummary.PageVersion(page))
	for _, row := range []string{qualifiedRow, secondRow, besideRow} {
		assert.Contains(t, string(page), `<section id="row-`+row+`">`)
		assert.Contains(t, string(page), `data-stages="`+row+`"`)
	}
	dec := xml.NewDecoder(strings.NewReader(string(page)))
	dec.Strict = true
	links := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "index.html is well-formed")
		if el, ok := tok.(xml.StartElement); ok {
			for _, at := range el.Attr {
				if (at.Name.Local == "href" || at.Name.Local == "src") && !strings.HasPrefix(at.Value, "#") {
					links++
					assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(at.Value)))
				}
			}
		}
	}
	assert.Greater(t, links, 300)
}

// The merged pages are re-rendered and compared, and the shards' signature state is the
// folders' own: each edit, merged checksums fixed, fails.
func TestMergedPagesAndSignaturesAreDerived(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(t *testing.T, dir string)
		want string
	}{
		"a row's timing edited in PR.md": {func(t *testing.T, dir string) {
			replaceAllRe(t, filepath.Join(dir, merged.PRFile), `\| images/s \| [0-9.]+ \|`, "| images/s | 999 |")
		}, "PR.md: derived from the shards"},
		"a stage painted passed in index.html": {func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, merged.IndexFile), `<h1>`, `<h1 class="stage-pass">`)
		}, "index.html: derived from the shards"},
		"index.html removed": {func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, merged.IndexFile)))
		}, "index.html: derived from the shards: evidence says the bytes the shards' files give, file says missing"},
		"an unsigned shard called signed, its pages rendered to match": {func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, merged.ManifestFile), func(d map[string]any) {
				d["shards"].([]any)[0].(map[string]any)["signed"] = true
			})
			rerenderMerged(t, dir)
		}, "merged.json: shard a signed: evidence says false (shards/a/"},
		"a version this checker does not know": {func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, merged.ManifestFile), func(d map[string]any) { d["version"] = 7 })
		}, "merged.json: version: evidence says at most 2"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := mergedRun(t)
			tc.edit(t, dir)
			resumMerged(t, dir)
			failsWith(t, VerifyMerged(dir).Err(), tc.want)
		})
	}
}

// rerenderMerged writes the merged pages again from merged.json, as a forger with our code would.
func rerenderMerged(t *testing.T, dir string) {
	t.Helper()
	var m merged.Manifest
	readJSONFile(t, filepath.Join(dir, merged.ManifestFile), &m)
	files, err := merged.Render(dir, m)
	require.NoError(t, err)
	for name, b := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
}

// A signed shard merged beside an unsigned one: merged.json and PR.md say which is which,
// and the signed one's key.
func TestMergedRunRecordsWhichShardsWereUnsigned(t *testing.T) {
	priv, pub := testKey(t)
	shardA := shardCopy(t, "a", "qualified", "junit-qualified.xml")
	shardB := shardCopy(t, "b", "second", "junit-second.xml")
	signShard(t, shardA, matrixMade, priv)
	out := filepath.Join(t.TempDir(), "merged")
	m, err := merged.Merge(out, writeMatrix(t, qualifiedRow, secondRow, besideRow), inputs(t, shardA, shardB), Check)
	require.NoError(t, err)
	id, err := attest.KeyID(pub)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, merged.Unsigned(*m))
	assert.True(t, m.Shards[0].Signed)
	assert.Equal(t, id, m.Shards[0].KeyID)
	pr, err := os.ReadFile(filepath.Join(out, merged.PRFile))
	require.NoError(t, err)
	assert.Contains(t, string(pr), "UNSIGNED shards: b (merged with UNSIGNED=1)")
	assert.Contains(t, string(pr), "| signed (key "+id[:16]+") |")
	require.NoError(t, VerifyMerged(out).Err())
}
