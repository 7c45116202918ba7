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

// Where the Task time is reported: perf-serve's body and --records JSONL (app.py @
// 3878755c § execute; the row reads the records); the edit route's is not public, the
// body's by default, configurable (QUALKIT_TRTMC_TIMING_*).
const (
	DefaultTimingBody     = "trtmc_timing.model_call_ms"
	DefaultTimingRecords  = "timing.model_call_ms"
	DefaultTimingRecordID = "request_id"
)

// Config says where the TRTMC pieces are on this host (families/qwen_image/README.md
// lists the variables). ParseConfig reads it from the environment; New fills defaults.
type Config struct {
	Checkout   string // a TRTMC checkout of either layout, mounted at /src
	Image      string // a local image used instead of building Dockerfile
	Dockerfile string // relative to Checkout; default the dev Dockerfile for GOARCH
	// HFHome is a cache root laid out as HF_HOME is, mounted read-only, used offline.
	HFHome string
	// Python builds the bundle and runs pytest; HFPython runs the HF reference
	// (--hf-python). Both inside the image; default python3.
	Python, HFPython string
	Serving          string // perf-serve, edit-route or auto (DetectServing)
	// Timing is where the edit route reports the Task time (perf-serve's is fixed).
	Timing      schema.TimingSource
	BundleCache string // the row's bundles and the builder's temporaries (bundleDir)
	timingSet   bool   // a QUALKIT_TRTMC_TIMING_* variable was given

	// Test hooks, from Go only (the double's table): AssumeSM is the SM to build for
	// without a GPU; ContractDouble expects the double's server (and refuses it otherwise).
	AssumeSM       string
	ContractDouble bool
}

// ParseConfig reads the configuration from getenv; empty is unset, paths must be
// absolute (go test runs in the package's directory). It reports every problem at once,
// and the Config is usable even then.
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

// DevImage is how TRTMC's dev image is built: the Dockerfile, and the folders its context
// is staged from (what the COPY lines name), not the checkout: at e9132e79 the root
// .dockerignore drops requirements/, which the newer Dockerfile (@ 520a0165) expects as
// its context.
func (c Config) DevImage() (dockerfile string, copyRoots []string) {
	c = c.withDefaults()
	return c.DockerfilePath(), []string{c.Checkout, filepath.Join(c.Checkout, "requirements")}
}
