// Package family is the contract between the harness and a model family's adapter.
// Describe states a family's facts for a row and hands over the optional builders (nil
// for those it lacks); the methods are the builders every family has. A builder returns
// a program's argv, never runs it: the harness runs, times and records every command.
// docs/adding-a-family.md walks through a minimal family.
package family

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// Family is a model family's adapter.
type Family interface {
	// Describe states the family's facts for one row (see Spec). The harness asks once
	// the row starts and again once preflight chose its GPUs; an error fails preflight
	// with it (a configuration the family cannot work with).
	Describe(env Env, row Row) (Spec, error)
	// Tools are the commands that make the family's own programs under env.Work (none
	// when they are installed already), the program whose sha256 identifies the builder
	// in the bundle cache key, and what else the bundle depends on.
	Tools(env Env) (Tools, error)
	// Correctness is the family's own correctness case, run unchanged on the bundle.
	Correctness(env Env, spec CorrectnessSpec) (CorrectnessCase, error)
	// Serve starts the server on spec.Port, bound to spec.Host, writing spec.Records.
	Serve(env Env, spec ServeSpec) (Command, error)
	// Native runs the Task once, outside the server, writing a PNG to spec.Output.
	Native(env Env, spec NativeSpec) (Command, error)
}

// Row is what a family knows of the table row it serves.
type Row struct {
	Name     string
	Model    string // the checkpoint the row qualifies (HF id for real checkpoints)
	Profile  string
	Revision string
	Smoke    bool
	Double   bool
	Fixtures string // the workload's fixtures manifest, relative to the repository root
}

// Spec is a family's facts for one row: declared data the harness reads, never finds out
// by trying. The zero value of each optional field means the family lacks it.
type Spec struct {
	// Backend names the serving stack ("refedit", "trtmc", "diffusers"); the evidence
	// checker looks its rules up by it (families/all).
	Backend string
	// Timing says where the server reports the wall time of the Task call, in ms. AIPerf
	// never records response headers, so only the body or a records file will do: Body
	// (a dotted path in the response body), Records (in one line of the server's records
	// JSONL) with RecordID (the request id's path there, joined on X-Request-ID). With
	// Body, a RecordID still makes the harness prove that the server honours
	// X-Request-ID, and Records too makes every records line agree with its response.
	Timing schema.TimingSource
	// Wire is how requests travel (package wire); nil is the OpenAI images route.
	Wire wire.Protocol
	// Identity is where the server states what it serves; required. The harness GETs
	// Identity.Path once the server is ready, keeps the answer, and fails the serve stage
	// when Check rejects it or names a checkpoint other than the row's model.
	Identity IdentityCheck

	// Image is the container image the family runs in: the server and the native Task
	// always, and the stages ContainerImage.Stages names. nil: the family runs as processes.
	Image func(Env) (ContainerImage, error)
	// Build writes the bundle to spec.Out. nil: the correctness case builds the bundle
	// (CorrectnessCase.Bundle names where), which is then the one served.
	Build func(Env, BuildSpec) (Command, error)
	// BundleDir replaces .cache/bundles: the bundle cache (<BundleDir>/<key>/) and, without
	// Build, the correctness case's scratch folder (a fresh <BundleDir>/case-* per row).
	BundleDir string
	// NativeBatch runs every replay in one process (one load, each replay through the
	// one-shot path, nothing carried between them). nil: one Native process per replay.
	NativeBatch func(Env, NativeBatchSpec) (Command, error)
	// BatchWaits: the batch program honours NativeBatchSpec.WaitItems (it loads, then
	// waits for its items): the overlapped order starts it beside the server.
	BatchWaits bool
	// ModelsWhenReady says where the server lists the model in GET /v1/models only once
	// it can serve it (AIPerf may then start while it loads); "" when it does not.
	ModelsWhenReady string
	// NativeOutputPattern is a regular expression whose one group captures the sha256 of
	// the PNG the one-shot native Task states it wrote in its log; "" for none.
	NativeOutputPattern string
	// Deadlines adjusts the row's deadlines (defaults applied) for stages that take
	// longer on some inputs than the row states; nil keeps them.
	Deadlines func(Deadlines) Deadlines

	// Found is what the family found on the host and will use (a checkout's serving
	// contract and the file that declares it), for the log and preflight.json.
	Found []string
	// Requirements lists what the row needs of the host and lacks (each with its fix);
	// preflight runs it beside its other slow checks.
	Requirements func(Env) []Requirement
	// Probes check in seconds, where the row's programs run, what every long stage needs.
	Probes func(Env) []Probe
	// CheckTools checks what the tools made (a library, the GPU architecture), once
	// they ran; nil: nothing to check.
	CheckTools func(Env) error
	// Quality reads the family's criteria from its own files; nil: only the criteria
	// every family shares.
	Quality func(Env) (QualitySpec, error)
	// Controls declares the request settings the checkpoint supports and the fields it
	// must refuse, cited from the server's parsers; nil: the controls stage sends nothing.
	Controls *schema.Controls
}

// Validate lists what is wrong with a spec, every problem at once.
func (s Spec) Validate() error {
	var bad []error
	if s.Backend == "" {
		bad = append(bad, errors.New("Spec.Backend is empty"))
	}
	switch ts := s.Timing; {
	case ts.Body == "" && ts.Records == "":
		bad = append(bad, errors.New("Spec.Timing names neither a body field nor a records field"))
	case ts.Records != "" && ts.RecordID == "":
		bad = append(bad, fmt.Errorf("Spec.Timing reads the records field %q but names no request-id field to join on", ts.Records))
	}
	if s.Identity.Path == "" || s.Identity.Check == nil {
		bad = append(bad, errors.New("Spec.Identity needs a Path and a Check: the row must be held to what its server serves"))
	}
	if s.BatchWaits && s.NativeBatch == nil {
		bad = append(bad, errors.New("Spec.BatchWaits without Spec.NativeBatch: only a batch program can wait for its items"))
	}
	return errors.Join(bad...)
}

// Env is where a row's programs run. GPUs and ImageID are known once preflight chose the
// GPUs and the row's image is ready; before that they are empty.
type Env struct {
	Root    string       // repository root
	Work    string       // the row's scratch directory (removed after the run); mounted where the row runs
	Python  string       // the project venv's python (pytest, AIPerf)
	GPUs    []gpu.Device // the GPUs chosen for the row, by UUID
	ImageID string       // the family's image (sha256:...), when the row runs in one
	// CUDADriverVersion is the CUDA version the host's driver supports, as NVML reports it
	// (1000*major + 10*minor, gpu.Reading); 0 before preflight read the GPUs, or without any.
	CUDADriverVersion int
}

// Command is one program invocation. Env holds only the variables the family adds; the
// harness records them (secrets redacted) with the argv. Paths are the host's.
type Command = serving.Command

type Mount = serving.Mount

// Tools are the family's tool commands and what the bundle depends on besides them.
type Tools struct {
	Commands []Command
	// Builder is the program whose sha256 identifies the builder version (cache key).
	Builder string
	// Settings are what the bundle depends on besides the builder: settings baked into
	// it, and the versions and inputs the build reads (a commit, an image, a manifest's
	// sha256). They are part of its cache key and recorded in the evidence.
	Settings map[string]string
}

type BuildSpec struct {
	Out       string // bundle path to write
	Reference string // a reference image of the workload (some builds fix the condition-image size from it)
}

type CorrectnessSpec struct {
	Bundle    string // empty when the case builds the bundle itself (no Spec.Build)
	JUnit     string // where the case must write its JUnit XML
	Artifacts string // where the case may write its own artifacts
	Scratch   string // an empty folder the case may use (pytest's --basetemp), kept until the row ends
}

// CorrectnessCase is a command, the JUnit file it writes, and exactly which test cases it
// must execute: the gate compares ids, not counts, so a JUnit file in which another test
// passed proves nothing.
type CorrectnessCase struct {
	Command Command
	JUnit   string
	// Cases are the JUnit ids ("<classname>.<name>", as pytest writes them with
	// --rootdir) of the cases that must run and pass: no fewer, no others.
	Cases []string
	// Result, when set, is a JSON file the case writes with a top-level "status" that
	// must be ResultPass; it must lie under CorrectnessSpec.Artifacts.
	Result string
	// ResultPass is the status Result states of a passed case: "pass" when empty (TRTMC's
	// result.json at e9132e79); "passed" for its newer e2e evidence plugin's evidence.json.
	ResultPass string
	// TestFiles are the case's own test files; their sha256, and those of the
	// conftest.py files pytest loads for them (up to Command.Dir), go into the evidence.
	TestFiles []string
	// Bundle, for a case that builds its own bundle (no Spec.Build), is where it
	// writes it: a path, or a glob that must match exactly one file or folder once the
	// case passed. That bundle is the one the row serves.
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
// containerized family); its JSON form, without the bundle, is a batch item's.
type NativeSpec struct {
	Bundle   string            `json:"-"`
	Image    string            `json:"image"`
	Prompt   string            `json:"prompt"`
	Settings map[string]string `json:"settings"` // the exact extra inputs the HTTP request carried
	// LatentSeed is the seed of the initial noise the HTTP request had the server replay
	// (wire.Request.LatentSeed): the native Task must draw the same noise from it.
	LatentSeed *int64 `json:"latent_seed,omitempty"`
	Output     string `json:"output"`
}

// NativeBatchSpec is one batch of native replays. Items is a JSONL file of NativeItem,
// one per replay; the program writes Report (schema.NativeBatchFile's format): a first
// line {"load_ms": ...}, then one line per replay {"id", "output", "output_sha256",
// "task_ms"}, in any order.
type NativeBatchSpec struct {
	Bundle string
	Items  string
	Report string
	// WaitItems, when positive (only with Spec.BatchWaits), starts the program before its
	// items exist: it loads the model, then waits up to this long for Items to appear
	// (the harness writes it whole, by rename), and its report's first line adds
	// waited_ms and items_read_at.
	WaitItems time.Duration
}

type NativeItem struct {
	ID string `json:"id"`
	NativeSpec
}

// IdentityCheck is where a server states its identity and what it must say. Check gets
// the answer and what the server was started on; it returns the checkpoint the server
// says it serves (the harness requires the row's model), or why the answer is not the
// row's server (another backend, another bundle).
type IdentityCheck struct {
	Path  string
	Check func(body []byte, spec ServeSpec) (checkpoint string, err error)
}

// ModelsWithCheckpoint is the identity of a server whose GET /v1/models lists the row's
// model (the name it serves it under) with the checkpoint its bundle was built from, in
// a "checkpoint" field: qualkit's reference servers (refedit, the diffusers reference).
var ModelsWithCheckpoint = IdentityCheck{Path: "/v1/models", Check: modelsCheckpoint}

func modelsCheckpoint(body []byte, spec ServeSpec) (string, error) {
	var doc struct {
		Data []struct {
			ID         string `json:"id"`
			Checkpoint string `json:"checkpoint"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	for _, m := range doc.Data {
		if m.ID == spec.Model {
			return m.Checkpoint, nil
		}
	}
	if len(body) > 300 {
		body = append(body[:300:300], "..."...)
	}
	return "", fmt.Errorf("the server lists no model %q in GET /v1/models: %s", spec.Model, body)
}

// Probe is one quick check: a command, and a function that judges its output (stdout and
// stderr together). Check gets the exit error too; a probe may expect a failure.
type Probe struct {
	Name  string // a short file-name-safe name: the log is preflight/probe-<Name>.log
	What  string // what the probe checks, for messages
	Cmd   Command
	Check func(output []byte, runErr error) error
	Fix   string // how to fix what Check finds
}

// Requirement is one thing a row needs of the host and does not have.
type Requirement struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
	// Absent marks a host requirement (hardware, installed software) rather than a
	// broken input: only those may be skipped, and only in a non-qualification run.
	Absent bool `json:"absent"`
}

// ContainerImage is the image a family runs in, and how.
type ContainerImage struct {
	// The image: built here from Dockerfile and Context (or a context staged from
	// CopyRoots) with BuildArgs, or Ref, an image already present locally (never pulled);
	// Paths maps host paths to the image's copies of the same files.
	serving.ImageSpec
	// RefFix says how to make Ref when the engine lacks it (preflight's fix).
	RefFix string
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
	// UnderEntrypoint runs every command under the image's own ENTRYPOINT, one that ends
	// by running its arguments (NVIDIA's images: CUDA forward compatibility, then exec
	// "$@"); without it the command's program replaces the ENTRYPOINT.
	UnderEntrypoint bool
}

// QualitySpec is a family's quality criteria, read from its own files.
type QualitySpec struct {
	Files    []string // each copied into the evidence with its sha256
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

// Deadlines bound each long stage of a row; zero fields take the defaults.
type Deadlines struct {
	Build       time.Duration
	Correctness time.Duration
	Ready       time.Duration // model load until /health/ready answers 200
	Request     time.Duration // one HTTP request
	Native      time.Duration // one native task call
}

// WithDefaults is the deadlines with each zero field set to its default (30 minutes).
func (d Deadlines) WithDefaults() Deadlines {
	const def = 30 * time.Minute
	return Deadlines{Build: cmp.Or(d.Build, def), Correctness: cmp.Or(d.Correctness, def), Ready: cmp.Or(d.Ready, def),
		Request: cmp.Or(d.Request, def), Native: cmp.Or(d.Native, def)}
}
