package trtmcdouble

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Environment of the families-layout correctness case.
const (
	EnvTRTMCBinary    = "TRTMC_BINARY"
	EnvRuntimeRoot    = "TRTMC_RUNTIME_ROOT"
	EnvNativeBuildDir = "TRTMC_NATIVE_BUILD_DIR"
	EnvModelDir       = "TRTMC_QWEN_IMAGE_MODEL_DIR"
	EnvArtifactDir    = "TRTMC_E2E_ARTIFACT_DIR"
)

// forcedFailure is the message of a case failed on purpose (QUALKIT_DOUBLE_CASE=fail).
const forcedFailure = "AssertionError: qualkit contract double: the case fails on purpose (" + EnvCase + "=fail)"

// legacyCase plays tests/e2e/models/qwen_image/test_qwen_image_e2e.py::test_model_e2e at
// e9132e79 on a prebuilt bundle; it writes result.json when --e2e-artifacts-dir is given.
func (s *session) legacyCase() outcome {
	missing := s.p.missingModules()
	for _, m := range []string{"diffusers", "ftfy"} {
		if slices.Contains(missing, m) {
			return outcome{status: statusSkipped, file: legacyTestFile, message: fmt.Sprintf("Module %s not importable in build profile", m)}
		}
	}
	o := s.legacyRun()
	if err := s.writeResult(o); err != nil {
		return failed(fmt.Sprintf("writing result.json: %v", err), o.log)
	}
	return o
}

func (s *session) legacyRun() outcome {
	p, a := s.p, s.args
	var log []string
	if p.getenv(EnvCase) == "fail" {
		return failed(forcedFailure, log)
	}
	if a.has("--rebuild-engines") {
		return failed("--rebuild-engines: the qualkit contract double plays only the case on a prebuilt bundle; it does not rebuild the bundle inside the case", log)
	}
	engineDir := a.get("--engine-dir")
	if engineDir == "" {
		return failed("--engine-dir is required by the qualkit contract double: the case finds the bundle there", log)
	}
	bundle := filepath.Join(p.abs(engineDir), s.m.Bundle)
	h, err := ReadBundle(bundle)
	if err != nil {
		return failed(fmt.Sprintf("bundle %s: not a valid .bundle artifact: %v", bundle, err), log)
	}
	log = append(log, "bundle: "+bundle)
	bin := a.get("--trtmc-binary")
	if bin == "" {
		bin = "build/trtmc"
	}
	if !isFile(p.abs(bin)) {
		return failed(fmt.Sprintf("--trtmc-binary %s: no such file", bin), log)
	}
	if a.get("--hf-python") == "" {
		return failed("--hf-python is required: the HF diffusers reference runs in it", log)
	}
	plugins := a.get("--model-plugin-dir")
	if plugins == "" {
		plugins = p.getenv(EnvModelPluginDir)
	}
	if plugins == "" {
		plugins = filepath.Join(filepath.Dir(bin), "models")
	}
	if !isFile(filepath.Join(p.abs(plugins), "qwen_image", libModelQwen)) {
		return failed(fmt.Sprintf("model plugin dir %s holds no qwen_image/%s", plugins, libModelQwen), log)
	}
	img, err := os.ReadFile(filepath.Join(p.wd, s.modDir, s.tc.TestImage))
	if err != nil {
		return failed(fmt.Sprintf("test image: %v", err), log)
	}
	w, hgt, err := imageSize(img)
	if err != nil {
		return failed(fmt.Sprintf("test image %s: %v", s.tc.TestImage, err), log)
	}
	if w != h.ConditionWidth || hgt != h.ConditionHeight {
		return failed(fmt.Sprintf("the bundle's static condition grid is %dx%d, but the test image %s is %dx%d", h.ConditionWidth, h.ConditionHeight, s.tc.TestImage, w, hgt), log)
	}
	st := s.settings(h)
	if s.tc.Width > 0 && s.tc.Height > 0 && (s.tc.Width != h.ImageWidth || s.tc.Height != h.ImageHeight) {
		return failed(fmt.Sprintf("the bundle is compiled for %dx%d output, the testcase asks for %dx%d", h.ImageWidth, h.ImageHeight, s.tc.Width, s.tc.Height), log)
	}
	if _, err := Edit(img, s.tc.Prompt, st); err != nil {
		return failed(fmt.Sprintf("trtmc run: %v", err), log)
	}
	log = append(log, fmt.Sprintf("trtmc run (qualkit contract double): %dx%d, %d steps, seed %d", st.Width, st.Height, st.Steps, st.Seed), "PASSED")
	return outcome{status: statusPassed, log: log}
}

// caseResult is TRTMC's result_schema.py document for one case.
type caseResult struct {
	CaseName    string                 `json:"case_name"`
	Status      string                 `json:"status"`
	FailureType *string                `json:"failure_type"`
	OracleLevel string                 `json:"oracle_level"`
	Timestamp   string                 `json:"timestamp"`
	Stages      map[string]stageResult `json:"stages"`
	LogFile     string                 `json:"log_file"`
	Double      bool                   `json:"qualkit_contract_double"`
}

type stageResult struct {
	Status  string            `json:"status"`
	Metrics map[string]metric `json:"metrics"`
	Message string            `json:"message"`
}

type metric struct {
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Operator  string  `json:"operator"`
	Passed    bool    `json:"passed"`
}

// writeResult writes <e2e-artifacts-dir>/<case>/result.json and e2e_run.log.
func (s *session) writeResult(o outcome) error {
	root := s.args.get("--e2e-artifacts-dir")
	if root == "" {
		return nil
	}
	dir := filepath.Join(s.p.abs(root), Profile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := caseResult{CaseName: Profile, Status: "pass", OracleLevel: "L1_external_reference",
		Timestamp: time.Now().UTC().Format(time.RFC3339), LogFile: "e2e_run.log", Double: true,
		Stages: map[string]stageResult{"end_to_end": {Status: "passed",
			Metrics: map[string]metric{"psnr": {Value: 30.0, Threshold: 12.0, Operator: ">=", Passed: true}}}}}
	if o.status == statusFailed {
		ft := "runtime_error"
		r.Status, r.FailureType = "fail", &ft
		r.Stages["end_to_end"] = stageResult{Status: "failed", Metrics: map[string]metric{}, Message: o.message}
	}
	if err := writeJSON(filepath.Join(dir, "result.json"), r); err != nil {
		return err
	}
	logText := "qualkit contract double: TRTMC's case played, no model ran\n" + strings.Join(o.log, "\n") + "\n"
	return os.WriteFile(filepath.Join(dir, "e2e_run.log"), []byte(logText), 0o644)
}

// familiesCase plays families/qwen_image/tests/test_e2e.py::test_official_checkpoint_e2e:
// it needs an explicit selector, checks the native build it is given, builds its own
// bundle in tmp_path and writes the image artifacts when TRTMC_E2E_ARTIFACT_DIR is set.
func (s *session) familiesCase() outcome {
	if !s.hasSelector() {
		return outcome{status: statusSkipped, file: familiesTestFile,
			message: "direct E2E requires one of the three explicit E2E selectors (--e2e-model, --e2e-testcase, --e2e-models-file)"}
	}
	o := s.familiesRun()
	s.retainTmpPath(o)
	return o
}

func (s *session) familiesRun() outcome {
	p := s.p
	var log []string
	if p.getenv(EnvCase) == "fail" {
		return failed(forcedFailure, log)
	}
	if msg := s.checkFamiliesEnv(); msg != "" {
		return failed(msg, log)
	}
	snapshot, msg := s.modelDir()
	if msg != "" {
		return failed(msg, log)
	}
	log = append(log, "checkpoint: "+snapshot)
	img, err := os.ReadFile(filepath.Join(p.wd, familiesTestImg))
	if err != nil {
		return failed(fmt.Sprintf("test image: %v", err), log)
	}
	w, hgt, err := imageSize(img)
	if err != nil {
		return failed(fmt.Sprintf("test image %s: %v", familiesTestImg, err), log)
	}
	// The output size is the manifest's; the test image fixes the condition grid.
	if s.m.ImageWidth > 0 && s.m.ImageHeight > 0 {
		w, hgt = s.m.ImageWidth, s.m.ImageHeight
	}
	h, err := NewBundleHeader(BundleSpec{Precision: s.m.Precision, MaxCacheLength: 256, ImageWidth: w, ImageHeight: hgt,
		NumInferenceSteps: s.tc.NumInferenceSteps, Revision: s.m.HFRevision, Condition: img})
	if err != nil {
		return failed(fmt.Sprintf("building the bundle: %v", err), log)
	}
	bundle := filepath.Join(s.tmpPath(), s.m.Bundle)
	if err := os.RemoveAll(s.tmpPath()); err != nil {
		return failed(err.Error(), log)
	}
	if err := WriteBundle(bundle, h); err != nil {
		return failed(fmt.Sprintf("building the bundle: %v", err), log)
	}
	log = append(log, "bundle: "+bundle)
	out, err := Edit(img, s.tc.Prompt, s.settings(h))
	if err != nil {
		return failed(fmt.Sprintf("generate_image: %v", err), log)
	}
	if err := s.writeArtifacts(out); err != nil {
		return failed(err.Error(), log)
	}
	return outcome{status: statusPassed, log: append(log, "PASSED")}
}

// checkFamiliesEnv checks the case's environment as the real case asserts it; it returns
// the assertion message, or "".
func (s *session) checkFamiliesEnv() string {
	p := s.p
	requires := func(v string) string { return "AssertionError: selected qwen_image E2E requires " + v }
	bin := p.getenv(EnvTRTMCBinary)
	if bin == "" || !isFile(p.abs(bin)) {
		return requires(EnvTRTMCBinary) + fmt.Sprintf(" (an existing trtmc binary; got %q)", bin)
	}
	root := p.getenv(EnvRuntimeRoot)
	if root == "" {
		return requires(EnvRuntimeRoot)
	}
	for _, lib := range []string{libBackendTRT, libModelQwen} {
		if !isFile(filepath.Join(p.abs(root), lib)) {
			return requires(EnvRuntimeRoot) + fmt.Sprintf(" holding %s (not in %s)", lib, root)
		}
	}
	build := p.getenv(EnvNativeBuildDir)
	if build == "" {
		return requires(EnvNativeBuildDir)
	}
	cache, err := readCMakeCache(p.abs(build))
	if err != nil {
		return requires(EnvNativeBuildDir) + fmt.Sprintf(" to be a configured build directory (%v)", err)
	}
	if !cmakeOn(cache["TRTMC_BUILD_TESTS"]) {
		return fmt.Sprintf("cmake --build %s --target qwen_image_e2e_harness: no rule to make target 'qwen_image_e2e_harness' (the build is configured with TRTMC_BUILD_TESTS=%s)", build, cache["TRTMC_BUILD_TESTS"])
	}
	harness := filepath.Join(p.abs(build), "families", "qwen_image", "qwen_image_e2e_harness")
	if err := writeExecutable(p.self, harness); err != nil {
		return fmt.Sprintf("cmake --build %s --target qwen_image_e2e_harness: %v", build, err)
	}
	return ""
}

// modelDir is the checkpoint the case loads: TRTMC_QWEN_IMAGE_MODEL_DIR, else the
// Hugging Face snapshot at the manifest's revision. It returns a failure message or "".
func (s *session) modelDir() (string, string) {
	if d := s.p.getenv(EnvModelDir); d != "" {
		if !isFile(filepath.Join(s.p.abs(d), "model_index.json")) {
			return "", fmt.Sprintf("%s=%s holds no model_index.json", EnvModelDir, d)
		}
		return d, ""
	}
	snap := hfSnapshot(s.p.hfHome(), s.m.HFRevision)
	if !isFile(filepath.Join(snap, "model_index.json")) {
		return "", fmt.Sprintf("no local snapshot of %s at revision %s (missing %s/model_index.json); the qualkit contract double never downloads", s.m.HFID, s.m.HFRevision, snap)
	}
	return snap, ""
}

// tmpPath is pytest's tmp_path of the case: the node name made safe and cut to 30
// characters, numbered 0.
func (s *session) tmpPath() string {
	_, name := junitIDs(s.node)
	safe := []byte(name)
	for i, c := range safe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			safe[i] = '_'
		}
	}
	return filepath.Join(s.basetemp(), string(safe[:min(len(safe), 30)])+"0")
}

// retainTmpPath applies -o tmp_path_retention_policy after the case (pytest keeps all
// by default).
func (s *session) retainTmpPath(o outcome) {
	var policy string
	for _, v := range s.args.vals["-o"] {
		_, policy, _ = strings.Cut(v, "=")
	}
	if policy == "none" || policy == "failed" && o.status != statusFailed {
		_ = os.RemoveAll(s.tmpPath())
	}
}

// writeArtifacts writes TRTMC_E2E_ARTIFACT_DIR/<case>/: the TRT image, the reference
// image and metadata.json. The case directory must not exist (TRTMC uses exist_ok=False).
func (s *session) writeArtifacts(out []byte) error {
	root := s.p.getenv(EnvArtifactDir)
	if root == "" {
		return nil
	}
	root = s.p.abs(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	dir := filepath.Join(root, Profile)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if os.IsExist(err) {
			return fmt.Errorf("FileExistsError: [Errno 17] File exists: '%s'", dir)
		}
		return err
	}
	ref, err := referenceImage(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "trt-000.png"), out, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "reference-000.png"), ref, 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "metadata.json"), map[string]any{
		"case": Profile, "family": Family, "frame_count": 1, "prompt": s.tc.Prompt,
		"sample_count": 1, "sampled_frame_indices": []int{0}, "schema_version": 1, Marker: true,
	})
}

// referenceImage stands for the HF reference: the TRT image with every channel's lowest
// bit flipped, close to it (PSNR about 48 dB) but not the same bytes.
func referenceImage(trt []byte) ([]byte, error) {
	img, err := decodeImage(trt)
	if err != nil {
		return nil, err
	}
	ref := toNRGBA(img)
	for i := range ref.Pix {
		if i%4 != 3 {
			ref.Pix[i] ^= 1
		}
	}
	return encodePNG(ref)
}
