// Package schema is the evidence format: the names of a run folder's files and stages,
// the row statuses, and the JSON of run.json and each row's results.json, declared once
// so a renamed key cannot read as zero in one reader. Data and names only: no I/O.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ResultSchema is results.json's "schema". Version 4 counts the family's tool commands
// as harness time (TimeBudget.ToolsS), no longer a part of model work, and its pages link
// preflight.json beside a preflight failure's reason; version 3 added the controls stage
// (and results.json controls); version 2 the p99 of both timing columns and the first
// request (FirstRequest); a version-1 file has neither.
const ResultSchema = "qualkit.result/4"

// Older results.json schemas, still read and checked as they were.
const (
	ResultSchemaV1 = "qualkit.result/1"
	ResultSchemaV2 = "qualkit.result/2"
	ResultSchemaV3 = "qualkit.result/3"
)

// ToolsAreModelWork: versions 1 to 3 counted the family's tool commands as model work.
func ToolsAreModelWork(schema string) bool {
	return schema == ResultSchemaV1 || schema == ResultSchemaV2 || schema == ResultSchemaV3
}

// HasControls: version 3 on ran the controls stage.
func HasControls(schema string) bool {
	return schema != ResultSchemaV1 && schema != ResultSchemaV2
}

// Stage names, in pipeline order. Report is the last subtest of every row; it writes
// the result and is not a stage of results.json.
const (
	StagePreflight   = "preflight"
	StageBuild       = "build"
	StageCorrectness = "correctness"
	StageServe       = "serve"
	StageBenchmark   = "benchmark"
	StageQuality     = "quality"
	StageInfluence   = "influence"
	StageIdentity    = "identity"
	StageReport      = "report"
)

// Stages is the pipeline every row runs, in order; a row passes only if results.json
// lists exactly these, each "pass".
var Stages = []string{StagePreflight, StageBuild, StageCorrectness, StageServe, StageBenchmark, StageQuality, StageInfluence, StageControls, StageIdentity}

// PipelineOf is the pipeline a results.json of that schema ran.
func PipelineOf(resultSchema string) []string {
	if !HasControls(resultSchema) {
		return slices.DeleteFunc(slices.Clone(Stages), func(s string) bool { return s == StageControls })
	}
	return Stages
}

// Stage outcomes.
const (
	Pass   = "pass"
	Fail   = "fail"
	NotRun = "not-run"
)

// Row status values, in the order of the DESIGN status levels.
const (
	StatusQualified = "qualified"                // every stage passed, zero skips in the run, not smoke
	StatusSmoke     = "smoke-passed"             // every stage passed on a smoke profile: never qualification
	StatusPassedNQ  = "passed-not-qualification" // every stage passed in a run that had skips
	StatusDirty     = "passed-dirty-tree"        // every stage passed, from a tree with changes no commit holds (or no known commit)
	StatusDouble    = "passed-contract-double"   // every stage passed against a contract double of the serving stack: never qualification
	StatusFailed    = "failed"
	StatusNotRun    = "not-run"
	// StatusCorrectnessOnly: preflight, build and the row's unchanged correctness case
	// passed in a correctness-only run (-qualkit.correctness-only), the later stages not
	// run. Beside a public run whose row met a hardware limit it is the documented local
	// verification (make merge-evidence); it never qualifies and never passes a row.
	StatusCorrectnessOnly = "correctness-verified"
)

// CorrectnessOnlyStages are the stages a correctness-only run runs.
var CorrectnessOnlyStages = []string{StagePreflight, StageBuild, StageCorrectness}

// Passing says whether a status means every stage passed.
func Passing(status string) bool {
	return status == StatusQualified || status == StatusSmoke || status == StatusPassedNQ || status == StatusDirty || status == StatusDouble
}

// PercentileMethod is the only percentile method reports use: sorted[ceil(p/100*n)-1].
const PercentileMethod = "nearest-rank"

// Phases of AIPerf's records.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// StageResult is one stage of one row.
type StageResult struct {
	Name   string  `json:"name"`
	Status string  `json:"status"` // Pass, Fail, NotRun
	Error  string  `json:"error,omitempty"`
	WallS  float64 `json:"wall_s"`
	// Kind is why a failed stage failed (FailureKinds); empty unless it failed.
	Kind string `json:"kind,omitempty"`
	// Start is when the stage began (absent before the overlapped order): with WallS the
	// stage's window.
	Start time.Time `json:"start,omitzero"`
}

// Failure kinds: why a stage failed (harness.Classify). A hardware limit is not a wrong
// answer.
const (
	KindHardware       = "hardware-limit" // CUDA/host out of memory, OOM-killed container, GPU lost, Xid
	KindTimeout        = "timeout"        // a stage deadline, or go test's -timeout
	KindInterrupted    = "interrupted"    // SIGINT or SIGTERM
	KindInfrastructure = "infrastructure" // the Docker engine or network gone, disk full
	KindCorrectness    = "correctness"    // the family's correctness case failed or skipped
	KindGate           = "gate"           // an identity, quality, influence, timing or other gate
)

// FailureKinds lists every kind, most specific first.
var FailureKinds = []string{KindInterrupted, KindTimeout, KindHardware, KindInfrastructure, KindCorrectness, KindGate}

// Result is a row's results.json: every headline number and where it came from.
type Result struct {
	Schema     string        `json:"schema"`
	RunID      string        `json:"run_id"`
	Row        string        `json:"row"`
	Checkpoint CheckpointRef `json:"checkpoint"`
	Status     string        `json:"status"`
	Reason     string        `json:"reason,omitempty"`
	// FailureKind is the failed stage's Kind, when the row failed in a stage.
	FailureKind string        `json:"failure_kind,omitempty"`
	Stages      []StageResult `json:"stages"`

	Runtime string `json:"runtime,omitempty"`
	// Output is where responses carried the image: "b64_json" (data[0].b64_json), or
	// "scratch" (the file a task result names, kept under serve/scratch/<request id>/).
	Output string `json:"response_output,omitempty"`
	// Protocol is how requests travel (wire.OpenAIImages, wire.TRTMCTask); empty in
	// evidence written before it was recorded, which is the OpenAI images route.
	Protocol string `json:"wire_protocol,omitempty"`
	// ServerIdentity is the path the server stated its identity at (serve/identity.json).
	ServerIdentity string            `json:"server_identity,omitempty"`
	Container      *ContainerInfo    `json:"container,omitempty"`
	Bundle         *BundleInfo       `json:"bundle,omitempty"`
	Settings       map[string]string `json:"settings,omitempty"`
	Measured       int               `json:"measured"`
	Warmup         int               `json:"warmup"`

	Correctness  *Correctness  `json:"correctness,omitempty"`
	StartupS     float64       `json:"startup_s,omitempty"`
	ClientErrors *int          `json:"client_errors,omitempty"` // nil until AIPerf's raw export was read
	HTTP         *Quantiles    `json:"http_latency,omitempty"`
	Task         *Quantiles    `json:"task_time,omitempty"`
	TaskSource   *TimingSource `json:"task_time_source,omitempty"`
	ImagesPerS   float64       `json:"images_per_s,omitempty"`
	// FirstRequest is the first request AIPerf sent (warmup included): what the first
	// caller of a freshly loaded server waits. Absent before ResultSchema version 2.
	FirstRequest *FirstRequest    `json:"first_request,omitempty"`
	Overhead     *Overhead        `json:"http_overhead,omitempty"`
	Quality      *QualitySummary  `json:"quality,omitempty"`
	Identity     *IdentitySummary `json:"identity,omitempty"`
	// NativeOutputPattern finds, in each native Task's log, the sha256 of the PNG it
	// wrote (one capture group); empty when the family's program states none.
	NativeOutputPattern string           `json:"native_output_pattern,omitempty"`
	Influence           *InfluenceResult `json:"influence,omitempty"`
	Controls            *ControlsResult  `json:"controls,omitempty"`
	TimeBudget          *TimeBudget      `json:"time_budget,omitempty"`
	Lease               *Lease           `json:"lease,omitempty"`
	Command             string           `json:"command"`
	Provenance          Provenance       `json:"provenance"`
}

// TimingSource says where the server reported each request's Task time (ms): a dotted
// path in the response body, or in its records JSONL joined on X-Request-ID (RecordID
// names the id's path). With both, the body is the source and the records must agree.
type TimingSource struct {
	Body     string `json:"body,omitempty"`
	Records  string `json:"records,omitempty"`
	RecordID string `json:"record_id,omitempty"`
}

func (ts TimingSource) String() string {
	if ts.Body != "" && ts.Records != "" {
		return fmt.Sprintf("%s (records file %s joined on %s agrees)", ts.Primary(), ts.Records, ts.RecordID)
	}
	return ts.Primary()
}

// Primary names where the Task times come from, without the cross-check.
func (ts TimingSource) Primary() string {
	if ts.Body != "" {
		return "response body " + ts.Body
	}
	return fmt.Sprintf("records file %s joined on %s", ts.Records, ts.RecordID)
}

// Provenance is the harness source a run came from. Dirty means the tree held modified,
// staged or untracked (not ignored) files, or no commit could be read: such a run is
// never qualified.
type Provenance struct {
	Commit  string   `json:"harness_commit"`
	Dirty   bool     `json:"harness_dirty"`
	Changes []string `json:"changes,omitempty"` // `git status --porcelain` lines, at most MaxChanges
	// VenvSHA256 is the sha256 of the project venv's installed set (run.json venv_set:
	// "name==version record-sha256" lines); a departure from its lock is a change above.
	VenvSHA256   string `json:"venv_sha256,omitempty"`
	VenvPackages int    `json:"venv_packages,omitempty"`
}

const MaxChanges = 20

func (r *Result) Stage(name string) (StageResult, bool) {
	for _, s := range r.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return StageResult{}, false
}

type CheckpointRef struct {
	Name     string `json:"name"`
	Family   string `json:"family"`
	Backend  string `json:"backend"`
	Model    string `json:"model"`
	Profile  string `json:"profile"`
	Revision string `json:"revision,omitempty"`
	Smoke    bool   `json:"smoke"`
	Double   bool   `json:"contract_double,omitempty"`
}

// ContainerInfo is what the evidence needs about a started (or failed) container.
type ContainerInfo struct {
	ImageID, ImageRef, ContainerID, DockerEndpoint, DockerVersion string
	BuildS                                                        float64 // image build wall time; 0 when Ref was used
	// BuildContext is the context the image was built from, when it was staged from the
	// Dockerfile's COPY lines rather than taken as a folder.
	BuildContext *ImageContext `json:",omitempty"`
}

// ImageContext is a build context staged with exactly what a Dockerfile copies, every
// file with its size and sha256, and one sha256 over that list.
type ImageContext struct {
	Dockerfile string        `json:"dockerfile"`
	Root       string        `json:"root"`
	Sources    []string      `json:"sources"`
	Files      []ContextFile `json:"files"`
	SHA256     string        `json:"sha256"`
}

// ContextFile is one file of a staged build context, its path inside the context.
type ContextFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// MatchedPath is a path a glob matched and the real path it resolves to.
type MatchedPath struct {
	Path     string `json:"path"`
	Resolved string `json:"resolved"`
}

// BundleInfo identifies the exact bundle every later stage used.
type BundleInfo struct {
	Path     string            `json:"path"`
	SHA256   string            `json:"sha256"`
	Bytes    int64             `json:"bytes"`
	CacheKey string            `json:"cache_key"`
	Cached   bool              `json:"cached"`
	BuildS   float64           `json:"build_wall_s"`
	Builder  string            `json:"builder_sha256"`
	Settings map[string]string `json:"build_settings"`
	// ByCorrectness: the family's correctness case built the bundle (under its scratch
	// folder); Path and SHA256 are what it wrote, recorded when it passed.
	ByCorrectness bool `json:"built_by_correctness,omitempty"`
	// Matched: every path the family's bundle pattern matched when the case passed, each
	// with the real path it resolves to (pytest's <test>_qcurrent link to <test>_q0 is
	// one bundle matched twice); Path is the one real path they share.
	Matched []MatchedPath `json:"matched,omitempty"`
	// BuiltBy is "<run id>/<row>" of the row that built a reused bundle (the cache entry
	// records it); EntrySHA256 the sha256 of that cache entry's bundle.json as reused.
	BuiltBy     string `json:"built_by,omitempty"`
	EntrySHA256 string `json:"cache_entry_sha256,omitempty"`
	// Private: why the row built its own bundle in its work folder, not in the shared
	// cache (another run holds the cache entry, which is never replaced under it).
	Private string `json:"private,omitempty"`
}

// Correctness is what the correctness stage proved.
type Correctness struct {
	CaseCounts
	Declared   []string   `json:"declared_cases"`        // the JUnit ids that had to run and pass
	ResultFile string     `json:"result_file,omitempty"` // the case's own result, relative to the row folder
	ResultPass string     `json:"result_pass,omitempty"` // the status ResultFile states of a passed case; "pass" when empty
	CaseFiles  []FileHash `json:"case_files"`            // the test files and conftest.py chain, as run
	Artifacts  []FileHash `json:"artifacts"`             // every file the case wrote under correctness/artifacts
}

// FileHash is a file and its sha256. Path is absolute for files outside the evidence,
// relative to the row folder for files in it.
type FileHash struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// CaseCounts is what a correctness run executed, read from its JUnit XML.
type CaseCounts struct {
	Total    int      `json:"total"`
	Executed int      `json:"executed"` // total - skipped
	Failed   int      `json:"failed"`
	Errors   int      `json:"errors"`
	Skipped  int      `json:"skipped"`
	Cases    []string `json:"cases"`
	Reasons  []string `json:"skip_reasons,omitempty"`
}

// Quantiles is the p50/p95/p99 of one timing column, in milliseconds (P99 is absent, 0,
// in results.json of ResultSchemaV1).
type Quantiles struct {
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	P99    float64 `json:"p99_ms,omitempty"`
	Count  int     `json:"count"`
	Method string  `json:"method"`
}

// FirstRequest is the request AIPerf sent first (earliest request_start_ns, any phase)
// and its client latency.
type FirstRequest struct {
	RequestID string  `json:"request_id"`
	Phase     string  `json:"phase"`
	ClientMs  float64 `json:"client_latency_ms"`
}

// Overhead is a reported ratio, never a timing column: how much of the client p50 the
// server's Task p50 does not account for (HTTP, multipart, base64, queueing).
type Overhead struct {
	P50DiffMs float64 `json:"client_p50_minus_task_p50_ms"`
	Fraction  float64 `json:"fraction_of_client_p50"`
}

// IdentitySummary counts native-vs-HTTP comparisons over every request, warmup included.
type IdentitySummary struct {
	Total         int               `json:"total"`
	PixelMatches  int               `json:"pixel_matches"`
	ByteIdentical int               `json:"byte_identical"`
	Requests      []IdentityRequest `json:"requests"`
	// Mode is how the native Task ran: "batch" (one process, one load, every replay;
	// identity/native-batch.jsonl is its report), "one-shot" (a process per replay), or
	// "parallel" (one-shot processes at once, one per idle GPU of the row).
	Mode string `json:"native_mode,omitempty"`
	// LoadMs is the batch program's one load, as it reports it.
	LoadMs float64 `json:"native_load_ms,omitempty"`
}

// Native modes.
const (
	NativeBatch    = "batch"
	NativeOneShot  = "one-shot"
	NativeParallel = "parallel"
)

// TimeBudget is where a row's wall time went. Model work is the bundle build (zero when
// cached), the correctness case, one server load, one native load and every Task call,
// served and native; everything else is the harness's. Ratio is wall over model work.
type TimeBudget struct {
	WallS      float64            `json:"wall_s"`
	Stages     map[string]float64 `json:"stages_s"`
	ModelWorkS float64            `json:"model_work_s"`
	HarnessS   float64            `json:"harness_s"`
	// ToolsS is the family's tool commands (build/tools-*.log), a part of HarnessS
	// (before schema 4, ModelWork.LegacyToolsS).
	ToolsS      float64   `json:"tools_s"`
	Ratio       float64   `json:"ratio"`
	Model       ModelWork `json:"model_work"`
	AIPerfS     float64   `json:"aiperf_overhead_s"` // benchmark stage wall minus every request's client latency
	NativeMode  string    `json:"native_mode,omitempty"`
	NativeLoads int       `json:"native_loads"`
	// Order is OrderSerial (-qualkit.serial) or OrderOverlapped (Overlap says what began
	// early and why); absent, serial.
	Order   string   `json:"order,omitempty"`
	Overlap *Overlap `json:"overlap,omitempty"`
	// CriticalPathS is the longest chain of dependent model work (CriticalPath): the
	// shortest wall the row could have had.
	CriticalPathS float64 `json:"critical_path_s"`
	// PhysicalLimitS is the model work no order can overlap (PhysicalLimit);
	// PhysicalRatio is WallS over it.
	PhysicalLimitS float64 `json:"physical_limit_s,omitempty"`
	PhysicalRatio  float64 `json:"physical_ratio,omitempty"`
}

// PhysicalLimit is the model work of m that holds the one GPU whatever the order: the
// build, the correctness case and every Task call. The loads can run beside them.
func PhysicalLimit(m ModelWork) float64 {
	return m.LegacyToolsS + m.BuildS + m.CorrectnessS + m.ServedTaskS + m.NativeTaskS
}

// Orders of a row's work (TimeBudget.Order).
const (
	OrderSerial     = "serial"
	OrderOverlapped = "overlapped"
)

// Overlap says what the overlapped order began early, by how much, and why it did not
// when it did not.
type Overlap struct {
	// BuildEarly: the build began during preflight, beside its slow checks;
	// BuildAheadS is how long before the build stage its first command started.
	BuildEarly  bool    `json:"build_early"`
	BuildAheadS float64 `json:"build_ahead_s"`
	BuildWhy    string  `json:"build_why"`
	// ServerEarly: the server loaded beside the correctness case; ServerAheadS is how
	// long before the serve stage it started.
	ServerEarly  bool    `json:"server_early"`
	ServerAheadS float64 `json:"server_ahead_s"`
	ServerWhy    string  `json:"server_why"`
	// AIPerfEarly: AIPerf started while the server loaded (--wait-for-model-mode
	// models); AIPerfAheadS is how long before the benchmark stage it started.
	AIPerfEarly  bool    `json:"aiperf_early"`
	AIPerfAheadS float64 `json:"aiperf_ahead_s"`
	AIPerfWhy    string  `json:"aiperf_why"`
	// NativePreload: the native batch process loaded from the serve stage on, waiting
	// for identity; NativeAheadS is how long before the identity stage it started.
	NativePreload bool    `json:"native_preload"`
	NativeAheadS  float64 `json:"native_ahead_s"`
	NativeWhy     string  `json:"native_why"`
}

// CriticalPath is the longest chain of dependent model work in m. The build comes
// first; with serverEarly the served Tasks wait for the longer of the case and the
// server load, else both in turn; a preloaded native batch loads after the case, beside
// the served chain, and the native Tasks wait for both chains.
func CriticalPath(m ModelWork, nativePreloaded, serverEarly bool) float64 {
	caseAndLoad := m.CorrectnessS + m.ServerLoadS
	if serverEarly {
		caseAndLoad = max(m.CorrectnessS, m.ServerLoadS)
	}
	served := caseAndLoad + m.ServedTaskS
	if !nativePreloaded {
		return m.LegacyToolsS + m.BuildS + served + m.NativeLoadS + m.NativeTaskS
	}
	return m.LegacyToolsS + m.BuildS + max(served, m.CorrectnessS+m.NativeLoadS) + m.NativeTaskS
}

// ModelWork are the parts of TimeBudget.ModelWorkS.
type ModelWork struct {
	// LegacyToolsS is the tool commands, model work before schema 4 (TimeBudget.ToolsS).
	LegacyToolsS float64 `json:"tools_s,omitempty"`
	BuildS       float64 `json:"build_s"`
	CorrectnessS float64 `json:"correctness_s"`
	ServerLoadS  float64 `json:"server_load_s"`
	NativeLoadS  float64 `json:"native_load_s"`
	ServedTasks  int     `json:"served_task_calls"`
	ServedTaskS  float64 `json:"served_task_s"`
	NativeTasks  int     `json:"native_task_calls"`
	NativeTaskS  float64 `json:"native_task_s"`
}

type IdentityRequest struct {
	RequestID    string  `json:"request_id"`
	Phase        string  `json:"phase"`
	Prompt       string  `json:"prompt"`
	InputSHA256  string  `json:"input_sha256"`
	HTTPSHA256   string  `json:"http_sha256"`
	NativeSHA256 string  `json:"native_sha256"`
	HTTPFile     string  `json:"http_file"`
	NativeFile   string  `json:"native_file"`
	Pixels       string  `json:"pixels"`
	ClientMs     float64 `json:"client_latency_ms,omitempty"`
	TaskMs       float64 `json:"task_ms,omitempty"`
}

// PixelDiff compares two decoded images channel by channel at 8 bits.
type PixelDiff struct {
	SameSize       bool     `json:"same_size"`
	Pixels         int      `json:"pixels"` // of each image (width x height); 0 when the sizes differ
	DifferingPixel int      `json:"differing_pixels"`
	MaxAbs         int      `json:"max_abs_diff"`
	MeanAbs        float64  `json:"mean_abs_diff"`
	FirstX         int      `json:"first_x"`
	FirstY         int      `json:"first_y"`
	FirstA         [4]uint8 `json:"first_a"`
	FirstB         [4]uint8 `json:"first_b"`
}

// InfluenceProbes are the influence stage's three requests, in order: the first image,
// the first again, the second. Each is sent with the request id InfluenceRequestID and
// writes influence/<name>.png.
var InfluenceProbes = []string{"a", "a-repeat", "b"}

// InfluenceRequestID is the X-Request-ID of the influence probe name: the server's
// records and log name it so.
func InfluenceRequestID(name string) string { return "qualkit-influence-" + name }

// InfluenceResult is the reference-influence probe: the same instruction and seed with
// the same image twice (must match) and with another image (must differ).
type InfluenceResult struct {
	Instruction string    `json:"instruction"`
	Images      [2]string `json:"images"`
	Repeat      PixelDiff `json:"repeat"`
	Other       PixelDiff `json:"other"`
}

// RunInfo is the run folder's run.json.
type RunInfo struct {
	RunID         string    `json:"run_id"`
	Started       time.Time `json:"started"`
	Finished      time.Time `json:"finished"`
	Qualification bool      `json:"qualification_run"`
	Runtime       string    `json:"runtime_requested"`
	GoVersion     string    `json:"go_version"`
	HarnessCommit string    `json:"harness_commit"`
	HarnessDirty  bool      `json:"harness_dirty"`
	Changes       []string  `json:"changes,omitempty"`
	VenvSHA256    string    `json:"venv_sha256,omitempty"`
	VenvSet       []string  `json:"venv_set,omitempty"`
	AIPerfVersion string    `json:"aiperf_version"`
	OS            string    `json:"os"`
	Arch          string    `json:"arch"`
	CPUs          int       `json:"cpus"`
	// CPUModel and MemTotalBytes are read from the run folder's copies of /proc/cpuinfo
	// and /proc/meminfo; absent where there is no /proc.
	CPUModel      string `json:"cpu_model,omitempty"`
	MemTotalBytes int64  `json:"mem_total_bytes,omitempty"`
	Hostname      string `json:"hostname"`
	// Load is how busy the host was around the run (make compare weighs it).
	Load        *HostLoad   `json:"host_load,omitempty"`
	RuntimeNote string      `json:"runtime_note"`
	Docker      *DaemonInfo `json:"docker,omitempty"`
	DockerError string      `json:"docker_error,omitempty"`
	Swept       []string    `json:"swept_leftovers,omitempty"`
	// CleanupLeft names the run's cleanups that failed at its end, left to the next sweep.
	CleanupLeft []string `json:"cleanup_left,omitempty"`
	// Interrupted says which signal stopped the run, and when: "SIGINT at +41.2 s".
	Interrupted string `json:"interrupted,omitempty"`
	// CorrectnessOnly: the run ran each row's preflight, build and correctness case
	// alone (-qualkit.correctness-only).
	CorrectnessOnly bool     `json:"correctness_only,omitempty"`
	Skips           []string `json:"skips"`
	Rows            []string `json:"rows"`
}

// HostLoad is /proc/loadavg's three averages at the run's start and end, and the CPU
// time stolen by a hypervisor (/proc/stat's steal) over the run, summed over every CPU.
type HostLoad struct {
	LoadAvgStart [3]float64 `json:"loadavg_start"`
	LoadAvgEnd   [3]float64 `json:"loadavg_end"`
	StealS       float64    `json:"steal_s"`
}

// CommandRecord is one line of a row's commands.jsonl: enough to rerun the command by
// hand. Env holds only the variables the family added, secret-looking values redacted.
type CommandRecord struct {
	Stage    string    `json:"stage"`
	Args     []string  `json:"args"`
	Env      []string  `json:"env,omitempty"`
	Dir      string    `json:"dir,omitempty"`
	Log      string    `json:"log,omitempty"` // relative to the row folder
	Start    time.Time `json:"start"`
	WallS    float64   `json:"wall_s"`
	ExitCode int       `json:"exit_code"`
	Error    string    `json:"error,omitempty"`
	// During is the stage running when the command started, when not its own Stage
	// (work the overlapped order began early).
	During string `json:"during,omitempty"`
}

func (c CommandRecord) End() time.Time {
	return c.Start.Add(time.Duration(c.WallS * float64(time.Second)))
}

func (c CommandRecord) IsServer() bool {
	return c.Stage == StageServe && c.Log == ServerLog
}

// DaemonInfo describes the Docker daemon actually used.
type DaemonInfo struct {
	Endpoint, ServerVersion, OS, StorageDriver, CgroupVersion string
	Runtimes                                                  []string
	NvidiaRuntime                                             bool
	// IgnoredDockerHost is DOCKER_HOST when it was set but testcontainers, finding it
	// unreachable, silently connected to Endpoint instead.
	IgnoredDockerHost string
}

func (d PixelDiff) Identical() bool { return d.SameSize && d.DifferingPixel == 0 }

// String is the failure message shape: count, worst channel and the first differing pixel.
func (d PixelDiff) String() string {
	if !d.SameSize {
		return "sizes differ"
	}
	if d.DifferingPixel == 0 {
		return "pixel-identical"
	}
	return fmt.Sprintf("%d pixels differ (max %d, mean %.4f levels); first at (%d,%d): %v vs %v",
		d.DifferingPixel, d.MaxAbs, d.MeanAbs, d.FirstX, d.FirstY, d.FirstA, d.FirstB)
}

// QualitySummary is the quality stage's result: the family's criteria applied to every
// HTTP output, and the reference criteria to the pair the correctness case also ran.
type QualitySummary struct {
	Files    []ThresholdsFile `json:"files"`
	Criteria QualityCriteria  `json:"criteria"`
	Requests []QualityRequest `json:"requests"`
	Pair     *QualityPair     `json:"pair,omitempty"`
	Failures int              `json:"failures"`
}

// ThresholdsFile is one file the criteria were read from: where the family keeps it, its
// copy in the evidence (under QualityThresholdsDir) and its sha256.
type ThresholdsFile struct {
	Source string `json:"source"`
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// QualityCriteria are a family's thresholds; a nil bound is one the family does not set.
// Pixel values are R, G and B scaled to [0, 1]. StdRatioMin bounds an output's standard
// deviation over its input's, applied when the input's is at least StdRatioWhenInputStd.
type QualityCriteria struct {
	MeanMin              *float64 `json:"pixel_mean_min,omitempty"`
	MeanMax              *float64 `json:"pixel_mean_max,omitempty"`
	StdMin               *float64 `json:"pixel_std_min,omitempty"`
	StdRatioMin          *float64 `json:"std_ratio_min,omitempty"`
	StdRatioWhenInputStd float64  `json:"std_ratio_when_input_std_at_least,omitempty"`
	PSNRMin              *float64 `json:"psnr_min,omitempty"`
	SSIMMin              *float64 `json:"ssim_min,omitempty"`
	// RefStdRatioMin bounds the pair's output deviation over its reference image's, when
	// the reference's is at least RefStdRatioWhenRefStd (TRTMC's min_reference_std_ratio).
	RefStdRatioMin        *float64 `json:"reference_std_ratio_min,omitempty"`
	RefStdRatioWhenRefStd float64  `json:"reference_std_ratio_when_reference_std_at_least,omitempty"`
	// PairMetric names the formula PSNRMin and SSIMMin bound (quality.Metrics): a
	// threshold means something only for the formula it was set for. Empty: qualkit's
	// windowed SSIM, the one its own families state their bounds in.
	PairMetric string `json:"pair_metric,omitempty"`
}

// QualityRequest is one HTTP output measured, and every criterion it missed.
type QualityRequest struct {
	RequestID string   `json:"request_id"`
	Phase     string   `json:"phase"`
	File      string   `json:"file"`
	Mean      float64  `json:"mean"`
	Std       float64  `json:"std"`
	InputStd  float64  `json:"input_std"`
	StdRatio  float64  `json:"std_ratio"`
	Failures  []string `json:"failures,omitempty"`
}

// QualityPair is the request whose image, instruction and settings the correctness case
// also ran, measured against the reference image that case wrote (Reference, in the
// row's correctness artifacts).
type QualityPair struct {
	RequestID string  `json:"request_id"`
	Image     string  `json:"image"`
	Prompt    string  `json:"prompt"`
	Reference string  `json:"reference"`
	PSNR      float64 `json:"psnr_db"`
	SSIM      float64 `json:"ssim"`
	// Metric is the formula of PSNR and SSIM when the family states one
	// (QualityCriteria.PairMetric); WindowedSSIM is then qualkit's windowed SSIM beside
	// it, for information only.
	Metric       string  `json:"metric,omitempty"`
	WindowedSSIM float64 `json:"windowed_ssim,omitempty"`
	// Noise is the family's statement of whether the served pair started from the
	// reference image's noise, and what a difference means for the bounds.
	Noise string `json:"noise,omitempty"`
	// InitialLatentsSHA256 is the noise the server says it replayed for the pair,
	// CaseLatentsSHA256 the noise the correctness case drew: equal, the pair started
	// where the case's reference did.
	InitialLatentsSHA256 string   `json:"initial_latents_sha256,omitempty"`
	CaseLatentsSHA256    string   `json:"case_latents_sha256,omitempty"`
	Std                  float64  `json:"std"`
	ReferenceStd         float64  `json:"reference_std"`
	StdRatio             float64  `json:"std_ratio"`
	Failures             []string `json:"failures,omitempty"`
}

// Lease is what a row held for its whole life: its GPUs by UUID (none for a CPU row),
// after WaitS waiting, and the rows whose leases overlapped it (RanBeside).
type Lease struct {
	GPUs      []string    `json:"gpus"`
	Shared    bool        `json:"shared,omitempty"` // the row said it may share its GPUs
	Start     time.Time   `json:"start"`
	End       time.Time   `json:"end"`
	WaitS     float64     `json:"wait_s"`
	RanBeside []Neighbour `json:"ran_beside"`
}

// Neighbour is a row that held a lease during this row's (End zero: it still ran).
type Neighbour struct {
	Row   string    `json:"row"`
	GPUs  []string  `json:"gpus,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
}

// VenvSetSHA256 is the sha256 of a venv's installed set ("name==version record-sha256"
// lines, sorted), one entry per line: Provenance.VenvSHA256.
func VenvSetSHA256(set []string) string {
	s := sha256.Sum256([]byte(strings.Join(set, "\n") + "\n"))
	return hex.EncodeToString(s[:])
}
