package evidencecheck

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"qualkit/internal/attest"
	"regexp"
	"sort"
	"strings"
)

// Need says when a file of the layout must be present.
type Need string

const (
	// Required: must be present once Stage passed (Stage "": in every row), and may be
	// present before.
	Required Need = "required"
	// Optional: may be present, never must; checked when present.
	Optional Need = "optional"
	// FamilyTree: Path ends in "/**"; any file below belongs to the family's own tool
	// (its correctness artifacts), whose names the harness does not define.
	FamilyTree Need = "family tree"
	// FailedTree: Path ends in "/**"; any file below is admitted while Stage has not
	// passed (a failing tool leaves what it leaves); once Stage passed, only the files
	// listed by name are.
	FailedTree Need = "failed-stage tree"
)

// File is one entry of the evidence layout. In Path, {i} is a request's two-digit index
// in AIPerf's raw export, {phase} its benchmark phase (both expanded from the raw export
// itself), {fixture} an image file named by fixtures/manifest.json, {n} a number and
// {name} a lower-case name (matched, never expanded).
type File struct {
	Path  string
	Stage string
	Need  Need
	// ReadBy names the checks (functions of this package) that read the file and hold
	// what it says to another source; NotEvidence says why none needs to ("not
	// evidence, because ..."). Every entry has one of the two (TestEveryFileIsRead):
	// a file that is kept is read, or says why it is not.
	ReadBy      []string
	NotEvidence string
}

// RunLayout is the run folder's own files; beside them, only one folder per row of run.json.
var RunLayout = []File{
	{"run.json", "", Required, []string{"readRunInfo", "checkRun", "checkProvenance", "checkCommit"}, ""},
	{"SUMMARY.md", "", Required, []string{"checkSummary"}, ""},
	{"SHA256SUMS", "", Required, []string{"checkSums"}, ""},
	{"PR.md", "", Required, []string{"checkRendered", "checkPR"}, ""},         // prsummary.Write, through the run's Reporter
	{"index.html", "", Required, []string{"checkRendered", "checkIndex"}, ""}, // prsummary.Write, through the run's Reporter
	{"checkpoints.json", "", Required, []string{"checkRendered"}, ""},         // prsummary.Write: the inventory PR.md was rendered from
	{"host-cpuinfo.txt", "", Optional, []string{"checkHost"}, ""},             // /proc/cpuinfo verbatim: required by run.json cpu_model
	{"host-meminfo.txt", "", Optional, []string{"checkHost"}, ""},             // /proc/meminfo verbatim: required by run.json mem_total_bytes
}

// RowLayout is every file a row folder must and may hold: the one list to edit when the
// harness writes a new file. A file that no entry admits is an extra file, and fails.
var RowLayout = []File{
	{"SHA256SUMS", "", Required, []string{"checkSums"}, ""}, // the row's own checksum list, written when the row reports
	{"preflight.json", "", Required, []string{"checkPreflight"}, ""},
	{"preflight/probe-{name}.log", "", Optional, nil, "it is a probe's console; preflight.json records each probe's verdict and names its log, and checkPreflight holds the logs to that list"}, // the family's probes, when it has any
	{"results.json", "", Required, []string{"newRowCheck", "check"}, ""},
	{"row.md", "", Required, []string{"checkMarkdown"}, ""},
	{"commands.jsonl", "correctness", Required, []string{"checkCommands"}, ""},

	{"fixtures/manifest.json", "preflight", Required, []string{"newRowCheck", "checkFixtures", "checkAIPerfInputs"}, ""},
	{"fixtures/{fixture}", "preflight", Required, []string{"checkFixtures", "checkAIPerfInputs", "checkInfluenceRecord"}, ""},

	{"build/bundle.json", "build", Required, []string{"check", "checkBuild"}, ""},
	{"build/tools-{n}.log", "", Optional, nil, "it is a tool command's console; commands.jsonl (checkCommands) holds the command, its exit code and its wall, and no claim comes from its text"}, // the family's tool commands, numbered
	{"build/build.log", "", Optional, nil, "it is the build command's console; build/bundle.json and commands.jsonl hold what the build made and ran"},                                           // absent when the bundle came from the cache

	{"correctness/junit.xml", "correctness", Required, []string{"readCorrectness", "checkCorrectness"}, ""},
	{"correctness/output.log", "correctness", Required, []string{"checkCaseLog"}, ""},
	{"correctness/artifacts/**", "", FamilyTree, []string{"checkArtifacts", "checkCaseResult", "checkQualityPair", "checkAtCommit"}, ""},

	{"serve/server.log", "serve", Required, []string{"checkServerLog"}, ""},
	{"serve/startup.json", "serve", Required, []string{"checkServe"}, ""},
	{"serve/records.jsonl", "", Optional, []string{"loadRecords", "checkRecords", "checkRecordHashes", "checkServerRecords", "checkTaskTimeSources"}, ""}, // required by the timing claim when Task time comes from it
	{"serve/image-build.log", "", Optional, nil, "it is the image build's console; commands.jsonl holds the command and its exit code, results.json container the image it made"},
	{"serve/testcontainers.log", "", Optional, nil, "it is the container library's console, about the library; the server's own log is serve/server.log"},
	{"serve/identity.json", "", Optional, []string{"checkServerIdentity", "servedByDouble"}, ""},                  // required by results.json server_identity
	{"serve/scratch/**", "", FamilyTree, []string{"responseImage", "checkServerInput", "checkReplayedNoise"}, ""}, // what the server writes there (perf-serve: each request's inputs and output)

	{"aiperf/inputs.jsonl", "benchmark", Required, []string{"checkAIPerfInputs"}, ""},
	{"aiperf/aiperf.log", "benchmark", Required, []string{"checkAIPerfLogs"}, ""},
	// AIPerf 0.13.0's export set with --export-level raw.
	{"aiperf/artifacts/profile_export.jsonl", "benchmark", Required, []string{"loadRequests", "checkProfileExport", "checkLatencies"}, ""},
	{"aiperf/artifacts/profile_export_raw.jsonl", "benchmark", Required, []string{"loadRequests", "checkBenchmark"}, ""},
	{"aiperf/artifacts/profile_export_aiperf.json", "benchmark", Required, []string{"checkSummary", "checkAIPerfRun", "checkLatencyPercentiles"}, ""},
	{"aiperf/artifacts/profile_export_aiperf.csv", "benchmark", Required, []string{"checkTextExports", "checkLatencyPercentiles"}, ""},
	{"aiperf/artifacts/profile_export_console.txt", "benchmark", Required, []string{"checkTextExports", "checkConsolePercentiles"}, ""},
	{"aiperf/artifacts/inputs.json", "", Optional, []string{"checkAIPerfInputs"}, ""}, // image_edit only: required by the benchmark claims
	{"aiperf/artifacts/phase_manifest.json", "benchmark", Required, []string{"checkSummary", "checkAIPerfRun"}, ""},
	{"aiperf/artifacts/.aiperf_results_ready.json", "benchmark", Required, []string{"checkAIPerfLogs"}, ""},
	{"aiperf/artifacts/logs/aiperf.log", "benchmark", Required, []string{"checkAIPerfLogs"}, ""},
	{"aiperf/artifacts/phases/{phase}/profile_export_aiperf.json", "benchmark", Required, []string{"checkPhaseExports", "checkAIPerfRun", "checkLatencyPercentiles"}, ""},
	{"aiperf/artifacts/phases/{phase}/profile_export_aiperf.csv", "benchmark", Required, []string{"checkLatencyPercentiles"}, ""},
	{"aiperf/artifacts/**", "benchmark", FailedTree, nil, "it is what a failed AIPerf left beside its named exports, admitted only while the benchmark has not passed: a failed benchmark claims nothing from it"},

	{"quality/quality.json", "quality", Required, []string{"checkQualityFile"}, ""},
	{"quality/thresholds/**", "", FamilyTree, []string{"checkQuality", "checkAtCommit"}, ""}, // the family's thresholds files, as read

	{"influence/a.png", "influence", Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{"influence/a-repeat.png", "influence", Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{"influence/b.png", "influence", Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{"influence/influence.json", "influence", Required, []string{"checkInfluence"}, ""},

	{"identity/{i}-{phase}-http.png", "benchmark", Required, []string{"loadRequests", "checkBenchmark", "checkQuality", "checkIdentity"}, ""},
	{"identity/{i}-{phase}-native.png", "identity", Required, []string{"loadRequests", "checkIdentity", "checkNativeLogs", "checkNativeBatch", "checkNativeBatchLog"}, ""},
	{"identity/{i}-native.log", "", Optional, []string{"checkNativeLogs", "checkNativeCrash"}, ""},         // one-shot and parallel: required by the native mode claim
	{"identity/native-batch.log", "", Optional, []string{"checkNativeBatchLog", "checkNativeCrash"}, ""},   // batch: required by the native mode claim
	{"identity/native-batch.jsonl", "", Optional, []string{"checkNativeBatch", "checkNativeBatchLog"}, ""}, // batch: the program's report
	{"identity/identity.json", "identity", Required, []string{"checkIdentity"}, ""},

	// The pictures Suite.Finish draws from the raw files (evidencecheck.WritePictures).
	{"pictures/contact-sheet.png", "identity", Required, []string{"checkPictures"}, ""},
	{"pictures/latency.png", "identity", Required, []string{"checkPictures"}, ""},
}

// expansion is what the placeholders of RowLayout stand for in one row.
type expansion struct {
	requests []string // "00-warmup", ... from the raw export; nil when it is unreadable
	fixtures []string // from fixtures/manifest.json; nil when it is unreadable
}

// expand lists the paths an entry stands for, or returns a pattern when the data that
// would expand it is missing.
func (e expansion) expand(path string) (paths []string, pattern *regexp.Regexp) {
	if strings.Contains(path, "{n}") || strings.Contains(path, "{name}") {
		return nil, placeholderPattern(path)
	}
	if strings.Contains(path, "{fixture}") {
		if e.fixtures == nil {
			return nil, placeholderPattern(path)
		}
		for _, f := range e.fixtures {
			paths = append(paths, strings.ReplaceAll(path, "{fixture}", f))
		}
		return paths, nil
	}
	if strings.Contains(path, "{i}") || strings.Contains(path, "{phase}") {
		if e.requests == nil {
			return nil, placeholderPattern(path)
		}
		seen := map[string]bool{}
		for _, req := range e.requests {
			i, phase, _ := strings.Cut(req, "-")
			p := strings.ReplaceAll(strings.ReplaceAll(path, "{i}", i), "{phase}", phase)
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		return paths, nil
	}
	return []string{path}, nil
}

func placeholderPattern(path string) *regexp.Regexp {
	q := regexp.QuoteMeta(path)
	q = strings.ReplaceAll(q, `\{i\}`, `[0-9]{2,}`)
	q = strings.ReplaceAll(q, `\{phase\}`, `[a-z_]+`)
	q = strings.ReplaceAll(q, `\{fixture\}`, `[^/]+`)
	q = strings.ReplaceAll(q, `\{n\}`, `[0-9]+`)
	q = strings.ReplaceAll(q, `\{name\}`, `[a-z0-9][a-z0-9_-]*`)
	return regexp.MustCompile("^" + q + "$")
}

// walk lists every regular file of the run folder, relative and slash-separated.
// Anything else (a symlink, a device) is a problem: the checksums could not cover it.
func (c *checker) walk() map[string]bool {
	files := map[string]bool{}
	filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(c.dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			c.fail(rel, "readable", "a readable file", err.Error())
			return nil
		case d.IsDir():
			return nil
		case rel == attest.File:
			// The signature over SHA256SUMS, written after it: VerifySignatures checks it.
			return nil
		case !d.Type().IsRegular():
			c.fail(rel, "regular file", "only regular files (SHA256SUMS covers nothing else)", d.Type().String())
			return nil
		}
		files[rel] = true
		return nil
	})
	return files
}

// checkLayout requires the exact file set: the run's own files, one folder per row of
// run.json, and in each row folder what RowLayout requires and admits.
func (c *checker) checkLayout(files map[string]bool) {
	rowNames := map[string]bool{}
	if c.info != nil {
		for _, r := range c.info.Rows {
			rowNames[r] = true
		}
	}
	byRow := map[string][]string{}
	for f := range files {
		top, rest, nested := strings.Cut(f, "/")
		switch {
		case !nested:
			if !admitted(RunLayout, f) {
				c.fail(f, "exact file set", "no such file in a run folder (evidencecheck.RunLayout)", "present")
			}
		case rowNames[top]:
			byRow[top] = append(byRow[top], rest)
		default:
			c.fail(f, "exact file set", fmt.Sprintf("no row %q in run.json rows", top), "present")
		}
	}
	for _, e := range RunLayout {
		if e.Need == Required && !files[e.Path] {
			c.fail(e.Path, "exact file set", "required in every run folder", "missing")
		}
	}
	if c.info == nil {
		return
	}
	for _, name := range c.info.Rows {
		r := newRowCheck(c, name)
		c.rows = append(c.rows, r)
		c.rep.Rows = append(c.rep.Rows, name)
		r.checkFiles(byRow[name])
	}
}

func admitted(layout []File, rel string) bool {
	for _, e := range layout {
		if e.Path == rel {
			return true
		}
	}
	return false
}

// checkFiles compares a row folder's files with RowLayout.
func (r *rowCheck) checkFiles(have []string) {
	r.files = have
	present := map[string]bool{}
	for _, f := range have {
		present[f] = true
	}
	exp := r.expansion()
	named := map[string]bool{}
	var patterns []*regexp.Regexp
	var trees []string
	for _, e := range RowLayout {
		if strings.HasSuffix(e.Path, "/**") {
			if e.Need == FamilyTree || !r.passed(e.Stage) {
				trees = append(trees, strings.TrimSuffix(e.Path, "**"))
			}
			continue
		}
		paths, pat := exp.expand(e.Path)
		if pat != nil {
			patterns = append(patterns, pat)
		}
		for _, p := range paths {
			named[p] = true
			if e.Need == Required && (e.Stage == "" || r.passed(e.Stage)) && !present[p] {
				why := "required in every row"
				if e.Stage != "" {
					why = fmt.Sprintf("required once stage %s passed, as results.json says it did", e.Stage)
				}
				r.c.fail(r.rel(p), "exact file set", why, "missing")
			}
		}
	}
	sort.Strings(have)
next:
	for _, f := range have {
		if named[f] {
			continue
		}
		for _, p := range patterns {
			if p.MatchString(f) {
				continue next
			}
		}
		for _, t := range trees {
			if strings.HasPrefix(f, t) {
				continue next
			}
		}
		r.c.fail(r.rel(f), "exact file set", "no entry of evidencecheck.RowLayout admits it in this row", "present")
	}
}
