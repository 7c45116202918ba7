package qwenimage

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"qualkit/internal/schema"
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
	EnvServing       = "QUALKIT_TRTMC_SERVING"
	EnvTimingSource  = "QUALKIT_TRTMC_TIMING_SOURCE"
	EnvTimingBody    = "QUALKIT_TRTMC_TIMING_BODY"
	EnvTimingRecords = "QUALKIT_TRTMC_TIMING_RECORDS"
	EnvTimingID      = "QUALKIT_TRTMC_TIMING_RECORD_ID"
)

// Where the Task call's wall time is reported. perf-serve states it (app.py @ 3878755c
// § execute, Records): trtmc_timing.model_call_ms in the body, and timing.model_call_ms
// in its --records JSONL keyed by request_id, one line per successful request; the row
// reads the records. The edit route's is not public: the body's trtmc_timing by default,
// configurable (QUALKIT_TRTMC_TIMING_*).
const (
	DefaultTimingBody     = "trtmc_timing.model_call_ms"
	DefaultTimingRecords  = "timing.model_call_ms"
	DefaultTimingRecordID = "request_id"
)

// Config says where the TRTMC pieces are on this host and which serving shape to expect.
// ParseConfig reads it from the environment; New fills the defaults.
type Config struct {
	// Checkout is a TRTMC source checkout of either layout (QUALKIT_TRTMC_DIR). Every
	// stage runs in the image built from its dev Dockerfile, the checkout mounted at /src
	// as TRTMC's source-build.md does, and the native runtime built there by the harness.
	Checkout string
	// Image is an image already in the local Docker engine (QUALKIT_TRTMC_IMAGE), used
	// instead of building the Dockerfile: TRTMC's dev image with what the correctness
	// case needs added (families/qwen_image/docker/Dockerfile.reference).
	Image string
	// Dockerfile builds the image when Image is empty (QUALKIT_TRTMC_DOCKERFILE). A
	// relative path is inside Checkout, the build context. Default: the dev Dockerfile
	// for this machine's architecture (Dockerfile.dev.x86, Dockerfile.dev.aarch64).
	Dockerfile string
	// HFHome is a Hugging Face cache root laid out as HF_HOME is: the checkpoint must be at
	// <HFHome>/hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/<Revision>/. From
	// QUALKIT_HF_CACHE, else HF_HOME, else $XDG_CACHE_HOME/huggingface, else
	// $HOME/.cache/huggingface. It is mounted read-only, and every stage runs with
	// HF_HOME set to it and HF_HUB_OFFLINE=1.
	HFHome string
	// Python is the image's interpreter that builds the bundle and runs pytest
	// (QUALKIT_TRTMC_PYTHON); HFPython runs the HF diffusers reference (--hf-python,
	// QUALKIT_TRTMC_HF_PYTHON). Both are names or paths inside the image. Default
	// python3 (the dev image's /opt/venv).
	Python, HFPython string
	// Serving is the serving contract to drive (QUALKIT_TRTMC_SERVING): "perf-serve",
	// "edit-route", or "auto" (the default): the one the checkout's source has, the edit
	// route first (see DetectServing).
	Serving string
	// Timing is where the edit route's server reports the Task call's wall time. From
	// QUALKIT_TRTMC_TIMING_SOURCE: "body" (the default) reads the response body at
	// QUALKIT_TRTMC_TIMING_BODY (default trtmc_timing.model_call_ms); "records" reads the
	// server's --records JSONL at QUALKIT_TRTMC_TIMING_RECORDS (default
	// timing.model_call_ms), joined on QUALKIT_TRTMC_TIMING_RECORD_ID (default request_id)
	// = X-Request-ID. Setting a path of the source not chosen is an error, never ignored.
	// perf-serve's is fixed (its records); setting one for it is an error too.
	Timing schema.TimingSource
	// BundleCache is the folder for the row's bundles and the builder's temporaries
	// (QUALKIT_TRTMC_BUNDLE_CACHE; default <repository>/.cache/bundles): see bundleDir.
	BundleCache string
	// timingSet: a QUALKIT_TRTMC_TIMING_* variable was given.
	timingSet bool

	// Test hooks, settable only from Go (never from the environment): the contract
	// double's table sets them. AssumeSM is the GPU architecture ("90") to build the
	// native runtime for when the row has no GPU; ContractDouble expects a server that
	// says it is qualkit's contract double (and refuses one otherwise).
	AssumeSM       string
	ContractDouble bool
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
		Checkout:    path(EnvCheckout),
		Image:       getenv(EnvImage),
		Dockerfile:  getenv(EnvDockerfile),
		Python:      getenv(EnvPython),
		HFPython:    getenv(EnvHFPython),
		Serving:     getenv(EnvServing),
		BundleCache: path(EnvBundleCache),
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
	switch c.Serving {
	case "", ServingAuto, ServingPerfServe, ServingEditRoute:
	default:
		errs = append(errs, fmt.Errorf("%s=%q: choose %s, %s or %s", EnvServing, c.Serving, ServingAuto, ServingPerfServe, ServingEditRoute))
	}
	for _, k := range []string{EnvTimingSource, EnvTimingBody, EnvTimingRecords, EnvTimingID} {
		c.timingSet = c.timingSet || getenv(k) != ""
	}
	ts, err := timingFromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c.Timing = ts
	return c, errors.Join(errs...)
}

func timingFromEnv(getenv func(string) string) (schema.TimingSource, error) {
	body, records, id := getenv(EnvTimingBody), getenv(EnvTimingRecords), getenv(EnvTimingID)
	switch src := strings.ToLower(getenv(EnvTimingSource)); src {
	case "", "body":
		if records != "" || id != "" {
			return schema.TimingSource{Body: DefaultTimingBody}, fmt.Errorf("%s or %s is set but %s is %q (body): set %s=records to read the records file",
				EnvTimingRecords, EnvTimingID, EnvTimingSource, "body", EnvTimingSource)
		}
		return schema.TimingSource{Body: cmp.Or(body, DefaultTimingBody)}, nil
	case "records":
		if body != "" {
			return schema.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID},
				fmt.Errorf("%s is set but %s=records: unset one of them", EnvTimingBody, EnvTimingSource)
		}
		return schema.TimingSource{Records: cmp.Or(records, DefaultTimingRecords), RecordID: cmp.Or(id, DefaultTimingRecordID)}, nil
	default:
		return schema.TimingSource{Body: DefaultTimingBody}, fmt.Errorf("%s=%q: choose body or records", EnvTimingSource, src)
	}
}

// devDockerfile is TRTMC's dev Dockerfile for an architecture (source-build.md:22-28:
// x86_64 -> Dockerfile.dev.x86, aarch64 -> Dockerfile.dev.aarch64), "" for others.
func devDockerfile(goarch string) string {
	switch goarch {
	case "amd64":
		return "Dockerfile.dev.x86"
	case "arm64":
		return "Dockerfile.dev.aarch64"
	}
	return ""
}

// withDefaults fills the fields a user may leave empty.
func (c Config) withDefaults() Config {
	c.Dockerfile = cmp.Or(c.Dockerfile, devDockerfile(runtime.GOARCH))
	c.Python = cmp.Or(c.Python, "python3")
	c.HFPython = cmp.Or(c.HFPython, c.Python)
	c.Serving = cmp.Or(c.Serving, ServingAuto)
	if c.Timing == (schema.TimingSource{}) {
		c.Timing = schema.TimingSource{Body: DefaultTimingBody}
	}
	return c
}

// DockerfilePath is the Dockerfile the image is built from, when Image is empty.
func (c Config) DockerfilePath() string {
	if c.Dockerfile == "" || filepath.IsAbs(c.Dockerfile) {
		return c.Dockerfile
	}
	return filepath.Join(c.Checkout, c.Dockerfile)
}

// DevImage is how TRTMC's dev image is built (by the row when Image is empty, and by
// `make trtmc-image`): the Dockerfile, and the folders its build context is staged from.
// Not the checkout as context, as source-build.md's `docker build -f Dockerfile.dev.x86 .`
// does: at e9132e79 the root .dockerignore (`*` and an allow-list) drops requirements/,
// which that Dockerfile copies from; the newer Dockerfile (@ 520a0165) copies
// community-ci.txt and expects requirements/ as its context. The context is staged with
// exactly what the COPY lines name, from the first of these folders that holds them all.
func (c Config) DevImage() (dockerfile string, copyRoots []string) {
	c = c.withDefaults()
	return c.DockerfilePath(), []string{c.Checkout, filepath.Join(c.Checkout, "requirements")}
}
