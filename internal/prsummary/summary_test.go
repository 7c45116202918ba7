package prsummary

import (
	"encoding/json"
	"encoding/xml"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/inventory"
	"qualkit/internal/runarchive/runstest"
	"qualkit/internal/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.*")

// runsDir holds the committed evidence runs of internal/evidencecheck (see its
// testdata/README.md), unpacked once per test binary.
func runsDir(t *testing.T) string {
	t.Helper()
	return runstest.Shared(t, runstest.TestdataArchive)
}

func committedRun(t *testing.T, kind string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(runsDir(t), "*-"+kind))
	require.NoError(t, err)
	require.Len(t, m, 1)
	return m[0]
}

// writtenRun is a copy of a committed run with checkpoints.json, PR.md and index.html
// written again with o.
func writtenRun(t *testing.T, kind string, o Options) string {
	t.Helper()
	src := committedRun(t, kind)
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	o.HTML = true
	require.NoError(t, Write(dir, o))
	return dir
}

// goldenRows stand in for the repository's qual tables in the golden tests.
var goldenRows = []inventory.QualRow{
	{Test: "TestRefEdit", Name: "refedit-v1", Family: "refedit", Profile: "refedit-v1"},
	{Test: "TestQwenImageEdit", Name: "qwen-image-edit-2511", Family: "qwen_image", Profile: "qwen-image-edit-2511"},
}

// goldenOptions pin the inventory inputs: the repository's committed inventory.json and
// a stand-in qual table.
func goldenOptions(t *testing.T) Options {
	t.Helper()
	return Options{Root: filepath.Join("..", ".."), Rows: goldenRows, EvidenceRoot: runsDir(t)}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/prsummary -update")
	assert.Equal(t, string(want), string(got), "%s differs (rerun with -update if intended)", path)
}

func TestMarkdownGolden(t *testing.T) {
	for _, kind := range []string{"qualified", "drift"} {
		t.Run(kind, func(t *testing.T) {
			md, err := Markdown(writtenRun(t, kind, goldenOptions(t)))
			require.NoError(t, err)
			golden(t, "PR-"+kind+".golden.md", md)
		})
	}
}

func TestMarkdownCarriesTheRowsVerbatim(t *testing.T) {
	dir := writtenRun(t, "qualified", goldenOptions(t))
	md, err := Markdown(dir)
	require.NoError(t, err)
	row, err := os.ReadFile(filepath.Join(dir, "refedit-v1", schema.RowMarkdown))
	require.NoError(t, err)
	assert.Contains(t, string(md), string(row), "the result table is row.md's header and row")
	assert.Contains(t, string(md), "| `qwen-image-edit-2511` | full | implemented | - | not in this run |")
	assert.Contains(t, string(md), "| `refedit-v1` | not a TRTMC profile (refedit family) | - | aiperf-qualified |")
	assert.Contains(t, string(md), "![contact sheet of refedit-v1](refedit-v1/pictures/contact-sheet.png)")
	assert.Contains(t, string(md), "go test ./qual/ -count=1 -v -run")
}

func TestMarkdownWithoutInventory(t *testing.T) {
	o := goldenOptions(t)
	o.TRTMC = "testdata/no-such-checkout"
	md, err := Markdown(writtenRun(t, "qualified", o))
	require.NoError(t, err)
	assert.Contains(t, string(md), "No inventory: no-such-checkout could not be read")
	assert.Contains(t, string(md), "| `refedit-v1` | not a TRTMC profile")
}

func TestFailedRowProvesFamilyValidation(t *testing.T) {
	md, err := Markdown(writtenRun(t, "drift", goldenOptions(t)))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| family-validated | [`refedit-v1-native-drift`](refedit-v1-native-drift/results.json): failed |")
	assert.Contains(t, string(md), "### `refedit-v1-native-drift`: failed\n\nstage identity failed")
}

// index.html is well-formed XML, so encoding/xml reads it strictly; each row carries
// its status; every link and picture points at a file of the run folder.
func TestIndexLinksResolve(t *testing.T) {
	dir := writtenRun(t, "qualified", goldenOptions(t))
	page, err := Index(dir)
	require.NoError(t, err)
	golden(t, "index-qualified.golden.html", page)

	dec := xml.NewDecoder(strings.NewReader(string(page)))
	dec.Strict = true
	var refs []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "index.html is not well-formed")
		if el, ok := tok.(xml.StartElement); ok {
			for _, a := range el.Attr {
				if (a.Name.Local == "href" || a.Name.Local == "src") && !strings.HasPrefix(a.Value, "#") {
					refs = append(refs, a.Value)
				}
			}
		}
	}
	require.NotEmpty(t, refs)
	for _, ref := range refs {
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ref)))
		assert.NoError(t, err, "index.html links %s", ref)
	}
	assert.Regexp(t, regexp.MustCompile(`data-row="refedit-v1" data-status="qualified"`), string(page))
	assert.Contains(t, string(page), `<img src="refedit-v1/pictures/contact-sheet.png"`)
}

// The page opens with the numbers a reviewer wants, as text: the stage strip, identity,
// HTTP and Task p50 / p95 (in ms under a second), images/s, the worst edit quality,
// beside the status; a page of an older version (the committed runs' are version 1)
// still renders as it was, for its run's checks.
func TestIndexHeadlineAndVersions(t *testing.T) {
	dir := writtenRun(t, "qualified", goldenOptions(t))
	page, err := Index(dir)
	require.NoError(t, err)
	assert.Equal(t, IndexVersion, PageVersion(page))
	assert.Contains(t, string(page), "<th>stages</th><th>native/HTTP pixel matches</th><th>HTTP p50 / p95</th><th>Task p50 / p95</th><th>images/s</th>")
	assert.Regexp(t, `</div></td><td>6/6</td><td>[0-9]+\.[0-9] / [0-9]+\.[0-9] ms</td><td>[0-9]+\.[0-9] / [0-9]+\.[0-9] ms</td><td>[0-9.]+</td>`, string(page))
	for v := 1; v < IndexVersion; v++ {
		old, err := IndexAt(dir, v)
		require.NoError(t, err)
		assert.Equal(t, v, PageVersion(old))
		if v < 3 {
			assert.NotContains(t, string(old), "stage-not-run")
		}
		assert.NotContains(t, string(old), "overflow-wrap", "version 4 lets the rows table wrap")
	}
	committed, err := os.ReadFile(filepath.Join(committedRun(t, "qualified"), IndexFile))
	require.NoError(t, err)
	assert.Equal(t, 1, PageVersion(committed), "the committed runs predate version 2")
	_, err = IndexAt(dir, 9)
	assert.ErrorContains(t, err, "index.html version 9")
}

// PR.md states its version (2: the row sections' stage strip, timing table and hardware,
// the venv); a PR.md without the marker is version 1 and renders as it was.
func TestMarkdownVersions(t *testing.T) {
	dir := writtenRun(t, "qualified", goldenOptions(t))
	md, err := Markdown(dir)
	require.NoError(t, err)
	assert.Equal(t, MarkdownVersion, MarkdownVersionOf(md))
	assert.Contains(t, string(md), "| HTTP latency p50 / p95 / p99 | ")
	committed, err := os.ReadFile(filepath.Join(committedRun(t, "qualified"), MarkdownFile))
	require.NoError(t, err)
	assert.Equal(t, 1, MarkdownVersionOf(committed))
	old, err := MarkdownAt(committedRun(t, "qualified"), 1)
	require.NoError(t, err)
	assert.Equal(t, string(committed), string(old), "version 1 renders the committed run's PR.md byte for byte")
	_, err = MarkdownAt(dir, 7)
	assert.ErrorContains(t, err, "PR.md version 7")
}

// A stage that did not run is neither passed nor failed on the page: each stage of a row
// that failed at quality is marked by its own state, and not-run is not painted as a
// failure.
func TestStageStripOfAFailedRow(t *testing.T) {
	dir := failedAtQuality(t)
	page, err := Index(dir)
	require.NoError(t, err)
	for st, want := range map[string]string{"benchmark": "pass", "quality": "fail", "influence": "not-run", "identity": "not-run"} {
		assert.Contains(t, string(page), `data-stage="`+st+`" data-stage-status="`+want+`"`)
	}
	assert.Regexp(t, `\.stage-not-run \{[^}]*color: #6e7781`, string(page), "not run is grey")
	assert.Regexp(t, `\.status-not-run \{[^}]*color: #6e7781`, string(page))
	md, err := Markdown(dir)
	require.NoError(t, err)
	assert.Contains(t, string(md), "Stages: preflight passed · build passed · correctness passed · serve passed · benchmark passed · quality FAILED · influence not run · identity not run")
}

// failedAtQuality is the committed drift run made over as a row that failed at quality:
// its later stages not run (the results.json a failed quality gate leaves), its pages
// written again.
func failedAtQuality(t *testing.T) string {
	t.Helper()
	src := committedRun(t, "drift")
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	p := filepath.Join(dir, "refedit-v1-native-drift", schema.ResultsFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, st := range doc["stages"].([]any) {
		m := st.(map[string]any)
		switch m["name"] {
		case "quality":
			m["status"], m["kind"], m["error"] = "fail", "gate", "1 output is one flat colour"
		case "influence", "identity":
			m["status"], m["wall_s"] = "not-run", 0.0
			delete(m, "kind")
			delete(m, "error")
		}
	}
	doc["reason"], doc["failure_kind"] = "stage quality failed: gate: 1 output is one flat colour", "gate"
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, out, 0o644))
	o := goldenOptions(t)
	o.HTML = true
	require.NoError(t, Write(dir, o))
	return dir
}

// brokenFixtureReason is the reason the harness writes for a row whose fixture image
// changed on disk (harness TestPipelineBrokenFixtureReasonLeadsWithTheFix): what to do
// first, then the whole of what preflight found.
const brokenFixtureReason = "stage preflight failed: gate: fix: restore the fixtures from git (`git checkout -- fixtures/`); " +
	"1 requirement(s) not met: fixtures manifest /home/someone/src/qualkit/fixtures/refedit/manifest.json: image pool: image " +
	"house-640x382.png: sha256 49eb23c11734cb1042f9ca2910e5ac17afedf5de6a4c1ae7bdb1e1d1e0d9c2f1, manifest pins " +
	"c97b697d1e5619896c9653464dd22971634b49bfb7362c73485af52ceb63f615 (restore the file or regenerate the manifest)"

// failedAtPreflight is the committed drift run made over as a row of results.json
// schema 3 whose preflight failed on a broken fixture, its pages written again.
func failedAtPreflight(t *testing.T) string {
	t.Helper()
	src := committedRun(t, "drift")
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	p := filepath.Join(dir, "refedit-v1-native-drift", schema.ResultsFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, st := range doc["stages"].([]any) {
		m := st.(map[string]any)
		if m["name"] == schema.StagePreflight {
			m["status"], m["kind"], m["error"] = "fail", "gate", "1 requirement(s) not met: ..."
			continue
		}
		m["status"], m["wall_s"] = "not-run", 0.0
		delete(m, "kind")
		delete(m, "error")
	}
	doc["schema"], doc["reason"], doc["failure_kind"] = schema.ResultSchema, brokenFixtureReason, "gate"
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, out, 0o644))
	o := goldenOptions(t)
	o.HTML = true
	require.NoError(t, Write(dir, o))
	return dir
}

// A broken fixture's reason shows whole, its fix first, on both pages, with preflight.json
// (every requirement and its fix) linked beside it; the runs before results.json schema 3
// link nothing there (their pages still render as written).
func TestBrokenFixtureReasonOnThePages(t *testing.T) {
	dir := failedAtPreflight(t)
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "### `refedit-v1-native-drift`: failed\n\n"+brokenFixtureReason+
		" ([preflight.json](refedit-v1-native-drift/preflight.json))\n")
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	require.NoError(t, err)
	link := ` (<a href="refedit-v1-native-drift/preflight.json">preflight.json</a>)`
	assert.True(t, strings.Contains(string(page), `<td class="status-failed">failed: `+brokenFixtureReason+link+`</td>`), "the rows table")
	assert.True(t, strings.Contains(string(page), `<p>`+brokenFixtureReason+link+`</p>`), "the row's section")

	old, err := os.ReadFile(filepath.Join(failedAtQuality(t), IndexFile))
	require.NoError(t, err)
	assert.NotContains(t, string(old), "preflight.json</a>)")
}

func TestWriteAndResolve(t *testing.T) {
	src := committedRun(t, "drift")
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	o := goldenOptions(t)
	o.Root, _ = filepath.Abs(o.Root)
	o.HTML = true
	require.NoError(t, Write(dir, o))
	for _, f := range []string{MarkdownFile, IndexFile} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
	}
	_, err := Markdown(filepath.Join(t.TempDir(), "nothing"))
	assert.ErrorContains(t, err, schema.RunFile)
}

// A row with the controls stage shows one line per control (its verdict and evidence
// figure) and per refusal, in PR.md and index.html alike; a row without it shows none.
func TestControlsLines(t *testing.T) {
	dir := writtenRun(t, "controls", goldenOptions(t))
	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	require.NoError(t, err)
	for _, want := range []string{"| controls | |", "| num_inference_steps (steps) | pass: Task ", "| size (size) | pass: asked 64x64, 48x32; got 64x64, 48x32 |",
		"| refuse qualkit_unknown_control=1 | pass: 400 unknown field", "| work recorded | "} {
		assert.Contains(t, string(md), want)
	}
	assert.Contains(t, string(page), `<table class="controls">`)
	assert.Contains(t, string(page), "<td>seed (seed)</td><td>pass: seed 42 twice: 0 pixels differ")
	old, err := os.ReadFile(filepath.Join(writtenRun(t, "qualified", goldenOptions(t)), MarkdownFile))
	require.NoError(t, err)
	assert.NotContains(t, string(old), "| controls | |", "a run before the stage")
}

// A declared gap shows as what the server accepts, with the declaration's citation.
func TestControlLinesDeclaredGap(t *testing.T) {
	lines := controlLines(&schema.ControlsResult{Declared: &schema.Controls{}, Refused: []schema.RefusalVerdict{
		{Field: "qualkit_unknown_control", Value: "1", Status: 200, Verdict: schema.Gap, Gap: "app.py @ 3878755c § task validates no operation field"}}})
	assert.Contains(t, lines, Pair{"accepts qualkit_unknown_control=1", "declared gap: 200 (app.py @ 3878755c § task validates no operation field)"})
}
