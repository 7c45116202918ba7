package qwenimage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// The diffusers reference backend: QwenImageEditPlusPipeline through reference/
// pipeline.py, served by server.py, replayed by native.py, checked by test_parity.py.

// EnvDiffusersPython names the interpreter with torch, transformers, diffusers and pytest.
const EnvDiffusersPython = "QUALKIT_QWEN_PYTHON"

// DiffusersVersion is the diffusers release reference/pipeline.py is written against
// (its DIFFUSERS_VERSION); preflight requires it.
const DiffusersVersion = "0.40.0"

// DiffusersReference is the folder of the backend's Python programs, from the repo root.
const DiffusersReference = "families/qwen_image/reference"

// Diffusers is the adapter of the diffusers reference backend: build it with
// DiffusersSmoke or DiffusersCheckpoint, then DiffusersFromEnv.
type Diffusers struct {
	Python string // runs pipeline.py, server.py, native.py and the parity case
	// Device: "cuda" (the default), "cuda:N", or "cpu" only when asked for.
	Device string
	// Smoke selects the tiny random-weight profile built in code; else Snapshot (a local
	// snapshot of the checkpoint at Revision) is loaded.
	Smoke    bool
	Snapshot string
	// Precision is baked into the bundle: empty is the profile's (fp32 smoke, bf16).
	Precision string
	// BaseImage, when set, is the local image (torch, torchvision, transformers) every
	// stage's image is built from; BasePython its interpreter (default python3).
	BaseImage, BasePython string
	// Parity is the parity case's file under reference/ (default parity.json).
	Parity string
}

// DiffusersSmoke is the smoke profile: never qualification of the checkpoint.
func DiffusersSmoke() Diffusers { return Diffusers{Smoke: true} }

// DiffusersCheckpoint loads the checkpoint from a local snapshot at the pinned revision.
func DiffusersCheckpoint(snapshot string) Diffusers { return Diffusers{Snapshot: snapshot} }

// DiffusersFromEnv sets Python, BaseImage and BasePython from getenv.
func DiffusersFromEnv(d Diffusers, getenv func(string) string) Diffusers {
	d.Python = getenv(EnvDiffusersPython)
	d.BaseImage, d.BasePython = getenv(EnvDiffusersBaseImage), getenv(EnvDiffusersBasePython)
	return d
}

// The backend's image: Dockerfile.diffusers on a local base image (never pulled), adding
// the diffusers wheel (scripts/h200/wheels.sh) and /opt/qualkit/python.
const (
	EnvDiffusersBaseImage  = "QUALKIT_QWEN_BASE_IMAGE"
	EnvDiffusersBasePython = "QUALKIT_QWEN_BASE_PYTHON"
	diffusersDockerfile    = "families/qwen_image/docker/Dockerfile.diffusers"
	// ContainerPython is the interpreter the image's commands run.
	ContainerPython = "/opt/qualkit/python"
)

func (d Diffusers) python() string {
	if d.BaseImage != "" {
		return ContainerPython
	}
	return cmp.Or(d.Python, "python3")
}

// BackendDiffusers is the name the evidence checker knows the diffusers reference's rules by.
const BackendDiffusers = "diffusers"

var _ family.Family = Diffusers{}

// Describe: the reference server, one-load batch replays that wait for their items; in
// an image only when a base image is named.
func (d Diffusers) Describe(_ family.Env, row family.Row) (family.Spec, error) {
	spec := family.Spec{
		Backend:  BackendDiffusers,
		Timing:   d.timing(),
		Controls: DiffusersControls(d.precision()),
		// server.py lists the model with the checkpoint its bundle.json names.
		Identity:            family.ModelsWithCheckpoint,
		Build:               d.build,
		NativeBatch:         d.nativeBatch,
		BatchWaits:          true, // native.py --batch --wait-items loads the pipeline, then waits
		ModelsWhenReady:     "families/qwen_image/reference/server.py models_body: an empty list until the pipeline is loaded, as /health/ready",
		NativeOutputPattern: `"output_sha256":\s*"([0-9a-f]{64})"`,
		Requirements:        func(env family.Env) []family.Requirement { return d.requirements(env, row) },
		Probes:              d.probes,
		Quality:             d.quality,
	}
	if d.BaseImage != "" {
		spec.Image = d.image
	}
	return spec, nil
}

// image is the backend's image when a base image is named, the repository mounted
// read-only at its own path.
func (d Diffusers) image(env family.Env) (family.ContainerImage, error) {
	return family.ContainerImage{
		ImageSpec: serving.ImageSpec{Dockerfile: filepath.Join(env.Root, diffusersDockerfile), CopyRoots: []string{env.Root},
			BuildArgs: map[string]string{"BASE_IMAGE": d.BaseImage, "BASE_PYTHON": cmp.Or(d.BasePython, "python3")}},
		Mounts:  []family.Mount{{Host: env.Root, Container: env.Root, ReadOnly: true}},
		Stages:  []string{schema.StageBuild, schema.StageCorrectness},
		IPCHost: true,
	}, nil
}

func (d Diffusers) device() string { return cmp.Or(d.Device, "cuda") }

func (d Diffusers) precision() string {
	if d.Smoke {
		return cmp.Or(d.Precision, "fp32")
	}
	return cmp.Or(d.Precision, "bf16")
}

func (d Diffusers) profile() string {
	if d.Smoke {
		return "smoke"
	}
	return "checkpoint"
}

func script(env family.Env, name string) string {
	return filepath.Join(env.Root, DiffusersReference, name)
}

// Tools prints the versions into build/tools.log; the builder is pipeline.py (the smoke
// construction is in it, so a changed construction is a new bundle cache key).
func (d Diffusers) Tools(env family.Env) (family.Tools, error) {
	return family.Tools{Commands: []family.Command{{Args: []string{d.python(), "-c", versionsProgram}, Dir: env.Root}},
		Builder: script(env, "pipeline.py"), Settings: d.buildSettings()}, nil
}

const versionsProgram = `import importlib.metadata as m, json, platform, sys
v = {}
for n in ("torch", "torchvision", "transformers", "diffusers", "tokenizers", "accelerate", "aiohttp", "pillow", "numpy", "pytest"):
    try:
        v[n] = m.version(n)
    except m.PackageNotFoundError:
        v[n] = None
print(json.dumps({"python": platform.python_version(), "executable": sys.executable, "packages": v}, sort_keys=True))`

func (d Diffusers) buildSettings() map[string]string {
	s := map[string]string{"profile": d.profile(), "precision": d.precision(), "pipeline": "QwenImageEditPlusPipeline", "diffusers": DiffusersVersion}
	if !d.Smoke {
		s["snapshot"], s["revision"] = d.Snapshot, Revision
	}
	return s
}

// build writes the bundle: a JSON naming what the server loads.
func (d Diffusers) build(env family.Env, spec family.BuildSpec) (family.Command, error) {
	args := []string{d.python(), script(env, "pipeline.py"), "bundle"}
	if d.Smoke {
		args = append(args, "--smoke")
	} else {
		args = append(args, "--checkpoint", d.Snapshot, "--revision", Revision)
	}
	args = append(args, "--precision", d.precision(), "-o", spec.Out)
	return family.Command{Args: args, Dir: env.Root}, nil
}

// The parity case's test file and its one item's JUnit id (--rootdir: the repository).
const (
	parityTest   = DiffusersReference + "/test_parity.py"
	ParityCaseID = "families.qwen_image.reference.test_parity.test_gpu_matches_cpu_float32"
)

// Correctness is the parity case: the GPU pipeline against the CPU's in float32.
func (d Diffusers) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	cc := family.CorrectnessCase{JUnit: spec.JUnit, Cases: []string{ParityCaseID},
		Command: family.Command{Args: []string{d.python(), "-m", "pytest", parityTest, "-v", "-rs", "-p", "no:cacheprovider",
			"--rootdir", env.Root, "--bundle", spec.Bundle, "--artifacts-dir", spec.Artifacts, "--junitxml=" + spec.JUnit}, Dir: env.Root},
		Result: filepath.Join(spec.Artifacts, "result.json"), TestFiles: []string{filepath.Join(env.Root, parityTest)}}
	if d.Parity != "" {
		cc.Command.Args = append(cc.Command.Args, "--parity="+script(env, d.Parity))
	}
	return cc, nil
}

func (d Diffusers) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	return family.Command{Args: []string{d.python(), script(env, "server.py"), spec.Bundle,
		"--model-name", spec.Model, "--host", spec.Host, "--port", strconv.Itoa(spec.Port),
		"--records", spec.Records, "--device", d.device()}, Dir: env.Root}, nil
}

// Native replays one request, each setting as native.py's --name-with-dashes=VALUE (so
// a value starting with "-" stays a value, and one it has no flag for fails there, exit 2).
func (d Diffusers) Native(env family.Env, spec family.NativeSpec) (family.Command, error) {
	args := []string{d.python(), script(env, "native.py"), spec.Bundle,
		"--image", spec.Image, "--prompt=" + spec.Prompt, "--output", spec.Output, "--device", d.device()}
	for _, k := range slices.Sorted(maps.Keys(spec.Settings)) {
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-")+"="+spec.Settings[k])
	}
	return family.Command{Args: args, Dir: env.Root}, nil
}

// nativeBatch runs every replay after one pipeline load (native.py --batch).
func (d Diffusers) nativeBatch(env family.Env, spec family.NativeBatchSpec) (family.Command, error) {
	args := []string{d.python(), script(env, "native.py"), spec.Bundle, "--batch", spec.Items, "--report", spec.Report, "--device", d.device()}
	return family.Command{Args: append(args, waitItems(spec)...), Dir: env.Root}, nil
}

// waitItems has a batch wait for its items (spec.WaitItems), or not.
func waitItems(spec family.NativeBatchSpec) []string {
	if spec.WaitItems > 0 {
		return []string{fmt.Sprintf("--wait-items=%.0f", spec.WaitItems.Seconds())}
	}
	return nil
}

// timing: the Task time is in the body; the records carry every request id.
func (Diffusers) timing() schema.TimingSource {
	return schema.TimingSource{Body: "timing.task_ms", RecordID: "request_id"}
}

// diffusersProbe prints the package versions and whether torch sees CUDA.
const diffusersProbe = `import importlib.metadata as m, json, sys
out = {"python": sys.version.split()[0], "packages": {}}
for n in ("torch", "torchvision", "transformers", "diffusers", "pytest", "pillow", "numpy"):
    try:
        out["packages"][n] = m.version(n)
    except m.PackageNotFoundError:
        out["packages"][n] = None
try:
    import torch
    out["cuda_available"] = torch.cuda.is_available()
    out["cuda_devices"] = torch.cuda.device_count()
    out["torch_cuda"] = torch.version.cuda
except Exception as e:
    out["cuda_error"] = repr(e)
print(json.dumps(out))`

type diffusersHost struct {
	Python        string             `json:"python"`
	Packages      map[string]*string `json:"packages"`
	CUDAAvailable bool               `json:"cuda_available"`
	CUDADevices   int                `json:"cuda_devices"`
	TorchCUDA     string             `json:"torch_cuda"`
	CUDAError     string             `json:"cuda_error"`
}

// requirements: the row's profile, the snapshot, and (without an image) the interpreter.
func (d Diffusers) requirements(env family.Env, c family.Row) []family.Requirement {
	var rs reqs
	if c.Smoke != d.Smoke {
		rs.bad(fmt.Sprintf("row %q has Smoke=%v but its diffusers adapter loads the %s profile", c.Name, c.Smoke, d.profile()),
			"use qwenimage.DiffusersSmoke() for a smoke row and DiffusersCheckpoint(...) for a checkpoint row")
	}
	if !d.Smoke {
		if c.Revision != Revision {
			rs.bad(fmt.Sprintf("row %q pins revision %q; the diffusers checkpoint profile loads %s", c.Name, c.Revision, Revision), "set the row's Revision to qwenimage.Revision")
		}
		if !isFile(filepath.Join(d.Snapshot, "model_index.json")) {
			rs.absent(fmt.Sprintf("no snapshot of %s at %q (model_index.json missing)", HFID, d.Snapshot),
				fmt.Sprintf("download it on a machine with network access: huggingface-cli download %s --revision %s, and point the row at .../snapshots/%s", HFID, Revision, Revision))
		}
	}
	if d.BaseImage != "" {
		return rs // the interpreter is the image's: Probes checks it there
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.python(), "-c", diffusersProbe)
	cmd.Dir = env.Root
	host, err := readHost(cmd.Output())
	if err != nil {
		rs.absent(fmt.Sprintf("python for the diffusers backend (%s=%q): %v", EnvDiffusersPython, d.python(), err),
			fmt.Sprintf("set %s to an interpreter with torch, torchvision, transformers, diffusers==%s and pytest", EnvDiffusersPython, DiffusersVersion))
		return rs
	}
	return append(rs, d.judgeHost(host)...)
}

// readHost reads what diffusersProbe printed: its last JSON line.
func readHost(out []byte, runErr error) (diffusersHost, error) {
	var h diffusersHost
	if err := json.Unmarshal(lastJSONLine(out), &h); err != nil {
		return h, fmt.Errorf("the probe printed no result (%v): %s", runErr, wire.Clip(out, 300))
	}
	return h, nil
}

// probes: in the image, the interpreter check the host gets otherwise.
func (d Diffusers) probes(env family.Env) []family.Probe {
	if d.BaseImage == "" {
		return nil
	}
	return []family.Probe{{Name: "python", What: "the backend's interpreter " + d.python() + " in the image",
		Cmd: family.Command{Args: []string{d.python(), "-c", diffusersProbe}, Dir: env.Root},
		Check: func(out []byte, runErr error) error {
			h, err := readHost(out, runErr)
			if err != nil {
				return err
			}
			var bad []string
			for _, r := range d.judgeHost(h) {
				bad = append(bad, r.What)
			}
			if len(bad) == 0 {
				return nil
			}
			return errors.New(strings.Join(bad, "; "))
		},
		Fix: "build the image on a base with torch (CUDA), torchvision and transformers (" + EnvDiffusersBaseImage + "), on a host whose Docker engine has the NVIDIA runtime"}}
}

// judgeHost lists what the interpreter lacks: the packages, the pinned diffusers, CUDA.
func (d Diffusers) judgeHost(host diffusersHost) []family.Requirement {
	var rs reqs
	var missing []string
	for _, n := range []string{"torch", "torchvision", "transformers", "diffusers", "pytest", "pillow", "numpy"} {
		if host.Packages[n] == nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		rs.absent(fmt.Sprintf("%s (python %s) lacks %s", d.python(), host.Python, strings.Join(missing, ", ")),
			fmt.Sprintf("set %s to an interpreter with torch, torchvision, transformers, diffusers==%s and pytest (on the H200, scripts/h200/run.sh makes one from carried wheels)", EnvDiffusersPython, DiffusersVersion))
	}
	if v := host.Packages["diffusers"]; v != nil && *v != DiffusersVersion {
		rs.absent(fmt.Sprintf("diffusers %s for %s; the backend is pinned to %s", *v, d.python(), DiffusersVersion),
			fmt.Sprintf("install diffusers==%s", DiffusersVersion))
	}
	switch {
	case host.Packages["torch"] == nil:
		// already reported as missing
	case host.CUDAError != "":
		rs.absent("torch does not import for "+d.python()+": "+host.CUDAError, "fix the torch install of that interpreter")
	case !host.CUDAAvailable:
		rs.absent(fmt.Sprintf("torch (CUDA %s) sees no CUDA device for %s: the server runs on %s and the parity case compares the GPU with the CPU", cmp.Or(host.TorchCUDA, "none"),
			d.python(), d.device()),
			"run on a GPU host with a CUDA build of torch; the backend never falls back to the CPU")
	}
	return rs
}

// quality: pixel bounds from reference/quality.json, the pair's from the parity file
// (its case is the workload's first pair) for the bundle's profile and precision,
// against the case's CPU float32 image.
func (d Diffusers) quality(env family.Env) (family.QualitySpec, error) {
	qpath, ppath := script(env, "quality.json"), script(env, cmp.Or(d.Parity, "parity.json"))
	var q struct {
		PixelMean struct{ Min, Max *float64 } `json:"pixel_mean"`
		PixelStd  struct{ Min *float64 }      `json:"pixel_std"`
	}
	var p struct {
		Case struct {
			Image  string `json:"image"`
			Prompt string `json:"prompt"`
		} `json:"case"`
		Thresholds map[string]struct {
			PSNR struct{ Min *float64 } `json:"psnr_db"`
			SSIM struct{ Min *float64 } `json:"ssim"`
		} `json:"thresholds"`
	}
	for path, v := range map[string]any{qpath: &q, ppath: &p} {
		b, err := os.ReadFile(path)
		if err != nil {
			return family.QualitySpec{}, err
		}
		if err := json.Unmarshal(b, v); err != nil {
			return family.QualitySpec{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	key := d.profile() + "/" + d.precision()
	th, ok := p.Thresholds[key]
	if !ok || th.PSNR.Min == nil || th.SSIM.Min == nil || q.PixelMean.Min == nil || q.PixelMean.Max == nil || q.PixelStd.Min == nil {
		return family.QualitySpec{}, fmt.Errorf("%s and %s: pixel_mean, pixel_std and %s psnr_db/ssim minimums are required", qpath, ppath, key)
	}
	return family.QualitySpec{
		Files: []string{qpath, ppath},
		Criteria: schema.QualityCriteria{MeanMin: q.PixelMean.Min, MeanMax: q.PixelMean.Max, StdMin: q.PixelStd.Min,
			PSNRMin: th.PSNR.Min, SSIMMin: th.SSIM.Min},
		Pair: &family.QualityPair{Image: filepath.Join(env.Root, p.Case.Image), Prompt: p.Case.Prompt, Reference: diffusersPairReference},
	}, nil
}
