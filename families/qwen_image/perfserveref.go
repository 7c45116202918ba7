package qwenimage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// PerfServeReference serves the diffusers reference's smoke pipeline with TRTMC's
// perf-serve `serve --backend reference` (backends/reference @ 7b798a32, media.py @
// ca938e40). Not TRTMC's: the tiny random model, the parity case, and the shim for a
// snapshot's gaps (reference/perfserve_stage.py).
type PerfServeReference struct {
	// Checkout is a TRTMC checkout with apps/perf_serving, or TRTMC_PERF_SERVE's snapshot.
	Checkout string
	// Pipeline is the diffusers reference the bundle, the case and the interpreter come from.
	Pipeline Diffusers
}

// EnvPerfServe names the perf-serve checkout or snapshot (make ... TRTMC_PERF_SERVE=DIR).
const EnvPerfServe = "QUALKIT_TRTMC_PERF_SERVE"

// PerfServeReferenceFromEnv is the smoke row's adapter, configured from the environment.
func PerfServeReferenceFromEnv(getenv func(string) string) PerfServeReference {
	d := DiffusersFromEnv(DiffusersSmoke(), getenv)
	d.Parity = PerfServeReferenceParity
	return PerfServeReference{Checkout: getenv(EnvPerfServe), Pipeline: d}
}

// PerfServeReferenceParity is the parity case's file for this row's 128x128 workload
// (the backend keeps each output as float32, 12 bytes a pixel).
const PerfServeReferenceParity = "parity-128.json"

var _ family.Family = PerfServeReference{}

// BackendPerfServeReference is the name the evidence checker knows this backend's rules by.
const BackendPerfServeReference = "trtmc-perf-serve-reference"

// perfServeTiming: perf-serve's records, timing.model_call_ms by request_id (app.py @
// 3878755c § execute).
var perfServeTiming = schema.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID}

// Describe: perf-serve's task route with latent_seed, processes, not an image.
func (a PerfServeReference) Describe(_ family.Env, row family.Row) (family.Spec, error) {
	return family.Spec{
		Backend:             BackendPerfServeReference,
		Timing:              perfServeTiming,
		Wire:                wire.Task{LatentSeed: true},
		Identity:            family.IdentityCheck{Path: "/v1/serving/info", Check: a.checkIdentity},
		Build:               a.build,
		NativeBatch:         a.nativeBatch,
		Controls:            PerfServeReferenceControls(),
		BatchWaits:          true, // perfserve_native.py --wait-items loads, then waits
		ModelsWhenReady:     "cli.py @ 3878755c § serve: the backend loads before uvicorn.run binds the port",
		NativeOutputPattern: `"output_sha256":\s*"([0-9a-f]{64})"`,
		Found:               a.found(),
		Requirements:        func(env family.Env) []family.Requirement { return a.requirements(env, row) },
		Probes:              a.probes,
		Quality:             a.quality,
	}, nil
}

// perfServeShim is qualkit's shim for the snapshot's gaps (also the double's).
const perfServeShim = "families/qwen_image/trtmcdouble/checkout/perf-serve-shim"

// staged is the perf-serve tree Tools stages and the row serves from.
func (PerfServeReference) staged(env family.Env) string {
	return filepath.Join(env.Work, "perf-serve")
}

// Tools is the diffusers reference's, then stages perf-serve (logged with sha256s).
func (a PerfServeReference) Tools(env family.Env) (family.Tools, error) {
	tools, err := a.Pipeline.Tools(env)
	tools.Commands = append(tools.Commands, family.Command{Args: []string{a.Pipeline.python(), script(env, "perfserve_stage.py"),
		"--source", a.Checkout, "--shim", filepath.Join(env.Root, perfServeShim), "--out", a.staged(env)}, Dir: env.Root})
	tools.Settings["bundle_form"] = "saved pipeline folder (pipeline.py bundle --save-pipeline)"
	return tools, err
}

// build saves the smoke pipeline as a folder: perf-serve's --reference-model.
func (a PerfServeReference) build(env family.Env, spec family.BuildSpec) (family.Command, error) {
	cmd, err := a.Pipeline.build(env, spec)
	cmd.Args = append(cmd.Args, "--save-pipeline")
	return cmd, err
}

// referenceCaseLatents is the noise the case drew, under its scratch: the served pair is
// held to these bytes.
const referenceCaseLatents = "initial-latents.f32"

// Correctness is the parity case, unchanged, on the saved folder, keeping its noise.
func (a PerfServeReference) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	cc, err := a.Pipeline.Correctness(env, spec)
	cc.Command.Args = append(cc.Command.Args, "--latents-file="+filepath.Join(spec.Scratch, referenceCaseLatents))
	return cc, err
}

// PerfServeReferenceArgs are perf-serve's arguments after `serve` (cli.py @ 3878755c),
// --deterministic (platform.py @ ca938e40 § apply_deterministic_numerics) so the served
// edit, the native replay and the parity case's GPU run share numerics.
func PerfServeReferenceArgs(spec family.ServeSpec, precision string) []string {
	return perfServeArgs(spec, "reference", nil, "--reference-model", spec.Bundle, "--precision", precision, "--deterministic")
}

// perfServeEnv: perf-serve's PYTHONPATH (README @ 8bd797ae § Serve), the cuBLAS
// workspace deterministic GEMMs need, offline, no bytecode.
func perfServeEnv() []string {
	return []string{"PYTHONPATH=apps/perf_serving:apps/benchmark", "CUBLAS_WORKSPACE_CONFIG=:4096:8",
		"HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1"}
}

// Serve starts perf-serve from the staged tree.
func (a PerfServeReference) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	return family.Command{Args: append([]string{a.Pipeline.python(), "-m", "trtmc_perf_serving", "serve"},
		PerfServeReferenceArgs(spec, a.Pipeline.precision())...), Env: perfServeEnv(), Dir: a.staged(env)}, nil
}

// nativeArgs are perfserve_native.py's: the backend as the server builds it, no HTTP.
func (a PerfServeReference) nativeArgs(env family.Env, bundle string) []string {
	args := []string{a.Pipeline.python(), script(env, "perfserve_native.py"), bundle,
		"--checkout", a.staged(env), "--profile", Profile, "--precision", a.Pipeline.precision(), "--deterministic",
		"--scratch", filepath.Join(env.Work, "native-scratch")}
	if a.Pipeline.Device != "" {
		args = append(args, "--device", a.Pipeline.Device)
	}
	return args
}

// Native replays one request through TRTMC's reference backend without HTTP.
func (a PerfServeReference) Native(env family.Env, spec family.NativeSpec) (family.Command, error) {
	item, err := json.Marshal(map[string]any{"id": strings.TrimSuffix(filepath.Base(spec.Output), ".png"),
		"image": spec.Image, "prompt": spec.Prompt, "settings": spec.Settings, "latent_seed": spec.LatentSeed})
	if err != nil {
		return family.Command{}, err
	}
	return family.Command{Args: append(a.nativeArgs(env, spec.Bundle), "--item", string(item), "--output", spec.Output),
		Env: perfServeEnv(), Dir: a.staged(env)}, nil
}

// nativeBatch replays every request after one load of the backend.
func (a PerfServeReference) nativeBatch(env family.Env, spec family.NativeBatchSpec) (family.Command, error) {
	args := append(a.nativeArgs(env, spec.Bundle), "--batch", spec.Items, "--report", spec.Report)
	return family.Command{Args: append(args, waitItems(spec)...), Env: perfServeEnv(), Dir: a.staged(env)}, nil

}

// checkIdentity holds /v1/serving/info (app.py @ 3878755c § info, backends/reference/
// __init__.py @ 7b798a32 § describe) to the row; the checkpoint is the bundle's "model".
func (a PerfServeReference) checkIdentity(body []byte, spec family.ServeSpec) (string, error) {
	var info struct {
		Backend     string `json:"backend"`
		Model       string `json:"model"`
		Operation   string `json:"operation"`
		Precision   string `json:"precision"`
		TimingScope string `json:"timing_scope"`
		Numerics    struct {
			Deterministic bool `json:"deterministic"`
		} `json:"numerics"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	switch {
	case info.Backend != "reference":
		return "", fmt.Errorf("the server says backend %q, not reference: another server answers on the port", info.Backend)
	case !sameBundle(info.Model, spec.Bundle):
		return "", fmt.Errorf("the server serves model %q, the row built %s", info.Model, spec.Bundle)
	case info.Operation != wire.TaskOperation:
		return "", fmt.Errorf("the server serves operation %q, not %s: another profile", info.Operation, wire.TaskOperation)
	case info.Precision != a.Pipeline.precision():
		return "", fmt.Errorf("the server runs %s, the row's bundle is %s", info.Precision, a.Pipeline.precision())
	case !info.Numerics.Deterministic:
		return "", fmt.Errorf("the server's numerics are not deterministic (no --deterministic): its edits could differ from the native replay's")
	case info.TimingScope != "task-call-wall":
		return "", fmt.Errorf("the server's timing scope is %q, not task-call-wall: its model_call_ms is not the Task call", info.TimingScope)
	}
	if is, why := saysDouble(body); is {
		return "", fmt.Errorf("the server is qualkit's contract double (%s)", why)
	}
	return bundleCheckpoint(info.Model)
}

// bundleCheckpoint is the checkpoint a saved-pipeline bundle's bundle.json names.
func bundleCheckpoint(bundle string) (string, error) {
	var meta struct {
		Model string `json:"model"`
	}
	b, err := os.ReadFile(filepath.Join(bundle, "bundle.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		return "", fmt.Errorf("the served bundle's bundle.json: %w", err)
	}
	return meta.Model, nil
}

// quality is the diffusers reference's, the pair held to the case's own noise, which
// perf-serve replays (latents.py @ d3e1a549) and records (app.py @ 3878755c § execute).
func (a PerfServeReference) quality(env family.Env) (family.QualitySpec, error) {
	q, err := a.Pipeline.quality(env)
	if err != nil {
		return q, err
	}
	q.Pair.Noise = "the same noise: perf-serve replays the request's latent_seed, NumPy's default_rng(seed).standard_normal in the pipeline's latent shape, the noise the parity case drew for its CPU float32 reference"
	q.Pair.CaseLatents, q.Pair.ServedLatents = referenceCaseLatents, servedLatents
	return q, nil
}

// perfServeFiles are what the checkout must hold for this row, relative to its root.
var perfServeFiles = []string{
	"apps/perf_serving/trtmc_perf_serving/app.py",
	"apps/perf_serving/trtmc_perf_serving/cli.py",
	"apps/perf_serving/trtmc_perf_serving/latents.py",
	"apps/perf_serving/trtmc_perf_serving/backends/reference/media.py",
	"apps/benchmark/trtmc_benchmark/catalog.py",
	"families/qwen_image/tests/manifests/" + Profile + ".json",
}

func (a PerfServeReference) root() string { // the checkout, or TRTMC_PERF_SERVE's snapshot/
	if isFile(filepath.Join(a.Checkout, "snapshot", perfServeFiles[0])) {
		return filepath.Join(a.Checkout, "snapshot")
	}
	return a.Checkout
}

// requirements: a checkout with perf-serve's reference backend, and the diffusers
// reference's.
func (a PerfServeReference) requirements(env family.Env, c family.Row) []family.Requirement {
	var rs reqs
	if a.Checkout == "" {
		rs.absent("TRTMC's perf-serve: "+EnvPerfServe+" is not set", "export "+EnvPerfServe+"=<a TRTMC checkout with apps/perf_serving, or ../shared/trtmc-perf-serve> (make ... TRTMC_PERF_SERVE=DIR)")
	} else {
		for _, f := range perfServeFiles {
			if !isFile(filepath.Join(a.root(), f)) {
				rs.absent(fmt.Sprintf("%s=%s lacks %s", EnvPerfServe, a.Checkout, f), "point "+EnvPerfServe+" at a TRTMC checkout (October 2026 layout or later) or the perf-serve snapshot")
			}
		}
	}
	return append(rs, a.Pipeline.requirements(env, c)...)
}

// perfServeImports are what `serve --backend reference` imports only once it serves
// (cli.py @ 3878755c § serve; backends/reference/media.py; platform.fingerprint()).
var perfServeImports = []string{"uvicorn", "fastapi", "starlette", "pydantic", "numpy", "PIL", "huggingface_hub", "torch", "diffusers",
	"trtmc_perf_serving.app", "trtmc_perf_serving.profiles", "trtmc_perf_serving.latents",
	"trtmc_perf_serving.backends.reference", "trtmc_perf_serving.backends.reference.media"}

// Probes: the interpreter imports what perf-serve serves with, from the checkout.
func (a PerfServeReference) probes(env family.Env) []family.Probe {
	if a.Checkout == "" {
		return nil
	}
	root := a.root()
	return []family.Probe{importsProbe("perf-serve-imports", "what trtmc_perf_serving serve --backend reference imports, with "+a.Pipeline.python(), "perf-serve would not serve",
		family.Command{Args: []string{a.Pipeline.python()}, Dir: root,
			Env: []string{"PYTHONPATH=" + filepath.Join(root, "apps/perf_serving") + ":" + filepath.Join(root, "apps/benchmark")}},
		perfServeImports,
		"install perf-serve's dependencies (apps/perf_serving/requirements.txt: fastapi, uvicorn, pillow, numpy, python-multipart) into "+EnvDiffusersPython+"'s interpreter (on the H200, scripts/h200/run.sh carries them)")}
}

func (a PerfServeReference) found() []string {
	if a.Checkout == "" {
		return nil
	}
	what := "TRTMC checkout"
	if !isFile(filepath.Join(a.root(), "apps/perf_serving/trtmc_perf_serving/__main__.py")) {
		what = "TRTMC perf-serve snapshot (no __main__.py: qualkit's shim is staged beside it, named as such)"
	}
	return []string{"perf-serve --backend reference from " + a.root() + ": " + what}
}
