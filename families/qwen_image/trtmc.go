package qwenimage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// Server timeouts in seconds, far above a cold ~57.7 GB load and one 20-step edit.
const serverTimeoutS = "1800"

// maxBodyFloor is the smallest --max-body-bytes the row gives trtmc-server: its own
// default (1 MiB, cli.py @ a9ed5f69) is smaller than one 1024x1024 PNG edit.
const maxBodyFloor = 4 << 20

// TRTMC serves the checkpoint with NVIDIA TensorRT-Model-Connect as TRTMC documents:
// every stage in the checkout's dev image, the native runtime built for the GPU's SM,
// the family's e2e case unchanged as the correctness case, TRTMC's server and CLI.
type TRTMC struct {
	Config    Config
	configErr error // ParseConfig's; Requirements reports it, so preflight fails
}

var _ family.Family = TRTMC{}

// New is the adapter on cfg, with the defaults filled in.
func New(cfg Config) TRTMC { return TRTMC{Config: cfg.withDefaults()} }

// FromEnv is the adapter configured from the environment (see Config).
func FromEnv(getenv func(string) string) TRTMC {
	cfg, err := ParseConfig(getenv)
	a := New(cfg)
	a.configErr = err
	return a
}

// BackendTRTMC is the name the evidence checker knows TRTMC's rules by.
const BackendTRTMC = "trtmc"

// Describe states TRTMC's facts for the row, read from the checkout; one it cannot read
// leaves defaults, and Requirements says what is missing.
func (a TRTMC) Describe(env family.Env, row family.Row) (family.Spec, error) {
	l, lerr := a.layout()
	spec := family.Spec{
		Backend:      BackendTRTMC,
		Timing:       a.timing(),
		Wire:         a.protocol(),
		Identity:     family.IdentityCheck{Path: a.identityPath(), Check: a.checkIdentity},
		Image:        a.image,
		BundleDir:    a.bundleDir(env),
		Deadlines:    a.stageDeadlines,
		Found:        a.found(),
		Requirements: func(env family.Env) []family.Requirement { return a.requirements(env, row) },
		Probes:       a.probes,
		CheckTools:   a.checkTools,
		Quality:      func(env family.Env) (family.QualitySpec, error) { return a.quality(env, row) },
	}
	if lerr != nil || !l.buildsOwnBundle() {
		spec.Build = a.build
	}
	if lerr == nil && l.Name == LayoutFamilies && WorkerServes(a.Config.Checkout) {
		spec.NativeBatch = a.nativeBatch
	}
	if s, err := a.serving(); err == nil {
		spec.Controls = TRTMCControls(s.Contract)
	}
	return spec, nil
}

// perfServe says whether the checkout serves through perf-serve.
func (a TRTMC) perfServe() bool {
	s, err := a.serving()
	return err == nil && s.Contract == ServingPerfServe
}

func (a TRTMC) layout() (Layout, error) { return DetectLayout(a.Config.Checkout) }

// env is every TRTMC command's environment: the checkout's editable install as
// PYTHONPATH, the HF cache offline, no bytecode in the mounted checkout.
func (a TRTMC) env(env family.Env) []string { return a.envWith(env, nil) }

// envWith is env with the checkout's folders first on PYTHONPATH (a server's own).
func (a TRTMC) envWith(env family.Env, first []string) []string {
	out := []string{"HF_HOME=" + a.Config.HFHome, "HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1", "TMPDIR=" + a.tmpDir(env)}
	if l, err := a.layout(); err == nil {
		var paths []string
		for _, p := range append(append([]string{}, first...), l.PythonPath...) {
			if p := filepath.Join(srcDir, p); !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
		out = append(out, "PYTHONPATH="+strings.Join(paths, ":"))
		if n, err := a.native(env); err == nil {
			out = append(out, "TRTMC_MODEL_PLUGIN_DIR="+filepath.Join(n.dir, l.PluginDir))
		}
	}
	return out
}

// buildSettings are everything the bundle depends on besides the build's own stamp.
func (a TRTMC) buildSettings(env family.Env) map[string]string {
	s := map[string]string{"precision": Precision, "model_revision": Revision}
	l, err := a.layout()
	if err != nil {
		s["layout"] = "unknown: " + err.Error()
		return s
	}
	s["layout"] = l.Name
	if n, err := a.native(env); err == nil {
		s["trtmc_commit"], s["trtmc_changes"], s["image_id"], s["sm"], s["native_key"] = n.Source.Commit, n.Source.Dirty, n.ImageID, n.SM, n.Key
	}
	for key, rel := range map[string]string{"manifest_sha256": l.Manifest, "thresholds_sha256": l.Thresholds, "e2e_model_sha256": l.E2EModel} {
		if rel != "" {
			s[key] = fileSHA(filepath.Join(a.Config.Checkout, rel))
		}
	}
	if m, err := ReadManifest(a.Config.Checkout, l); err == nil {
		if img, err := m.conditionImage(a.Config.Checkout, l); err == nil {
			s["condition_image_sha256"] = fileSHA(img)
		}
		if l.Name == LayoutE9132e79 {
			if args, envs, err := buildArgs(a.Config.Checkout, l, m, "BUNDLE", "TIMING"); err == nil {
				s["build_argv"] = strings.Join(args, " ")
				s["build_env"] = strings.Join(envs, " ")
			}
		}
	}
	return s
}

// build runs TRTMC's Python builder as its e2e orchestrator does (e9132e79 layout; in
// the newer layout the family's case builds its bundle itself: Describe gives no Build).
func (a TRTMC) build(env family.Env, spec family.BuildSpec) (family.Command, error) {
	l, err := a.layout()
	if err != nil {
		return family.Command{}, err
	}
	m, err := ReadManifest(a.Config.Checkout, l)
	if err != nil {
		return family.Command{}, err
	}
	n, err := a.native(env)
	if err != nil {
		return family.Command{}, fmt.Errorf("build: %w", err)
	}
	args, envs, err := buildArgs(a.Config.Checkout, l, m, spec.Out, filepath.Join(filepath.Dir(spec.Out), "build_timing.json"))
	if err != nil {
		return family.Command{}, fmt.Errorf("build: %w", err)
	}
	// orchestrator.py:402-410: the Python builder finds libtrtmc_backend_trt.so here.
	envs = append(envs, "_TRTMC_INTERNAL_NATIVE_BIN_DIR="+n.dir)
	return family.Command{Args: append([]string{a.Config.Python}, args...), Env: append(a.env(env), envs...), Dir: a.Config.Checkout}, nil
}

// Correctness is the family's own e2e case for the profile, unchanged, by node id. At
// e9132e79 it runs on the harness's bundle (<engine dir>/<profile>.bundle); in the newer
// layout it builds the bundle served under --basetemp.
func (a TRTMC) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	l, err := a.layout()
	if err != nil {
		return family.CorrectnessCase{}, err
	}
	cc := family.CorrectnessCase{JUnit: spec.JUnit, Cases: []string{l.CaseID},
		TestFiles: []string{filepath.Join(a.Config.Checkout, l.TestFile)}}
	n, err := a.native(env)
	if err != nil {
		return family.CorrectnessCase{}, fmt.Errorf("correctness: %w", err)
	}
	args := []string{a.Config.Python, "-m", "pytest", l.NodeID, "-v", "-rs", "-p", "no:cacheprovider"}
	envs := a.env(env)
	switch l.Name {
	case LayoutE9132e79:
		if base := filepath.Base(spec.Bundle); base != Profile+".bundle" {
			return family.CorrectnessCase{}, fmt.Errorf("correctness: the bundle is %s, but TRTMC's case looks for %s.bundle in --engine-dir and would not test this file", spec.Bundle, Profile)
		}
		cc.Result = filepath.Join(spec.Artifacts, Profile, "result.json")
		args = append(args, "--e2e-model", Profile, "--e2e-testcase", Profile,
			"--engine-dir", filepath.Dir(spec.Bundle),
			"--trtmc-binary", filepath.Join(n.dir, "trtmc"),
			"--hf-python", a.Config.HFPython,
			"--model-plugin-dir", filepath.Join(n.dir, "models"),
			"--e2e-artifacts-dir", spec.Artifacts)
	case LayoutFamilies:
		basetemp := filepath.Join(spec.Scratch, "basetemp")
		// pytest names tmp_path after the test (truncated): test_official_checkpoint_e2e_q0.
		cc.Bundle = filepath.Join(basetemp, "test_official_checkpoint_e2e*", Profile+".bundle")
		args = append(args, "--e2e-testcase", Profile, "--basetemp="+basetemp, "-o", "tmp_path_retention_policy=all")
		envs = append(envs,
			"TRTMC_BINARY="+filepath.Join(n.dir, "trtmc"),
			"TRTMC_RUNTIME_ROOT="+n.dir,
			"TRTMC_NATIVE_BUILD_DIR="+n.dir,
			"TRTMC_QWEN_IMAGE_MODEL_DIR="+SnapshotDir(a.Config.HFHome),
			"TRTMC_E2E_ARTIFACT_DIR="+spec.Artifacts,
			// The plugin takes only a 40-hex commit; git cannot read /src in the container.
			"TRTMC_E2E_SOURCE_REVISION="+n.Source.Commit)
		// The e2e evidence plugin (tools/e2e_evidence.py @ e2c6fa14, imported by
		// test_e2e.py @ f0a1b69f) writes <artifacts>/evidence/qwen_image/<case>/
		// evidence.json, status "passed"; an older checkout has none.
		if isFile(filepath.Join(a.Config.Checkout, evidencePlugin)) {
			cc.Result = filepath.Join(spec.Artifacts, "evidence", "qwen_image", Profile, "evidence.json")
			cc.ResultPass = "passed"
			cc.TestFiles = append(cc.TestFiles, filepath.Join(a.Config.Checkout, evidencePlugin))
		}
	}
	cc.Command = family.Command{Args: append(args, "--junitxml="+spec.JUnit), Env: envs, Dir: a.Config.Checkout}
	return cc, nil
}

// Serve starts the contract's server (DetectServing), on loopback (host networking):
// perf-serve `python3 -m trtmc_perf_serving serve` (cli.py @ 3878755c) with its
// PYTHONPATH (README @ 8bd797ae) from the checkout root; or the native trtmc-server,
// which passes --worker-binary itself (main.cpp @ 0f958bfb), flags of cli.py @ a9ed5f69.
func (a TRTMC) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	n, err := a.native(env)
	if err != nil {
		return family.Command{}, fmt.Errorf("serve: %w", err)
	}
	s, err := a.serving()
	if err != nil {
		return family.Command{}, fmt.Errorf("serve: %w", err)
	}
	if s.Contract == ServingPerfServe {
		return family.Command{Args: append([]string{a.Config.Python, "-m", "trtmc_perf_serving", "serve"}, PerfServeArgs(spec, n.dir)...),
			Env: a.envWith(env, perfServePythonPath), Dir: a.Config.Checkout}, nil
	}
	return family.Command{Args: append([]string{filepath.Join(n.dir, "trtmc-server")}, serverArgs(spec, n.dir)...), Env: a.env(env), Dir: a.Config.Checkout}, nil
}

// PerfServeArgs are perf-serve's arguments after `serve` (its --help must show the
// flags). --revision is the row's: latent replay reads the configs at
// `profile.model.hf_revision or --revision` (cli.py @ 3878755c § serve) offline
// (latents.py @ d3e1a549 § snapshot), the manifest pins none (qwen-image-edit-2511.json
// @ d46edb11), and a cache `hf download --revision` filled has no refs/main; TRTMC's
// launcher passes it so (apps/aiperf_qual/trtmc_aiperf_qual/services.py @ a9ed5f69).
func PerfServeArgs(spec family.ServeSpec, runtimeRoot string) []string {
	return perfServeArgs(spec, "trtmc", []string{"--revision", Revision},
		"--bundle", spec.Bundle, "--runtime-root", runtimeRoot, "--worker", filepath.Join(runtimeRoot, "trtmc_benchmark_worker"))
}

// perfServeArgs are perf-serve's arguments after `serve` for either backend.
func perfServeArgs(spec family.ServeSpec, backend string, revision []string, model ...string) []string {
	args := append(append([]string{"--backend", backend, "--profile", Profile}, revision...), "--manifest-root", "families")
	return append(append(args, model...), "--model-name", spec.Model, "--host", spec.Host, "--port", strconv.Itoa(spec.Port),
		"--records", spec.Records, "--scratch", spec.Scratch, "--keep-artifacts", "--request-timeout", serverTimeoutS)
}

// serverArgs are trtmc-server's arguments (cli.py @ a9ed5f69); --worker-binary is the
// native binary's to add.
func serverArgs(spec family.ServeSpec, runtimeRoot string) []string {
	maxBody := max(2*spec.MaxRequestBytes, maxBodyFloor)
	return []string{spec.Bundle, "--model-name", spec.Model, "--host", spec.Host, "--port", strconv.Itoa(spec.Port),
		"--runtime-root", runtimeRoot, "--records", spec.Records, "--startup-timeout", serverTimeoutS,
		"--request-timeout", serverTimeoutS, "--max-body-bytes", strconv.FormatInt(maxBody, 10)}
}

// serveFlags are the flags of args, which the server's --help must show.
func serveFlags(args []string) []string {
	var flags []string
	for _, arg := range args {
		if strings.HasPrefix(arg, "--") {
			flags = append(flags, arg)
		}
	}
	return flags
}

// Native runs the Task once with the request's settings as CLI flags: `trtmc run` at
// e9132e79 (src/cli/args.cpp), `trtmc generate-image` in the newer layout
// (apps/cli/cli.cpp). A field with no flag fails, naming it.
func (a TRTMC) Native(env family.Env, spec family.NativeSpec) (family.Command, error) {
	l, err := a.layout()
	if err != nil {
		return family.Command{}, err
	}
	n, err := a.native(env)
	if err != nil {
		return family.Command{}, fmt.Errorf("native task: %w", err)
	}
	flags, err := NativeFlags(l.Name, spec.Settings)
	if err != nil {
		return family.Command{}, fmt.Errorf("native task: %w", err)
	}
	if spec.LatentSeed != nil {
		return family.Command{}, fmt.Errorf("native task: the request had the server replay latent_seed %d, which one `trtmc` call per replay cannot take here: the checkout's persistent worker replays it (apps/benchmark/native/benchmark_worker.cpp with --serve)", *spec.LatentSeed)
	}
	cli := filepath.Join(n.dir, "trtmc")
	args := []string{cli, "run", spec.Bundle}
	if l.Name == LayoutFamilies {
		args = []string{cli, "generate-image", spec.Bundle, "--runtime-root", n.dir}
	}
	args = append(append(args, "--prompt", spec.Prompt, "--image", spec.Image), flags...)
	return family.Command{Args: append(args, "--output", spec.Output), Env: a.env(env), Dir: a.Config.Checkout}, nil
}

// timing is where the server reports the Task call: perf-serve's records (app.py @
// 3878755c § execute); for the edit route, as configured (its shape is not public).
func (a TRTMC) timing() schema.TimingSource {
	if a.perfServe() {
		return perfServeTiming
	}
	return a.Config.Timing
}

// protocol is perf-serve's task route, or the edit route's OpenAI images route.
func (a TRTMC) protocol() wire.Protocol {
	if a.perfServe() {
		l, _ := a.layout()
		return wire.Task{LatentSeed: a.replaysLatents(l)}
	}
	return wire.OpenAI{}
}

// identityPath: perf-serve's /v1/serving/info (app.py @ 3878755c § info), trtmc-server's
// /v1/models (registry.py @ a4ba28be; it has no /v1/serving/info).
func (a TRTMC) identityPath() string {
	if a.perfServe() {
		return "/v1/serving/info"
	}
	return "/v1/models"
}

// checkIdentity checks that the server answering is TRTMC on the row's bundle. perf-serve:
// backend trtmc, the bundle, generate_image, timing scope public_task_call_wall
// (backends/trtmc.py @ 3878755c § __init__), the profile (cli.py @ 3878755c § serve).
// trtmc-server: the model owned by "tensorrt-model-connect" (no bundle stated). The
// double is refused unless the row is the double's. Neither states the checkpoint: it is
// the manifest's hf_id, which the bundle is built from.
func (a TRTMC) checkIdentity(body []byte, spec family.ServeSpec) (string, error) {
	if a.identityPath() == "/v1/models" {
		var doc struct {
			Data []struct {
				ID      string `json:"id"`
				OwnedBy string `json:"owned_by"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return "", fmt.Errorf("not JSON: %w", err)
		}
		found := false
		for _, d := range doc.Data {
			found = found || d.ID == spec.Model && d.OwnedBy == "tensorrt-model-connect"
		}
		if !found {
			return "", fmt.Errorf("no model %q owned by tensorrt-model-connect in %s", spec.Model, wire.Clip(body, 300))
		}
	} else {
		var info struct {
			Backend     string `json:"backend"`
			Bundle      string `json:"bundle"`
			Operation   string `json:"operation"`
			TimingScope string `json:"timing_scope"`
			Profile     string `json:"profile"`
		}
		if err := json.Unmarshal(body, &info); err != nil {
			return "", fmt.Errorf("not JSON: %w", err)
		}
		switch {
		case info.Backend != "trtmc":
			return "", fmt.Errorf("the server says backend %q, not trtmc: another server answers on the port", info.Backend)
		case !sameBundle(info.Bundle, spec.Bundle):
			return "", fmt.Errorf("the server serves bundle %q, the row built %s", info.Bundle, spec.Bundle)
		case info.Operation != wire.TaskOperation:
			return "", fmt.Errorf("the server serves operation %q, not %s: another profile", info.Operation, wire.TaskOperation)
		case info.TimingScope != "public_task_call_wall":
			return "", fmt.Errorf("the server's timing scope is %q, not public_task_call_wall: its model_call_ms is not the Task call", info.TimingScope)
		case info.Profile != Profile:
			return "", fmt.Errorf("the server serves profile %q, the row builds %s", info.Profile, Profile)
		}
	}
	switch is, why := saysDouble(body); {
	case is && !a.Config.ContractDouble:
		return "", fmt.Errorf("the server is qualkit's TRTMC contract double, not TRTMC (%s): it can never qualify the checkpoint", why)
	case !is && a.Config.ContractDouble:
		return "", fmt.Errorf("the row is the contract double's, but the server does not say it is the double")
	}
	l, err := a.layout()
	if err != nil {
		return "", err
	}
	m, err := ReadManifest(a.Config.Checkout, l)
	if err != nil {
		return "", err
	}
	return m.HFID, nil
}

// sameBundle says whether a served bundle is the row's, real path included: perf-serve
// resolves --bundle (catalog.py @ 0dd9052f § resolve_case).
func sameBundle(served, built string) bool {
	if filepath.Clean(served) == filepath.Clean(built) {
		return true
	}
	real, err := filepath.EvalSymlinks(built)
	return err == nil && filepath.Clean(served) == real
}

// saysDouble says whether an identity answer is the contract double's, and how: the
// double's Go servers say qualkit_contract_double; perf-serve with the double's worker
// states its stand-in torch (platform.py @ ca938e40 § fingerprint).
func saysDouble(body []byte) (bool, string) {
	var m struct {
		Double   bool `json:"qualkit_contract_double"`
		Platform struct {
			Packages map[string]string `json:"packages"`
			CUDA     any               `json:"cuda"`
		} `json:"platform"`
	}
	json.Unmarshal(body, &m)
	switch {
	case m.Double:
		return true, "it says qualkit_contract_double"
	case strings.Contains(m.Platform.Packages["torch"], "qualkit.contract.double"):
		return true, "its platform's torch is qualkit's stand-in " + m.Platform.Packages["torch"]
	case fmt.Sprint(m.Platform.CUDA) == "qualkit-contract-double":
		return true, "its platform's CUDA is qualkit's stand-in"
	}
	return false, ""
}

// image is where every stage runs: the named image, else the checkout's dev Dockerfile's,
// with --ipc=host (source-build.md). Commands run under the image's entrypoint: the dev
// image is FROM NVIDIA's TensorRT image (Dockerfile.dev.x86 @ 520a0165), whose
// nvidia_entrypoint.sh sets up CUDA forward compatibility, then `exec "$@"`
// (triton-inference-server/server nvidia_entrypoint.sh @ 0794865d); without it torch sees no GPU.
func (a TRTMC) image(env family.Env) (family.ContainerImage, error) {
	ci := family.ContainerImage{ImageSpec: serving.ImageSpec{Ref: a.Config.Image}, RefFix: imageFix, IPCHost: true, UnderEntrypoint: true,
		Stages: []string{schema.StageBuild, schema.StageCorrectness},
		Mounts: []family.Mount{
			{Host: a.Config.Checkout, Container: srcDir},
			{Host: filepath.Join(env.Root, "families", "qwen_image", "probe"), Container: probeDir, ReadOnly: true},
		}}
	if a.Config.HFHome != "" {
		ci.Mounts = append(ci.Mounts, family.Mount{Host: a.Config.HFHome, Container: a.Config.HFHome, ReadOnly: true})
	}
	if err := os.MkdirAll(a.tmpDir(env), 0o755); err != nil { // TMPDIR on the bundles' disk
		return family.ContainerImage{}, fmt.Errorf("the builder's temporary folder: %w", err)
	}
	ci.Mounts = append(ci.Mounts, family.Mount{Host: a.tmpDir(env), Container: a.tmpDir(env)})
	if n, err := a.native(env); err == nil && isDir(n.dir) { // Tools makes it
		ci.Mounts = append(ci.Mounts, family.Mount{Host: n.dir, Container: buildDir})
	}
	if a.Config.Image == "" {
		ci.Dockerfile, ci.CopyRoots = a.Config.DevImage()
	}
	return ci, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
