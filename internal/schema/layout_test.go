package schema

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// named is every name the layout gives a file, as the code spells it, with the path it
// must be on disk: a renamed file fails here, and again in the committed runs' check.
var named = []struct{ name, got, want string }{
	{"RunFile", RunFile, "run.json"},
	{"SummaryFile", SummaryFile, "SUMMARY.md"},
	{"ChecksumFile", ChecksumFile, "SHA256SUMS"},
	{"PRFile", PRFile, "PR.md"},
	{"IndexFile", IndexFile, "index.html"},
	{"CheckpointsFile", CheckpointsFile, "checkpoints.json"},
	{"HostCPUInfoFile", HostCPUInfoFile, "host-cpuinfo.txt"},
	{"HostMemInfoFile", HostMemInfoFile, "host-meminfo.txt"},

	{"ResultsFile", ResultsFile, "results.json"},
	{"RowMarkdown", RowMarkdown, "row.md"},
	{"PreflightFile", PreflightFile, "preflight.json"},
	{"ProbeLog(gpu)", ProbeLog("gpu"), "preflight/probe-gpu.log"},
	{"CommandsFile", CommandsFile, "commands.jsonl"},
	{"FixturesManifest", FixturesManifest, "fixtures/manifest.json"},
	{"Fixture(cat.png)", Fixture("cat.png"), "fixtures/cat.png"},
	{"BundleFile", BundleFile, "build/bundle.json"},
	{"ToolsLog(2)", ToolsLog(2), "build/tools-2.log"},
	{"BuildLog", BuildLog, "build/build.log"},
	{"CorrectnessJUnit", CorrectnessJUnit, "correctness/junit.xml"},
	{"CorrectnessLog", CorrectnessLog, "correctness/output.log"},
	{"Artifact(out/result.json)", Artifact("out/result.json"), "correctness/artifacts/out/result.json"},
	{"ServerLog", ServerLog, "serve/server.log"},
	{"StartupFile", StartupFile, "serve/startup.json"},
	{"RecordsFile", RecordsFile, "serve/records.jsonl"},
	{"ImageBuildLog", ImageBuildLog, "serve/image-build.log"},
	{"TestcontainersLog", TestcontainersLog, "serve/testcontainers.log"},
	{"ServerIdentityFile", ServerIdentityFile, "serve/identity.json"},
	{"Scratch(id/out.png)", Scratch("id/out.png"), "serve/scratch/id/out.png"},
	{"AIPerfInputs", AIPerfInputs, "aiperf/inputs.jsonl"},
	{"AIPerfLog", AIPerfLog, "aiperf/aiperf.log"},
	{"ProfileExportFile", ProfileExportFile, "aiperf/artifacts/profile_export.jsonl"},
	{"RawExportFile", RawExportFile, "aiperf/artifacts/profile_export_raw.jsonl"},
	{"SummaryExportFile", SummaryExportFile, "aiperf/artifacts/profile_export_aiperf.json"},
	{"CSVExportFile", CSVExportFile, "aiperf/artifacts/profile_export_aiperf.csv"},
	{"ConsoleExportFile", ConsoleExportFile, "aiperf/artifacts/profile_export_console.txt"},
	{"DatasetFile", DatasetFile, "aiperf/artifacts/inputs.json"},
	{"PhaseManifestFile", PhaseManifestFile, "aiperf/artifacts/phase_manifest.json"},
	{"ReadyFile", ReadyFile, "aiperf/artifacts/.aiperf_results_ready.json"},
	{"AIPerfOwnLog", AIPerfOwnLog, "aiperf/artifacts/logs/aiperf.log"},
	{"PhaseSummary(warmup)", PhaseSummary(PhaseWarmup), "aiperf/artifacts/phases/warmup/profile_export_aiperf.json"},
	{"PhaseCSV(profiling)", PhaseCSV(PhaseProfiling), "aiperf/artifacts/phases/profiling/profile_export_aiperf.csv"},
	{"QualityFile", QualityFile, "quality/quality.json"},
	{"ThresholdsCopy(1, t.json)", ThresholdsCopy(1, "t.json"), "quality/thresholds/1-t.json"},
	{"InfluencePNG(a)", InfluencePNG("a"), "influence/a.png"},
	{"InfluencePNG(a-repeat)", InfluencePNG("a-repeat"), "influence/a-repeat.png"},
	{"InfluencePNG(b)", InfluencePNG("b"), "influence/b.png"},
	{"InfluenceFile", InfluenceFile, "influence/influence.json"},
	{"ControlsPNG(seed-a)", ControlsPNG("seed-a"), "controls/seed-a.png"},
	{"ControlsFile", ControlsFile, "controls/controls.json"},
	{"IdentityPNG(3, warmup, http)", IdentityPNG(3, PhaseWarmup, SideHTTP), "identity/03-warmup-http.png"},
	{"IdentityPNG(12, profiling, native)", IdentityPNG(12, PhaseProfiling, SideNative), "identity/12-profiling-native.png"},
	{"NativeLog(7)", NativeLog(7), "identity/07-native.log"},
	{"NativeBatchLog", NativeBatchLog, "identity/native-batch.log"},
	{"NativeBatchFile", NativeBatchFile, "identity/native-batch.jsonl"},
	{"IdentityFile", IdentityFile, "identity/identity.json"},
	{"ContactSheetFile", ContactSheetFile, "pictures/contact-sheet.png"},
	{"LatencyChartFile", LatencyChartFile, "pictures/latency.png"},
}

// admitting lists the entries of layout that admit rel: the one whose Path is rel, else
// those whose Pattern matches it, trees left out when another entry matches (AIPerf's
// named exports lie in its failed-stage tree too).
func admitting(layout []LayoutFile, rel string) []string {
	var out, trees []string
	for _, e := range layout {
		switch _, tree := e.Tree(); {
		case e.Path == rel:
			return []string{e.Path}
		case !e.Pattern().MatchString(rel):
		case tree:
			trees = append(trees, e.Path)
		default:
			out = append(out, e.Path)
		}
	}
	if len(out) == 0 {
		return trees
	}
	return out
}

// The names are the layout: each names the path it must, one entry of the layout admits
// that path, and every entry but a tree's is named.
func TestLayoutNamesEveryFile(t *testing.T) {
	used := map[string]bool{}
	for _, n := range named {
		assert.Equal(t, n.want, n.got, n.name)
		layout := RowLayout
		if !strings.Contains(n.got, "/") && len(admitting(RowLayout, n.got)) == 0 {
			layout = RunLayout
		}
		entries := admitting(layout, n.got)
		if assert.Len(t, entries, 1, "%s (%s): the layout entries that admit it", n.name, n.got) {
			used[entries[0]] = true
		}
	}
	for _, e := range append(slices.Clone(RunLayout), RowLayout...) {
		if _, tree := e.Tree(); tree {
			continue
		}
		assert.True(t, used[e.Path], "layout entry %s: no name in package schema writes it (add one to layout.go and to this test's list)", e.Path)
	}
	// The test can fail: a name the layout does not admit.
	assert.Empty(t, admitting(RowLayout, "identity/03-warmup-https.png"))
	assert.Empty(t, admitting(RowLayout, "identity/3-warmup-http.png"))
}

// The row folder's folders, which every path of the layout but the run's own lies in.
var rowDirs = []string{PreflightDir, FixturesDir, BuildDir, CorrectnessDir, ServeDir, AIPerfDir, QualityDir, InfluenceDir, ControlsDir, IdentityDir, PicturesDir}

func TestRowDirsHoldTheLayout(t *testing.T) {
	for _, e := range RowLayout {
		dir, _, nested := strings.Cut(e.Path, "/")
		assert.True(t, !nested || slices.Contains(rowDirs, dir), "%s: a folder rowDirs does not list", e.Path)
	}
}

// evidencePath says whether a string literal of Go code spells a path of the evidence
// layout: a file of it, or the start of one (a folder, or a format such as
// "identity/%02d-%s-http.png"). Text that mentions a file among other words (a message:
// "results.json checkpoint.model") is no path.
func evidencePath(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return false
	}
	for _, l := range [][]LayoutFile{RunLayout, RowLayout} {
		for _, e := range l {
			if e.Path == s || e.Pattern().MatchString(s) {
				return true
			}
		}
	}
	dir, _, nested := strings.Cut(s, "/")
	return nested && slices.Contains(rowDirs, dir)
}

// joinedPart says whether s, an element of a path that filepath.Join or path.Join
// builds, is a folder or a file name of the row layout: filepath.Join(dir, "correctness",
// "artifacts") spells a path of it too.
func joinedPart(s string) bool {
	if slices.Contains(rowDirs, s) {
		return true
	}
	for _, e := range RowLayout {
		if !strings.ContainsAny(e.Path, "{*") && s == filepath.Base(e.Path) {
			return true
		}
	}
	return evidencePath(s)
}

// literalPaths lists, for the Go files (tests left out) of the packages in dirs, every
// string literal that spells an evidence path, as "file:line: literal".
func literalPaths(t *testing.T, dirs []string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			flag := func(lit *ast.BasicLit, is func(string) bool) {
				if s, err := strconv.Unquote(lit.Value); err == nil && is(s) {
					out = append(out, fset.Position(lit.Pos()).String()+": "+lit.Value)
				}
			}
			joined := map[*ast.BasicLit]bool{}
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Join" {
						for _, a := range n.Args {
							if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
								joined[lit] = true
								flag(lit, joinedPart)
							}
						}
					}
				case *ast.BasicLit:
					if n.Kind == token.STRING && !joined[n] {
						flag(n, evidencePath)
					}
				}
				return true
			})
		}
	}
	return out
}

// notPaths are literals that look like an evidence path and are none, by file.
var notPaths = map[string]string{
	"claims.go: \"aiperf/\"": "the start of AIPerf's User-Agent, aiperf/<version>",
}

// The writer and the checker name evidence files only through this package: a path
// spelled out in either would drift from the layout unseen.
func TestNoEvidencePathLiterals(t *testing.T) {
	dirs := []string{"../harness", "../serving", "../evidencecheck", "../prsummary", "../pictures"}
	var spelled []string
	for _, l := range literalPaths(t, dirs) {
		file, lit, _ := strings.Cut(l, ": ")
		if _, ok := notPaths[filepath.Base(strings.SplitN(file, ":", 2)[0])+": "+lit]; !ok {
			spelled = append(spelled, l)
		}
	}
	assert.Empty(t, spelled, "evidence paths spelled out: use the names of package schema (layout.go)")

	// The test can fail: a file that spells paths.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.go"), []byte(`package w

const f = "serve/records.jsonl"

var g = fmt.Sprintf("identity/%02d-%s-http.png", 1, "warmup")
var h = filepath.Join(dir, "correctness", "artifacts")
var ok = "the results.json checkpoint.model"
`), 0o644))
	got := literalPaths(t, []string{dir})
	require.Len(t, got, 3, got)
	for i, want := range []string{`"serve/records.jsonl"`, `"identity/%02d-%s-http.png"`, `"correctness"`} {
		assert.Regexp(t, regexp.QuoteMeta(want)+"$", got[i])
	}
}
