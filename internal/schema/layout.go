package schema

import (
	"fmt"
	"regexp"
	"strings"
)

// The evidence layout: every file a run folder and its row folders hold, named once. The
// harness writes through these names and the checker reads through them; RunLayout and
// RowLayout list them with when each must be present (TestLayoutNamesEveryFile holds the
// names to the lists).

// Files of a run folder.
const (
	RunFile         = "run.json"
	SummaryFile     = "SUMMARY.md"
	ChecksumFile    = "SHA256SUMS" // sha256 of every other file (sha256sum -c format); a row folder has its own
	PRFile          = "PR.md"
	IndexFile       = "index.html"
	CheckpointsFile = "checkpoints.json" // the inventory PR.md was rendered from
	// HostCPUInfoFile and HostMemInfoFile are /proc/cpuinfo and /proc/meminfo as the run
	// read them, verbatim: the raw source of run.json cpu_model and mem_total_bytes.
	HostCPUInfoFile = "host-cpuinfo.txt"
	HostMemInfoFile = "host-meminfo.txt"
)

// Folders of a row folder.
const (
	PreflightDir   = "preflight"
	FixturesDir    = "fixtures"
	BuildDir       = "build"
	CorrectnessDir = "correctness"
	ServeDir       = "serve"
	AIPerfDir      = "aiperf"
	QualityDir     = "quality"
	InfluenceDir   = "influence"
	IdentityDir    = "identity"
	PicturesDir    = "pictures"
)

// Files of a row folder, relative to it.
const (
	ResultsFile   = "results.json"
	RowMarkdown   = "row.md"
	PreflightFile = "preflight.json"
	CommandsFile  = "commands.jsonl"

	FixturesManifest = FixturesDir + "/manifest.json"

	BundleFile = BuildDir + "/bundle.json"
	BuildLog   = BuildDir + "/build.log"

	CorrectnessJUnit = CorrectnessDir + "/junit.xml"
	CorrectnessLog   = CorrectnessDir + "/output.log"
	// CorrectnessArtifacts is the folder the family's case writes into (names its own).
	CorrectnessArtifacts = CorrectnessDir + "/artifacts"

	ServerLog          = ServeDir + "/server.log"
	StartupFile        = ServeDir + "/startup.json"
	RecordsFile        = ServeDir + "/records.jsonl"
	ImageBuildLog      = ServeDir + "/image-build.log"
	TestcontainersLog  = ServeDir + "/testcontainers.log"
	ServerIdentityFile = ServeDir + "/identity.json"
	// ScratchDir is the server's scratch folder (names its own files).
	ScratchDir = ServeDir + "/scratch"

	AIPerfInputs = AIPerfDir + "/inputs.jsonl"
	AIPerfLog    = AIPerfDir + "/aiperf.log"
	// AIPerfArtifacts is AIPerf's --artifact-dir: its exports, under the names below.
	AIPerfArtifacts = AIPerfDir + "/artifacts"

	// QualityThresholdsDir is where the family's thresholds files are copied, each as
	// it was read (ThresholdsCopy).
	QualityFile          = QualityDir + "/quality.json"
	QualityThresholdsDir = QualityDir + "/thresholds"

	InfluenceFile = InfluenceDir + "/influence.json"

	IdentityFile   = IdentityDir + "/identity.json"
	NativeBatchLog = IdentityDir + "/native-batch.log"
	// NativeBatchFile is the report a batch native program writes: a first line
	// {"load_ms": ...}, then one line per replay {"id", "output", "output_sha256", "task_ms"}.
	NativeBatchFile = IdentityDir + "/native-batch.jsonl"

	// The pictures the run draws from the raw files (evidencecheck.WritePictures).
	ContactSheetFile = PicturesDir + "/contact-sheet.png"
	LatencyChartFile = PicturesDir + "/latency.png"
)

// AIPerf 0.13.0's exports with --export-level raw, by their names in its artifact folder.
const (
	ExportProfile       = "profile_export.jsonl"
	ExportRaw           = "profile_export_raw.jsonl"
	ExportSummary       = "profile_export_aiperf.json"
	ExportCSV           = "profile_export_aiperf.csv"
	ExportConsole       = "profile_export_console.txt"
	ExportDataset       = "inputs.json" // image_edit only
	ExportPhaseManifest = "phase_manifest.json"
	ExportReady         = ".aiperf_results_ready.json"
	ExportLog           = "logs/aiperf.log"
)

// The same exports, relative to the row folder.
const (
	ProfileExportFile = AIPerfArtifacts + "/" + ExportProfile
	RawExportFile     = AIPerfArtifacts + "/" + ExportRaw
	SummaryExportFile = AIPerfArtifacts + "/" + ExportSummary
	CSVExportFile     = AIPerfArtifacts + "/" + ExportCSV
	ConsoleExportFile = AIPerfArtifacts + "/" + ExportConsole
	DatasetFile       = AIPerfArtifacts + "/" + ExportDataset
	PhaseManifestFile = AIPerfArtifacts + "/" + ExportPhaseManifest
	ReadyFile         = AIPerfArtifacts + "/" + ExportReady
	AIPerfOwnLog      = AIPerfArtifacts + "/" + ExportLog
)

// The sides of an identity comparison: what the HTTP response carried, and what the
// native Task wrote for the same request.
const (
	SideHTTP   = "http"
	SideNative = "native"
)

// ProbeLog is the console of the family's preflight probe name.
func ProbeLog(name string) string { return PreflightDir + "/probe-" + name + ".log" }

// Fixture is the copy of the fixture image file (named by FixturesManifest).
func Fixture(file string) string { return FixturesDir + "/" + file }

// ToolsLog is the console of the family's n-th tool command (from 1).
func ToolsLog(n int) string { return fmt.Sprintf("%s/tools-%d.log", BuildDir, n) }

// Artifact is a file the correctness case wrote, rel inside its artifacts folder.
func Artifact(rel string) string { return CorrectnessArtifacts + "/" + rel }

// Scratch is a file the server wrote, rel inside its scratch folder.
func Scratch(rel string) string { return ScratchDir + "/" + rel }

// PhaseSummary and PhaseCSV are AIPerf's summary of one benchmark phase.
func PhaseSummary(phase string) string {
	return AIPerfArtifacts + "/phases/" + phase + "/" + ExportSummary
}
func PhaseCSV(phase string) string { return AIPerfArtifacts + "/phases/" + phase + "/" + ExportCSV }

// ThresholdsCopy is the copy of the family's n-th thresholds file (from 1), named base
// where the family keeps it.
func ThresholdsCopy(n int, base string) string {
	return fmt.Sprintf("%s/%d-%s", QualityThresholdsDir, n, base)
}

// InfluencePNG is the output of the influence probe name (InfluenceProbes).
func InfluencePNG(name string) string { return InfluenceDir + "/" + name + ".png" }

// IdentityStem is what the identity files of request i (its index in AIPerf's raw
// export) in phase share: "03-warmup".
func IdentityStem(i int, phase string) string { return fmt.Sprintf("%02d-%s", i, phase) }

// IdentityPNG is request i's output on side (SideHTTP, SideNative).
func IdentityPNG(i int, phase, side string) string {
	return IdentityDir + "/" + IdentityStem(i, phase) + "-" + side + ".png"
}

// NativeLog is the console of request i's one-shot native Task.
func NativeLog(i int) string { return fmt.Sprintf("%s/%02d-native.log", IdentityDir, i) }

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

// LayoutFile is one entry of the evidence layout. In Path, {i} is a request's two-digit
// index in AIPerf's raw export, {phase} its benchmark phase (both expanded from the raw
// export itself), {fixture} an image file named by FixturesManifest, {n} a number and
// {name} a lower-case name (matched, never expanded).
type LayoutFile struct {
	Path  string
	Stage string
	Need  Need
	// ReadBy names the checks (functions of package evidencecheck) that read the file and
	// hold what it says to another source; NotEvidence says why none needs to ("not
	// evidence, because ..."). Every entry has one of the two (evidencecheck's
	// TestEveryFileIsRead): a file that is kept is read, or says why it is not.
	ReadBy      []string
	NotEvidence string
}

// treeSuffix ends the Path of a FamilyTree or FailedTree entry: every file below.
const treeSuffix = "/**"

// RunLayout is the run folder's own files; beside them, only one folder per row of run.json.
var RunLayout = []LayoutFile{
	{RunFile, "", Required, []string{"readRunInfo", "checkRun", "checkProvenance", "checkCommit"}, ""},
	{SummaryFile, "", Required, []string{"checkSummary"}, ""},
	{ChecksumFile, "", Required, []string{"checkSums"}, ""},
	{PRFile, "", Required, []string{"checkRendered", "checkPR"}, ""},       // prsummary.Write, through the run's Reporter
	{IndexFile, "", Required, []string{"checkRendered", "checkIndex"}, ""}, // prsummary.Write, through the run's Reporter
	{CheckpointsFile, "", Required, []string{"checkRendered"}, ""},         // prsummary.Write: the inventory PR.md was rendered from
	{HostCPUInfoFile, "", Optional, []string{"checkHost"}, ""},             // /proc/cpuinfo verbatim: required by run.json cpu_model
	{HostMemInfoFile, "", Optional, []string{"checkHost"}, ""},             // /proc/meminfo verbatim: required by run.json mem_total_bytes
}

// RowLayout is every file a row folder must and may hold: the one list to edit when the
// harness writes a new file. A file that no entry admits is an extra file, and fails.
var RowLayout = []LayoutFile{
	{ChecksumFile, "", Required, []string{"checkSums"}, ""}, // the row's own checksum list, written when the row reports
	{PreflightFile, "", Required, []string{"checkPreflight"}, ""},
	{"preflight/probe-{name}.log", "", Optional, nil, "it is a probe's console; preflight.json records each probe's verdict and names its log, and checkPreflight holds the logs to that list"}, // the family's probes, when it has any
	{ResultsFile, "", Required, []string{"newRowCheck", "check"}, ""},
	{RowMarkdown, "", Required, []string{"checkMarkdown"}, ""},
	{CommandsFile, StageCorrectness, Required, []string{"checkCommands"}, ""},

	{FixturesManifest, StagePreflight, Required, []string{"newRowCheck", "checkFixtures", "checkAIPerfInputs"}, ""},
	{"fixtures/{fixture}", StagePreflight, Required, []string{"checkFixtures", "checkAIPerfInputs", "checkInfluenceRecord"}, ""},

	{BundleFile, StageBuild, Required, []string{"check", "checkBuild"}, ""},
	{"build/tools-{n}.log", "", Optional, nil, "it is a tool command's console; commands.jsonl (checkCommands) holds the command, its exit code and its wall, and no claim comes from its text"}, // the family's tool commands, numbered
	{BuildLog, "", Optional, nil, "it is the build command's console; build/bundle.json and commands.jsonl hold what the build made and ran"},                                                    // absent when the bundle came from the cache

	{CorrectnessJUnit, StageCorrectness, Required, []string{"loadCorrectness", "checkCorrectness"}, ""},
	{CorrectnessLog, StageCorrectness, Required, []string{"checkCaseLog"}, ""},
	{CorrectnessArtifacts + treeSuffix, "", FamilyTree, []string{"checkArtifacts", "checkCaseResult", "checkQualityPair", "checkAtCommit"}, ""},

	{ServerLog, StageServe, Required, []string{"checkServerLog"}, ""},
	{StartupFile, StageServe, Required, []string{"checkServe"}, ""},
	{RecordsFile, "", Optional, []string{"loadRecords", "checkRecords", "checkRecordHashes", "checkServerRecords", "checkTaskTimeSources"}, ""}, // required by the timing claim when Task time comes from it
	{ImageBuildLog, "", Optional, nil, "it is the image build's console; commands.jsonl holds the command and its exit code, results.json container the image it made"},
	{TestcontainersLog, "", Optional, nil, "it is the container library's console, about the library; the server's own log is serve/server.log"},
	{ServerIdentityFile, "", Optional, []string{"checkServerIdentity", "servedByDouble"}, ""},                          // required by results.json server_identity
	{ScratchDir + treeSuffix, "", FamilyTree, []string{"responseImage", "checkServerInput", "checkReplayedNoise"}, ""}, // what the server writes there (perf-serve: each request's inputs and output)

	{AIPerfInputs, StageBenchmark, Required, []string{"checkAIPerfInputs"}, ""},
	{AIPerfLog, StageBenchmark, Required, []string{"checkAIPerfLogs"}, ""},
	{ProfileExportFile, StageBenchmark, Required, []string{"loadRequests", "checkProfileExport", "checkLatencies"}, ""},
	{RawExportFile, StageBenchmark, Required, []string{"loadRequests", "checkBenchmark"}, ""},
	{SummaryExportFile, StageBenchmark, Required, []string{"checkSummary", "checkAIPerfRun", "checkLatencyPercentiles"}, ""},
	{CSVExportFile, StageBenchmark, Required, []string{"checkTextExports", "checkLatencyPercentiles"}, ""},
	{ConsoleExportFile, StageBenchmark, Required, []string{"checkTextExports", "checkConsolePercentiles"}, ""},
	{DatasetFile, "", Optional, []string{"checkAIPerfInputs"}, ""}, // image_edit only: required by the benchmark claims
	{PhaseManifestFile, StageBenchmark, Required, []string{"checkSummary", "checkAIPerfRun"}, ""},
	{ReadyFile, StageBenchmark, Required, []string{"checkAIPerfLogs"}, ""},
	{AIPerfOwnLog, StageBenchmark, Required, []string{"checkAIPerfLogs"}, ""},
	{"aiperf/artifacts/phases/{phase}/profile_export_aiperf.json", StageBenchmark, Required, []string{"checkPhaseExports", "checkAIPerfRun", "checkLatencyPercentiles"}, ""},
	{"aiperf/artifacts/phases/{phase}/profile_export_aiperf.csv", StageBenchmark, Required, []string{"checkLatencyPercentiles"}, ""},
	{AIPerfArtifacts + treeSuffix, StageBenchmark, FailedTree, nil, "it is what a failed AIPerf left beside its named exports, admitted only while the benchmark has not passed: a failed benchmark claims nothing from it"},

	{QualityFile, StageQuality, Required, []string{"checkQualityFile"}, ""},
	{QualityThresholdsDir + treeSuffix, "", FamilyTree, []string{"checkQuality", "checkAtCommit"}, ""}, // the family's thresholds files, as read

	{"influence/a.png", StageInfluence, Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{"influence/a-repeat.png", StageInfluence, Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{"influence/b.png", StageInfluence, Required, []string{"checkInfluence", "checkInfluenceRecord"}, ""},
	{InfluenceFile, StageInfluence, Required, []string{"checkInfluence"}, ""},

	{"controls/{name}.png", "", Optional, []string{"checkControls"}, ""}, // each control probe answered 200: controls.json names them
	{ControlsFile, StageControls, Required, []string{"checkControls"}, ""},

	{"identity/{i}-{phase}-http.png", StageBenchmark, Required, []string{"loadRequests", "checkBenchmark", "checkQuality", "checkIdentity"}, ""},
	{"identity/{i}-{phase}-native.png", StageIdentity, Required, []string{"loadRequests", "checkIdentity", "checkNativeLogs", "checkNativeBatch", "checkNativeBatchLog"}, ""},
	{"identity/{i}-native.log", "", Optional, []string{"checkNativeLogs", "checkNativeCrash"}, ""}, // one-shot and parallel: required by the native mode claim
	{NativeBatchLog, "", Optional, []string{"checkNativeBatchLog", "checkNativeCrash"}, ""},        // batch: required by the native mode claim
	{NativeBatchFile, "", Optional, []string{"checkNativeBatch", "checkNativeBatchLog"}, ""},       // batch: the program's report
	{IdentityFile, StageIdentity, Required, []string{"checkIdentity"}, ""},

	{ContactSheetFile, StageIdentity, Required, []string{"checkPictures"}, ""},
	{LatencyChartFile, StageIdentity, Required, []string{"checkPictures"}, ""},
}

// RowColumns are the columns of row.md's table, in order: the harness renders a row
// under them and the checker re-derives each cell.
var RowColumns = []string{"checkpoint", "profile", "backend", "runtime", "bundle sha256", "settings",
	"measured + warmup", "native/HTTP pixel matches", "HTTP edit quality (worst)", "client errors", "HTTP p50 / p95 (s)",
	"Task p50 / p95 (s)", "images/s", "correctness executed / skipped", "status"}

// RowHeader is the header line and the separator line of row.md's table, without
// their line ends.
func RowHeader() (head, sep string) {
	return "| " + strings.Join(RowColumns, " | ") + " |", strings.Repeat("|---", len(RowColumns)) + "|"
}

// RowMarkdownHeader is RowHeader as row.md begins: both lines, each ended.
func RowMarkdownHeader() string {
	head, sep := RowHeader()
	return head + "\n" + sep + "\n"
}

// Tree says whether the entry stands for every file below a folder (FamilyTree,
// FailedTree), and which.
func (f LayoutFile) Tree() (dir string, ok bool) {
	return strings.CutSuffix(f.Path, treeSuffix)
}

// Pattern matches every path the entry stands for: its placeholders as their values
// may be, and for a tree any file below its folder.
func (f LayoutFile) Pattern() *regexp.Regexp {
	if dir, ok := f.Tree(); ok {
		return regexp.MustCompile("^" + regexp.QuoteMeta(dir) + "/.+$")
	}
	q := regexp.QuoteMeta(f.Path)
	q = strings.ReplaceAll(q, `\{i\}`, `[0-9]{2,}`)
	q = strings.ReplaceAll(q, `\{phase\}`, `[a-z_]+`)
	q = strings.ReplaceAll(q, `\{fixture\}`, `[^/]+`)
	q = strings.ReplaceAll(q, `\{n\}`, `[0-9]+`)
	q = strings.ReplaceAll(q, `\{name\}`, `[a-z0-9][a-z0-9_-]*`)
	return regexp.MustCompile("^" + q + "$")
}
