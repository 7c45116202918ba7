package harness

import (
	"time"

	"qualkit/internal/harness/gpu"
	"qualkit/internal/harness/serving"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// Family is what a model family's adapter gives the harness: the argv of every program
// the pipeline runs, and where its server reports Task timing. Each method only builds
// commands; the harness runs them, logs them and keeps their output as evidence.
type Family interface {
	// Backend names the serving stack ("refedit", "trtmc", "diffusers").
	Backend() string
	// Tools returns the commands that make the family's own programs under env.Work
	// (none when the programs are installed already), and the path of the program whose
	// hash identifies the builder version in the bundle cache key.
	Tools(env Env) (cmds []Command, builder string)
	// BuildSettings are what the bundle depends on besides the builder program: settings
	// baked into it, and the versions and inputs the build reads (a commit, an image, a
	// manifest's sha256). They are part of its cache key and recorded in the evidence.
	BuildSettings(env Env) map[string]string
	// Build writes the bundle to spec.Out. A family whose correctness case builds the
	// bundle itself returns a Command with no Args and names the bundle in
	// CorrectnessCase.Bundle: the served bundle is then the one the case checked.
	Build(env Env, spec BuildSpec) Command
	// Correctness is the family's own correctness case, run unchanged on the bundle.
	Correctness(env Env, spec CorrectnessSpec) CorrectnessCase
	// Serve starts the server on spec.Port, bound to spec.Host, writing spec.Records.
	Serve(env Env, spec ServeSpec) Command
	// Native runs the Task once, outside the server, writing a PNG to spec.Output.
	Native(env Env, spec NativeSpec) Command
	// Timing says where the server reports the wall time of the Task call.
	Timing() TimingSource
}

// Requirer is implemented by families whose rows need more of the host than the
// harness checks itself (a source checkout, a serving image, a checkpoint on disk).
// Each missing piece says what it is and how to get it.
type Requirer interface {
	Requirements(env Env, c Checkpoint) []Requirement
}

// Prober is implemented by families that can check, in seconds and before anything long
// runs, what their programs need where they run (modules a Python imports, the flags a
// server accepts). The harness runs each probe during preflight, in the family's image
// when the row runs in one, on the row's GPUs, and fails preflight with every probe's
// finding at once.
type Prober interface {
	Probes(env Env) []Probe
}

// Probe is one quick check: a command, and a function that judges its output (stdout
// and stderr together). Check gets the exit error too; a probe may expect a failure.
type Probe struct {
	Name  string // a short file-name-safe name: the log is preflight/probe-<Name>.log
	What  string // what the probe checks, for messages
	Cmd   Command
	Check func(output []byte, runErr error) error
	Fix   string // how to fix what Check finds
}

// ToolsChecker is implemented by families whose tools need a check the commands do not
// make themselves (the library a build must produce, the GPU architecture it targets).
// The harness calls it after the tools ran, before the bundle build.
type ToolsChecker interface {
	CheckTools(env Env) error
}

// ServingIdentity is implemented by families whose server says what it is: the harness
// GETs Path once the server is ready, keeps the answer as serve/identity.json, and fails
// the serve stage when Check rejects it (another backend, another bundle).
type ServingIdentity interface {
	Identity(spec ServeSpec) IdentityCheck
}

// IdentityCheck is where a server states its identity and what it must say.
type IdentityCheck struct {
	Path  string
	Check func(body []byte) error
}

// WireSpeaker is implemented by families whose server speaks another wire protocol than
// the OpenAI images route (wire.OpenAI, the default): how AIPerf sends each request, how
// the evidence reads it back, and where a response's PNG is (package wire).
type WireSpeaker interface {
	Protocol() wire.Protocol
}

// NativeBatcher is implemented by families whose native Task can run every replay in one
// process: one load, then each replay through the same code path as the one-shot Task,
// with no state carried from one replay to the next. The harness then runs one command
// for the identity stage instead of one per request. A family whose batch mode depends
// on what it serves (a checkout without a persistent worker) returns a Command with no
// Args for the rows that lack it: the harness then runs one process per replay.
type NativeBatcher interface {
	NativeBatch(env Env, spec NativeBatchSpec) Command
}

// NativeBatchSpec is one batch of native replays. Items is a JSONL file of NativeItem,
// one per replay; the program writes Report (schema.NativeBatchFile's format): a first
// line {"load_ms": ...}, then one line per replay {"id", "output", "output_sha256",
// "task_ms"}, in any order.
type NativeBatchSpec struct {
	Bundle string
	Items  string
	Report string
	// WaitItems, when positive (only for a NativePreloader), starts the program before its
	// items exist: it loads the model, then waits up to this long for Items to appear
	// (the harness writes it whole, by rename), and its report's first line adds
	// waited_ms and items_read_at.
	WaitItems time.Duration
}

// NativePreloader is implemented by families whose batch program honours
// NativeBatchSpec.WaitItems: the overlapped order starts it with the serve stage, so its
// load runs beside the server's, and hands it its items at identity.
type NativePreloader interface {
	NativeBatchWaits() bool
}

// ModelsWhenReady is implemented by families whose server lists the model in GET
// /v1/models only once it can serve it (it returns where the server does so): AIPerf
// may then start while the server loads and wait for the model there. A server that
// lists the model before it can serve would have AIPerf's warmup refused.
type ModelsWhenReady interface {
	ModelsListedWhenReady() string
}

// NativeItem is one replay of a batch: the same fields as NativeSpec, and the request id.
type NativeItem struct {
	ID         string            `json:"id"`
	Image      string            `json:"image"`
	Prompt     string            `json:"prompt"`
	Settings   map[string]string `json:"settings"`
	LatentSeed *int64            `json:"latent_seed,omitempty"`
	Output     string            `json:"output"`
}

// NativeReporter is implemented by families whose native Task program states, in its log,
// the sha256 of the PNG it wrote. The pattern is a regular expression whose one group
// captures that hex sha256; the harness and the evidence checker compare it with the
// PNG, so the native outputs cannot be swapped after the fact.
type NativeReporter interface {
	NativeOutputPattern() string
}

// Containerized is implemented by families that run in a container image: the server
// and the native Task always do, and the stages ContainerImage.Stages names too. The
// family's commands name host paths; the harness maps them into the container.
type Containerized interface {
	Image(env Env) ContainerImage
}

// ContainerImage is the image a family runs in, and how.
type ContainerImage struct {
	// The image: built here from Dockerfile (default Context/Dockerfile) and Context, or
	// Ref, an image already present locally (never pulled).
	Dockerfile, Context, Ref string
	// CopyRoots, instead of Context: the image is built from a context staged with
	// exactly what the Dockerfile's COPY lines name, taken from the first of these
	// folders that holds it all (serving.StageContext), recorded file by file.
	CopyRoots []string
	// BuildArgs are the Dockerfile's build arguments (ARG), a base image among them.
	BuildArgs map[string]string
	// Paths maps host paths to where the image holds the same files (a program its
	// Dockerfile copies in), so commands that name the host path run the image's copy.
	Paths map[string]string
	// Mounts are host folders the family's commands need inside (a source checkout at
	// the path its docs use); the harness mounts the bundle, records, artifacts and native
	// inputs and outputs itself, at their host paths.
	Mounts []Mount
	// Stages lists the stages besides serve and identity whose commands run in the image
	// (build, correctness): a family whose whole toolchain lives there runs every stage in
	// one environment.
	Stages []string
	// IPCHost runs the containers with the host's IPC namespace (--ipc=host).
	IPCHost bool
	// MemoryBytes caps each container's memory, swap included; 0: no cap.
	MemoryBytes int64
}

// Mount is a bind mount of a host path into a container.
type Mount = serving.Mount

// Env is where a row's programs run. GPUs and ImageID are known once preflight chose the
// GPUs and the row's image is ready; before that they are empty.
type Env struct {
	Root    string       // repository root
	Work    string       // the row's scratch directory (removed after the run); mounted where the row runs
	Python  string       // the project venv's python (pytest, AIPerf)
	GPUs    []gpu.Device // the GPUs chosen for the row, by UUID
	ImageID string       // the family's image (sha256:...), when the row runs in one
}

// Command is one program invocation. Env holds only the variables the family adds;
// the harness records them (secrets redacted) with the argv. Paths are the host's.
type Command = serving.Command

type BuildSpec struct {
	Out       string // bundle path to write
	Reference string // a reference image of the workload (some builds fix the condition-image size from it)
}

type CorrectnessSpec struct {
	Bundle    string // empty when the case builds the bundle itself (see Family.Build)
	JUnit     string // where the case must write its JUnit XML
	Artifacts string // where the case may write its own artifacts
	Scratch   string // an empty folder the case may use (pytest's --basetemp), kept until the row ends
}

// CorrectnessCase is a command, the JUnit file it writes, and exactly which test cases
// it must execute: the gate compares ids, not counts, so a JUnit file in which another
// test passed proves nothing.
type CorrectnessCase struct {
	Command Command
	JUnit   string
	// Cases are the JUnit ids ("<classname>.<name>", as pytest writes them with
	// --rootdir) of the cases that must run and pass: no fewer, no others.
	Cases []string
	// Result, when set, is a JSON file the case writes with a top-level "status" that
	// must be "pass" (TRTMC's result.json); it must lie under CorrectnessSpec.Artifacts.
	Result string
	// TestFiles are the case's own test files; their sha256, and those of the
	// conftest.py files pytest loads for them (up to Command.Dir), go into the evidence.
	TestFiles []string
	// Bundle, for a case that builds its own bundle, is where it writes it: a path, or a
	// glob that must match exactly one file or folder once the case passed. That bundle
	// is the one the row serves.
	Bundle string
}

// ServeSpec says where the server finds its bundle and writes its records.
type ServeSpec struct {
	Bundle  string
	Model   string
	Host    string
	Port    int
	Records string
	Scratch string // a folder the server may write outputs to (kept in the evidence)
	// MaxRequestBytes is the largest request body the row will send (every pair and
	// influence probe, written by the row's protocol): a server with a body limit must
	// accept it.
	MaxRequestBytes int64
}

// NativeSpec is one native Task call, run where the server ran (in its image for a
// containerized family).
type NativeSpec struct {
	Bundle   string
	Image    string
	Prompt   string
	Settings map[string]string // the exact extra inputs the HTTP request carried
	// LatentSeed is the seed of the initial noise the HTTP request had the server replay
	// (wire.Request.LatentSeed): the native Task must draw the same noise from it.
	LatentSeed *int64
	Output     string
}

// QualityJudge is implemented by families that state what a good edit is, in their own
// files: the harness reads nothing into its own code. Quality reads the family's
// thresholds files (Files, each copied into the evidence with its sha256) into Criteria,
// and names the pair its correctness case also ran, if any.
type QualityJudge interface {
	Quality(env Env, c Checkpoint) (QualitySpec, error)
}

// QualitySpec is a family's quality criteria.
type QualitySpec struct {
	Files    []string
	Criteria schema.QualityCriteria
	Pair     *QualityPair
}

// QualityPair is the (image, instruction) the correctness case also ran with the row's
// settings: Image is the fixture's file, Reference the reference image the case wrote,
// relative to its artifacts folder (CorrectnessSpec.Artifacts).
type QualityPair struct {
	Image, Prompt, Reference string
	// Noise says whether the served pair starts from the reference's noise, and what a
	// difference means for the criteria; it goes into the evidence as stated.
	Noise string
	// CaseLatents, when the served pair replays the case's own noise, is the raw float32
	// noise file the case drew (a path or a glob relative to CorrectnessSpec.Scratch, one
	// real file once links are resolved), and ServedLatents the dotted path, in the
	// server's records line of a request, of the sha256 of the noise it replayed: the two
	// must be the same bytes, or the pair did not start where the case's reference did.
	CaseLatents, ServedLatents string
}
