package qwenimage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"qualkit/internal/harness"
)

// Environment variables read by ParseConfig.
const (
	EnvCheckout      = "QUALKIT_TRTMC_DIR"
	EnvImage         = "QUALKIT_TRTMC_IMAGE"
	EnvDockerfile    = "QUALKIT_TRTMC_DOCKERFILE"
	EnvHFCache       = "QUALKIT_HF_CACHE"
	EnvHFHome        = "HF_HOME"
	EnvPython        = "QUALKIT_TRTMC_PYTHON"
	EnvHFPython      = "QUALKIT_TRTMC_HF_PYTHON"
	EnvRunProgram    = "QUALKIT_TRTMC_RUN_PROGRAM"
	EnvServeProgram  = "QUALKIT_TRTMC_SERVE_PROGRAM"
	EnvTimingSource  = "QUALKIT_TRTMC_TIMING_SOURCE"
	EnvTimingBody    = "QUALKIT_TRTMC_TIMING_BODY"
	EnvTimingRecords = "QUALKIT_TRTMC_TIMING_RECORDS"
	EnvTimingID      = "QUALKIT_TRTMC_TIMING_RECORD_ID"
)

// Defaults of the Task-timing source. The image-edit route of trtmc-server is newer than
// the source we could read; these are where TRTMC's measurement server reports the Task
// call (trtmc_timing in the body; timing in its --records JSONL, keyed by request_id).
const (
	DefaultTimingBody     = "trtmc_timing.model_call_ms"
	DefaultTimingRecords  = "timing.model_call_ms"
	DefaultTimingRecordID = "request_id"
)

// Config says where the TRTMC pieces are on this host. ParseConfig reads it from the
// environment; New fills the defaults of fields left empty.
type Config struct {
	// Checkout is a TRTMC source checkout, built so that build/trtmc exists
	// (QUALKIT_TRTMC_DIR). It holds the builder, the correctness case, the family's
	// manifest and thresholds, and by default the serving image's Dockerfile.
	Checkout string
	// Image is a serving image already in the local Docker engine (QUALKIT_TRTMC_IMAGE).
	// Empty: the harness builds the image from Dockerfile.
	Image string
	// Dockerfile builds the serving image when Image is empty (QUALKIT_TRTMC_DOCKERFILE).
	// A relative path is inside Checkout, which is also the build context. Default
	// "Dockerfile", the checkout's own.
	Dockerfile string
	// HFHome is a Hugging Face cache root laid out as HF_HOME is: the checkpoint must be at
	// <HFHome>/hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/<Revision>/. From
	// QUALKIT_HF_CACHE, else HF_HOME, else $XDG_CACHE_HOME/huggingface, else
	// $HOME/.cache/huggingface (huggingface_hub's own default). Build and correctness run
	// with HF_HOME set to it and HF_HUB_OFFLINE=1.
	HFHome string
	// Python runs the correctness case's pytest (QUALKIT_TRTMC_PYTHON). Default
	// <Checkout>/.venv/bin/python, the interpreter TRTMC's model runners look for (else
	// HFPython).
	Python string
	// HFPython is passed as --hf-python: it runs the HF diffusers reference and needs
	// torch, diffusers and ftfy (QUALKIT_TRTMC_HF_PYTHON). Default: Python.
	HFPython string
	// RunProgram is TRTMC's CLI for the native Task (QUALKIT_TRTMC_RUN_PROGRAM). The
	// harness runs the native Task on the host today (NativeSpec has no InContainer), so
	// the default is the checkout's build/trtmc, the binary that built the bundle.
	RunProgram string
	// ServeProgram is TRTMC's server as named inside the serving image
	// (QUALKIT_TRTMC_SERVE_PROGRAM). Default "trtmc-server".
	ServeProgram string
	// Timing is where the server reports the Task call's wall time. From
	// QUALKIT_TRTMC_TIMING_SOURCE: "body" (the default) reads the response body at
	// QUALKIT_TRTMC_TIMING_BODY (default trtmc_timing.model_call_ms); "records" reads the
	// server's --records JSONL at QUALKIT_TRTMC_TIMING_RECORDS (default
	// timing.model_call_ms), joined on QUALKIT_TRTMC_TIMING_RECORD_ID (default request_id)
	// = X-Request-ID. Setting a path of the source not chosen is an error, never ignored.
	Timing harness.TimingSource
}

// ParseConfig reads the configuration from getenv (os.Getenv in the qual table, a map in
// tests). An empty variable counts as unset. Paths must be absolute: go test runs in the
// package's directory, so a relative path would not mean what the user typed. Every
// problem is reported at once; the Config is usable (with defaults) even then.
func ParseConfig(getenv func(string) string) (Config, error) {
	var errs []error
	path := func(name string) string {
		v := getenv(name)
		if v != "" && !filepath.IsAbs(v) {
			errs = append(errs, fmt.Errorf("%s=%s is a relative path: go test runs in the package directory, so give an absolute one (\"$PWD/%s\")", name, v, v))
		}
		return v
	}
	c := Config{
		Checkout:     path(EnvCheckout),
		Image:        getenv(EnvImage),
		Dockerfile:   getenv(EnvDockerfile),
		Python:       path(EnvPython),
		HFPython:     path(EnvHFPython),
		RunProgram:   getenv(EnvRunProgram),
		ServeProgram: getenv(EnvServeProgram),
	}
	switch {
	case getenv(EnvHFCache) != "":
		c.HFHome = path(EnvHFCache)
	case getenv(EnvHFHome) != "":
		c.HFHome = path(EnvHFHome)
	case getenv("XDG_CACHE_HOME") != "":
		c.HFHome = filepath.Join(path("XDG_CACHE_HOME"), "huggingface")
	case getenv("HOME") != "":
		c.HFHome = filepath.Join(path("HOME"), ".cache", "huggingface")
	default:
		errs = append(errs, fmt.Errorf("no Hugging Face cache: set %s (or HF_HOME) to the cache holding %s", EnvHFCache, HFID))
	}
	ts, err := timingFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Timing = ts
	return c, errors.Join(errs...)
}

func timingFromEnv(getenv func(string) string) (harness.TimingSource, error) {
	body, records, id := getenv(EnvTimingBody), getenv(EnvTimingRecords), getenv(EnvTimingID)
	switch src := strings.ToLower(getenv(EnvTimingSource)); src {
	case "", "body":
		if records != "" || id != "" {
			return harness.TimingSource{Body: DefaultTimingBody}, fmt.Errorf("%s or %s is set but %s is %q (body): set %s=records to read the records file",
				EnvTimingRecords, EnvTimingID, EnvTimingSource, "body", EnvTimingSource)
		}
		return harness.TimingSource{Body: or(body, DefaultTimingBody)}, nil
	case "records":
		if body != "" {
			return harness.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID},
				fmt.Errorf("%s is set but %s=records: unset one of them", EnvTimingBody, EnvTimingSource)
		}
		return harness.TimingSource{Records: or(records, DefaultTimingRecords), RecordID: or(id, DefaultTimingRecordID)}, nil
	default:
		return harness.TimingSource{Body: DefaultTimingBody}, fmt.Errorf("%s=%q: choose body or records", EnvTimingSource, src)
	}
}

// withDefaults fills the fields a user may leave empty.
func (c Config) withDefaults() Config {
	c.Dockerfile = or(c.Dockerfile, "Dockerfile")
	if c.Python == "" && c.Checkout != "" {
		c.Python = filepath.Join(c.Checkout, ".venv", "bin", "python")
	}
	c.Python = or(c.Python, c.HFPython)
	c.HFPython = or(c.HFPython, c.Python)
	if c.RunProgram == "" && c.Checkout != "" {
		c.RunProgram = filepath.Join(c.Checkout, binaryPath)
	}
	c.RunProgram = or(c.RunProgram, "trtmc")
	c.ServeProgram = or(c.ServeProgram, "trtmc-server")
	if c.Timing == (harness.TimingSource{}) {
		c.Timing = harness.TimingSource{Body: DefaultTimingBody}
	}
	return c
}

// DockerfilePath is the Dockerfile the serving image is built from, when Image is empty.
func (c Config) DockerfilePath() string {
	if filepath.IsAbs(c.Dockerfile) {
		return c.Dockerfile
	}
	return filepath.Join(c.Checkout, c.Dockerfile)
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
