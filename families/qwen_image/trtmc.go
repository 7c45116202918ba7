package qwenimage

import (
	"fmt"
	"path/filepath"
	"strconv"

	"qualkit/internal/harness"
)

// Server timeouts in seconds (REFERENCE.md's trtmc-server argv): a cold load of ~57.7 GB
// of weights, and one 20-step edit, both far inside them.
const serverTimeoutS = "1800"

// TRTMC serves the checkpoint with NVIDIA TensorRT-Model-Connect: `build/trtmc build`
// writes the bundle, `trtmc-server` serves it, `trtmc run` is the native Task, and the
// family's pytest e2e case is the correctness case.
type TRTMC struct {
	Config Config
	// configErr is what ParseConfig found wrong; Requirements reports it with everything
	// else missing, so a bad variable fails preflight instead of a package init.
	configErr error
}

// New is the adapter on cfg, with the defaults filled in.
func New(cfg Config) TRTMC { return TRTMC{Config: cfg.withDefaults()} }

// FromEnv is the adapter configured from the environment (see Config).
func FromEnv(getenv func(string) string) TRTMC {
	cfg, err := ParseConfig(getenv)
	a := New(cfg)
	a.configErr = err
	return a
}

func (TRTMC) Backend() string { return "trtmc" }

func (a TRTMC) binary() string { return filepath.Join(a.Config.Checkout, binaryPath) }

// hfEnv keeps every Hugging Face lookup on the local cache at the pinned revision.
func (a TRTMC) hfEnv() []string {
	return []string{"HF_HOME=" + a.Config.HFHome, "HF_HUB_OFFLINE=1"}
}

// Tools builds nothing: TRTMC is built by the user in the checkout. The builder that
// keys the bundle cache is the checkout's build/trtmc, the binary that also builds the
// bundle and that the correctness case runs.
func (a TRTMC) Tools(harness.Env) ([]harness.Command, string) { return nil, a.binary() }

func (TRTMC) BuildSettings() map[string]string {
	return map[string]string{
		"precision":            Precision,
		"image_height":         strconv.Itoa(ImageHeight),
		"image_width":          strconv.Itoa(ImageWidth),
		"num_inference_steps":  strconv.Itoa(NumInferenceSteps),
		"max_cache_length":     strconv.Itoa(MaxCacheLength),
		"model_revision":       Revision,
		"condition_image_size": fmt.Sprintf("%dx%d", ConditionWidth, ConditionHeight),
	}
}

// Build compiles the bundle, its static condition grid taken from spec.Reference.
func (a TRTMC) Build(_ harness.Env, spec harness.BuildSpec) harness.Command {
	return harness.Command{
		Args: []string{a.binary(), "build", HFID, "-o", spec.Out,
			"--precision", Precision,
			"--image-height", strconv.Itoa(ImageHeight),
			"--image-width", strconv.Itoa(ImageWidth),
			"--num-inference-steps", strconv.Itoa(NumInferenceSteps),
			"--max-cache-length", strconv.Itoa(MaxCacheLength),
			"--model-revision", Revision,
		},
		Env: append([]string{conditionEnv + "=" + spec.Reference}, a.hfEnv()...),
		Dir: a.Config.Checkout,
	}
}

// Correctness is TRTMC's own e2e case for the profile, unchanged, on the bundle the
// harness built: it finds it as <engine dir>/qwen-image-edit-2511.bundle and, without
// --rebuild-engines, builds nothing itself. Its gates are the checkout's thresholds file.
func (a TRTMC) Correctness(_ harness.Env, spec harness.CorrectnessSpec) harness.CorrectnessCase {
	cc := harness.CorrectnessCase{
		JUnit:     spec.JUnit,
		Cases:     []string{e2eCaseID},
		Result:    filepath.Join(spec.Artifacts, Profile, "result.json"),
		TestFiles: []string{filepath.Join(a.Config.Checkout, e2eTestPath)},
	}
	if base := filepath.Base(spec.Bundle); base != Profile+".bundle" {
		cc.Command = reject(fmt.Errorf("correctness: the bundle is %s, but TRTMC's case looks for %s.bundle in --engine-dir and would not test this file", spec.Bundle, Profile))
		return cc
	}
	cc.Command = harness.Command{
		Args: []string{a.Config.Python, "-m", "pytest", e2eTestPath, "-v", "-rs",
			"--e2e-model", Profile, "--e2e-testcase", Profile,
			"--engine-dir", filepath.Dir(spec.Bundle),
			"--trtmc-binary", binaryPath,
			"--hf-python", a.Config.HFPython,
			"--e2e-artifacts-dir", spec.Artifacts,
			"--junitxml=" + spec.JUnit,
		},
		Env: a.hfEnv(),
		Dir: a.Config.Checkout,
	}
	return cc
}

// Serve starts trtmc-server on the bundle. It binds only loopback, so the harness runs
// its container with host networking; spec's paths are those the program sees.
func (a TRTMC) Serve(_ harness.Env, spec harness.ServeSpec) harness.Command {
	return harness.Command{Args: []string{a.Config.ServeProgram, spec.Bundle,
		"--model-name", spec.Model,
		"--host", spec.Host,
		"--port", strconv.Itoa(spec.Port),
		"--records", spec.Records,
		"--startup-timeout", serverTimeoutS,
		"--request-timeout", serverTimeoutS,
	}}
}

// Native runs the Task once with the settings the HTTP request carried, each wire field
// mapped to its `trtmc run` flag. A field with no flag makes the command fail with a
// message naming it: dropped, it would make the native run differ from the served one.
func (a TRTMC) Native(_ harness.Env, spec harness.NativeSpec) harness.Command {
	flags, err := NativeFlags(spec.Settings)
	if err != nil {
		return reject(fmt.Errorf("native task: %w", err))
	}
	// The row runs only in containers: the native Task runs in the serving image, with the
	// CLI that came with trtmc-server (same TensorRT).
	args := []string{"trtmc", "run", spec.Bundle, "--prompt", spec.Prompt, "--image", spec.Image}
	args = append(args, flags...)
	return harness.Command{Args: append(args, "--output", spec.Output)}
}

func (a TRTMC) Timing() harness.TimingSource { return a.Config.Timing }

// Image is the serving image: the one the user named, else one built from the Dockerfile
// with the checkout as its context.
func (a TRTMC) Image(harness.Env) harness.ContainerImage {
	if a.Config.Image != "" {
		return harness.ContainerImage{Ref: a.Config.Image}
	}
	return harness.ContainerImage{Dockerfile: a.Config.DockerfilePath(), Context: a.Config.Checkout}
}

// reject is a command that fails at once and says why. Family methods return commands,
// not errors; this keeps a refused input loud in the stage's log and error.
func reject(err error) harness.Command {
	return harness.Command{Args: []string{"/bin/sh", "-c", `printf 'qualkit: %s\n' "$1" >&2; exit 2`, "qualkit-reject", err.Error()}}
}
