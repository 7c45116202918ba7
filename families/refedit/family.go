// Package refedit is the harness adapter of the reference image-edit family: the argv
// of its build, serve, native-task and correctness programs. The family's code lives in
// edit/, server/ and cmd/refedit; its correctness case in correctness/.
package refedit

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// Family is the reference family with the build settings baked into its bundle.
type Family struct {
	NumInferenceSteps int
	GuidanceScale     float64
	Seed              int64

	// RecordsTiming reads the Task time from the records file joined on X-Request-ID
	// (how TRTMC rows read it) instead of from the response body.
	RecordsTiming bool
}

var _ family.Family = Family{}

// Default is the bundle the embedded reference row qualifies.
var Default = Family{NumInferenceSteps: 4, GuidanceScale: 1.0, Seed: 0}

// Backend is the name the evidence checker knows the family's rules by.
const Backend = "refedit"

// Describe: the refedit binary in a FROM scratch image (or as a process), its one-load
// batch that can wait for its items, a server that lists the model only once loaded and
// names the checkpoint its bundle was built from.
func (f Family) Describe(family.Env, family.Row) (family.Spec, error) {
	return family.Spec{
		Backend: Backend,
		Timing:  f.timing(),
		// GET /v1/models lists the model under the row's name (--model-name) with the
		// checkpoint its bundle was built from (edit.Bundle.Checkpoint), which the harness
		// requires to be the row's model: a row copied under another model's name fails at
		// serve, naming both.
		Identity:    family.ModelsWithCheckpoint,
		Image:       f.image,
		Build:       f.build,
		NativeBatch: f.nativeBatch,
		// `refedit run --batch --wait-items` loads the bundle, then waits for its items.
		BatchWaits: true,
		// The server lists the model in GET /v1/models only once it has loaded the bundle.
		ModelsWhenReady:     "families/refedit/server/server.go handleModels: listed once Load gave it a program, as /health/ready",
		NativeOutputPattern: `"output_sha256":\s*"([0-9a-f]{64})"`,
		Quality:             quality,
		Controls:            Controls(),
	}, nil
}

// The binary is built into its own folder, which is also the container build context:
// the image and the process run the very same file.
func imageDir(env family.Env) string { return filepath.Join(env.Work, "image") }
func binary(env family.Env) string   { return filepath.Join(imageDir(env), "refedit") }

// inImage is where the Dockerfile puts the binary.
const inImage = "/refedit"

// Tools builds the static refedit binary from this checkout, so the evidence names the
// exact builder (its hash is part of the bundle cache key).
func (f Family) Tools(env family.Env) (family.Tools, error) {
	return family.Tools{Commands: []family.Command{{
		Args: []string{"go", "build", "-trimpath", "-o", binary(env), "./families/refedit/cmd/refedit"},
		Env:  []string{"CGO_ENABLED=0"},
		Dir:  env.Root,
	}, {
		Args: []string{"cp", filepath.Join(env.Root, "families/refedit/Dockerfile"), filepath.Join(imageDir(env), "Dockerfile")},
	}}, Builder: binary(env), Settings: map[string]string{
		"num_inference_steps": strconv.Itoa(f.NumInferenceSteps),
		"guidance_scale":      strconv.FormatFloat(f.GuidanceScale, 'f', -1, 64),
		"seed":                strconv.FormatInt(f.Seed, 10),
	}}, nil
}

func (f Family) build(env family.Env, spec family.BuildSpec) (family.Command, error) {
	return family.Command{Args: []string{binary(env), "build", "-o", spec.Out,
		"--num-inference-steps", strconv.Itoa(f.NumInferenceSteps),
		"--guidance-scale", strconv.FormatFloat(f.GuidanceScale, 'f', -1, 64),
		"--seed", strconv.FormatInt(f.Seed, 10),
	}}, nil
}

// NoPluginsEnv keeps pytest from loading the plugins installed in the venv (pytest's
// setuptools entry points): the reference case and qualkit's own Python tests need none.
const NoPluginsEnv = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"

// The correctness case: its test file, and the JUnit id of its one item as pytest
// writes it with --rootdir at the repository root.
const (
	correctnessTest   = "families/refedit/correctness/test_refedit_e2e.py"
	CorrectnessCaseID = "families.refedit.correctness.test_refedit_e2e.test_refedit_e2e"
)

// Correctness is the family's pytest case: one item comparing native outputs of the
// bundle with an independent float64 NumPy implementation.
//
// The case uses no pytest plugin: it runs with none (PYTEST_DISABLE_PLUGIN_AUTOLOAD), so
// that what the venv happens to hold cannot change it. AIPerf 0.13.0's dependencies bring
// four (dash, anyio, platformdirs, pytest-timeout); loading them took 1.1 s of the
// case's 1.5 s start (`python -m pytest --co` on the case, measured 2026-12-04).
func (f Family) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	args := []string{env.Python, "-m", "pytest", correctnessTest,
		"-v", "-rs", "-p", "no:cacheprovider", "--rootdir", env.Root,
		"--refedit-binary", binary(env), "--bundle", spec.Bundle,
		"--artifacts-dir", spec.Artifacts, "--junitxml=" + spec.JUnit}
	return family.CorrectnessCase{
		Command:   family.Command{Args: args, Dir: env.Root, Env: []string{NoPluginsEnv}},
		JUnit:     spec.JUnit,
		Cases:     []string{CorrectnessCaseID},
		Result:    filepath.Join(spec.Artifacts, "result.json"),
		TestFiles: []string{filepath.Join(env.Root, correctnessTest)},
	}, nil
}

func (f Family) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	return family.Command{Args: []string{binary(env), "serve", spec.Bundle,
		"--model-name", spec.Model, "--host", spec.Host, "--port", strconv.Itoa(spec.Port), "--records", spec.Records}}, nil
}

// Native maps every setting the request carried onto the CLI flag of the same name
// (num_inference_steps -> --num-inference-steps); an unknown one fails the run loudly.
func (f Family) Native(env family.Env, spec family.NativeSpec) (family.Command, error) {
	args := []string{binary(env), "run", spec.Bundle, "--image", spec.Image, "--prompt", spec.Prompt, "--output", spec.Output}
	for _, k := range slices.Sorted(maps.Keys(spec.Settings)) {
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-"), spec.Settings[k])
	}
	return family.Command{Args: args}, nil
}

// nativeBatch runs every replay with one load: `refedit run --batch`, which puts each
// item through exactly what `refedit run` does for one.
func (f Family) nativeBatch(env family.Env, spec family.NativeBatchSpec) (family.Command, error) {
	args := []string{binary(env), "run", spec.Bundle, "--batch", spec.Items, "--report", spec.Report}
	if spec.WaitItems > 0 {
		args = append(args, "--wait-items", spec.WaitItems.String())
	}
	return family.Command{Args: args}, nil
}

// image is the FROM scratch image around the binary Tools built; the binary's host path
// names the image's copy.
func (Family) image(env family.Env) (family.ContainerImage, error) {
	return family.ContainerImage{ImageSpec: serving.ImageSpec{Context: imageDir(env), Dockerfile: filepath.Join(imageDir(env), "Dockerfile"),
		Paths: map[string]string{binary(env): inImage}}}, nil
}

func (f Family) timing() schema.TimingSource {
	if f.RecordsTiming {
		return schema.TimingSource{Records: "timing.task_ms", RecordID: "request_id"}
	}
	return schema.TimingSource{Body: "timing.task_ms", Records: "timing.task_ms", RecordID: "request_id"}
}
