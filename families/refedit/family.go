// Package refedit is the harness adapter of the reference image-edit family: the argv
// of its build, serve, native-task and correctness programs. The family's code lives in
// edit/, server/ and cmd/refedit; its correctness case in correctness/.
package refedit

import (
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"qualkit/internal/harness"
)

// Family is the reference family with the build settings baked into its bundle.
type Family struct {
	NumInferenceSteps int
	GuidanceScale     float64
	Seed              int64
}

// Default is the bundle the embedded reference row qualifies.
var Default = Family{NumInferenceSteps: 4, GuidanceScale: 1.0, Seed: 0}

func (Family) Backend() string { return "refedit" }

func binary(env harness.Env) string { return filepath.Join(env.Work, "refedit") }

// Tools builds the static refedit binary from this checkout, so the evidence names the
// exact builder (its hash is part of the bundle cache key).
func (Family) Tools(env harness.Env) ([]harness.Command, string) {
	return []harness.Command{{
		Args: []string{"go", "build", "-trimpath", "-o", binary(env), "./families/refedit/cmd/refedit"},
		Env:  []string{"CGO_ENABLED=0"},
		Dir:  env.Root,
	}}, binary(env)
}

func (f Family) BuildSettings() map[string]string {
	return map[string]string{
		"num_inference_steps": strconv.Itoa(f.NumInferenceSteps),
		"guidance_scale":      strconv.FormatFloat(f.GuidanceScale, 'f', -1, 64),
		"seed":                strconv.FormatInt(f.Seed, 10),
	}
}

func (f Family) Build(env harness.Env, spec harness.BuildSpec) harness.Command {
	return harness.Command{Args: []string{binary(env), "build", "-o", spec.Out,
		"--num-inference-steps", strconv.Itoa(f.NumInferenceSteps),
		"--guidance-scale", strconv.FormatFloat(f.GuidanceScale, 'f', -1, 64),
		"--seed", strconv.FormatInt(f.Seed, 10),
	}}
}

// Correctness is the family's pytest case: one item comparing native outputs of the
// bundle with an independent float64 NumPy implementation.
func (Family) Correctness(env harness.Env, spec harness.CorrectnessSpec) harness.CorrectnessCase {
	return harness.CorrectnessCase{
		Command: harness.Command{
			Args: []string{env.Python, "-m", "pytest", "families/refedit/correctness/test_refedit_e2e.py",
				"-v", "-rs", "-p", "no:cacheprovider", "--rootdir", env.Root,
				"--refedit-binary", binary(env), "--bundle", spec.Bundle,
				"--artifacts-dir", spec.Artifacts, "--junitxml=" + spec.JUnit},
			Dir: env.Root,
		},
		JUnit:    spec.JUnit,
		Expected: 1,
		Result:   filepath.Join(spec.Artifacts, "result.json"),
	}
}

func (Family) Serve(env harness.Env, spec harness.ServeSpec) harness.Command {
	return harness.Command{Args: []string{binary(env), "serve", spec.Bundle,
		"--model-name", spec.Model, "--host", spec.Host, "--port", strconv.Itoa(spec.Port), "--records", spec.Records}}
}

// Native maps every setting the request carried onto the CLI flag of the same name
// (num_inference_steps -> --num-inference-steps); an unknown one fails the run loudly.
func (Family) Native(env harness.Env, spec harness.NativeSpec) harness.Command {
	args := []string{binary(env), "run", spec.Bundle, "--image", spec.Image, "--prompt", spec.Prompt, "--output", spec.Output}
	keys := make([]string, 0, len(spec.Settings))
	for k := range spec.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--"+strings.ReplaceAll(k, "_", "-"), spec.Settings[k])
	}
	return harness.Command{Args: args}
}

func (Family) Timing() harness.TimingSource { return harness.TimingSource{Body: "timing.task_ms"} }
