// Package refedit is the harness adapter of the reference image-edit family: the argv
// of its build, serve, native-task and correctness programs. The family's code lives in
// edit/, server/ and cmd/refedit; its correctness case in correctness/.
package refedit

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"qualkit/families/refedit/edit"
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
		// GET /v1/models names the bundle's checkpoint beside the row's --model-name: a row
		// copied under another model's name fails at serve.
		Identity:            family.ModelsWithCheckpoint,
		Image:               f.image,
		Build:               f.build,
		NativeBatch:         f.nativeBatch,
		BatchWaits:          true,
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
// bundle with an independent float64 NumPy implementation. It runs with no pytest plugin
// (NoPluginsEnv), so what the venv holds cannot change it: AIPerf 0.13.0's dependencies
// bring four, whose loading took 1.1 s of the case's 1.5 s start (measured 2026-12-04).
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

// image is the FROM scratch image around the binary Tools built.
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

const qualityFile = "families/refedit/quality.json"

// quality reads the family's criteria from quality.json and names the pair its
// correctness case also runs (photo-grayscale; the case writes pairReference).
func quality(env family.Env) (family.QualitySpec, error) {
	path := filepath.Join(env.Root, qualityFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return family.QualitySpec{}, err
	}
	var f struct {
		PixelMean struct{ Min, Max *float64 } `json:"pixel_mean"`
		PixelStd  struct{ Min *float64 }      `json:"pixel_std"`
		StdRatio  struct {
			Min          *float64 `json:"min"`
			WhenInputStd float64  `json:"when_input_std_at_least"`
		} `json:"std_ratio"`
		Pair struct {
			PSNRMin *float64 `json:"psnr_min"`
			SSIMMin *float64 `json:"ssim_min"`
		} `json:"pair"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return family.QualitySpec{}, fmt.Errorf("%s: %w", qualityFile, err)
	}
	c := schema.QualityCriteria{MeanMin: f.PixelMean.Min, MeanMax: f.PixelMean.Max, StdMin: f.PixelStd.Min,
		StdRatioMin: f.StdRatio.Min, StdRatioWhenInputStd: f.StdRatio.WhenInputStd, PSNRMin: f.Pair.PSNRMin, SSIMMin: f.Pair.SSIMMin}
	if c.MeanMin == nil || c.MeanMax == nil || c.StdMin == nil || c.StdRatioMin == nil || c.PSNRMin == nil || c.SSIMMin == nil {
		return family.QualitySpec{}, fmt.Errorf("%s: pixel_mean.min/max, pixel_std.min, std_ratio.min and pair.psnr_min/ssim_min are required", qualityFile)
	}
	return family.QualitySpec{Files: []string{path}, Criteria: c, Pair: &family.QualityPair{
		Image:     filepath.Join(env.Root, "fixtures", "images", "photo-640x382.png"),
		Prompt:    "Turn this photo into black and white",
		Reference: pairReference,
	}}, nil
}

// Controls are the settings refedit-v1 supports, read from its own parsers (each
// control's Source). Each probe instruction picks the edit where the control matters.
// Steps are measured by the edit's CPU time (timing.task_cpu_ms): on a host loaded 5
// times over, the wall time of equal work varied from 345 to 2102 ms. The CPU time of
// equal work varies too: in a container at load 34-38 on 2 cores (two make tests beside
// stress-ng), one pair of a server that ignores the steps measured up to 1.65 and an
// honest server's 25 and 50 passes 1.09-2.83, so 25 and 50 with a band of 1.4-2.4 let
// an ignoring server through once (3 of 5 pairs high). 10 and 100 passes: the honest
// server's median of 5 pairs 6.49-7.21 there, the ignoring one's 0.94-1.06.
func Controls() *schema.Controls {
	d, l := edit.BuiltinDefaults(), edit.Build(edit.BuiltinDefaults()).Limits
	return &schema.Controls{
		Source: "families/refedit/edit/compile.go ParseSettings, server/form.go readForm and openAIChoices",
		Controls: []schema.Control{
			{Field: edit.FieldSize, Effect: schema.EffectSize, Allowed: "WxH or auto", Default: "the input's size",
				Values: [2]string{"512x512", "384x256"}, Invalid: []string{"9000x9000", "0x512"},
				Recorded: []string{"settings.width", "settings.height"}, Source: "edit/compile.go parseSize"},
			{Field: edit.FieldNumInferenceSteps, Effect: schema.EffectSteps, Allowed: "1-" + strconv.Itoa(l.MaxNumInferenceSteps), Default: strconv.Itoa(d.NumInferenceSteps),
				Values: [2]string{"10", "100"}, Prompt: "Blur the whole image", Invalid: []string{"0", strconv.Itoa(l.MaxNumInferenceSteps + 1)},
				Recorded: []string{"settings.num_inference_steps"}, Source: "edit/compile.go ParseSettings; edit/ops.go boxBlurOp: one blur pass per step"},
			{Field: edit.FieldGuidanceScale, Effect: schema.EffectPixels, Allowed: "(0, " + strconv.FormatFloat(l.MaxGuidanceScale, 'f', -1, 64) + "]",
				Default: strconv.FormatFloat(d.GuidanceScale, 'f', -1, 64), Values: [2]string{"1.0", "2.0"}, Invalid: []string{"-1", "0"},
				Recorded: []string{"settings.guidance_scale"}, Source: "edit/compile.go ParseSettings; edit/pipeline.go blend"},
			{Field: edit.FieldSeed, Effect: schema.EffectSeed, Allowed: "0-9223372036854775807", Default: strconv.FormatUint(d.Seed, 10),
				Values: [2]string{"42", "7"}, Prompt: "Add film grain to the photo", Invalid: []string{"-1"},
				Recorded: []string{"settings.seed"}, Source: "edit/compile.go ParseSettings; edit/ops.go grainOp"},
			{Field: "quality", Effect: schema.EffectNoop, Allowed: "auto|low|medium|high|xhigh|max|standard",
				Values: [2]string{"low", "high"}, Recorded: []string{"ignored.quality"}, Source: "server/form.go openAIChoices: the edit is exact at every quality"},
		},
		Refused: []schema.Refusal{
			{Field: "negative_prompt", Value: "blurry", Why: "refedit has no negative prompt: server/form.go readForm refuses the unknown field"},
			{Field: "true_cfg_scale", Value: "4.0", Why: "refedit has one guidance: server/form.go readForm refuses the unknown field"},
			{Field: "mask", Value: "x", Why: "server/form.go openAIRefused: refedit edits the whole image"},
			{Field: "qualkit_unknown_control", Value: "1", Why: "a field no server knows: server/form.go readForm refuses it"},
		},
		StepRatio:       [2]float64{3, 12},
		StepTime:        "timing.task_cpu_ms",
		Precision:       edit.Precision,
		PrecisionRecord: "settings.precision",
	}
}
