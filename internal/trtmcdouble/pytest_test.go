package trtmcdouble

import (
	"encoding/json"
	"encoding/xml"
	"image"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readJUnit(t *testing.T, path string) junitSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var s junitSuites
	require.NoError(t, xml.Unmarshal(b, &s))
	require.Len(t, s.Suites, 1)
	return s
}

// legacyPytest is a legacy checkout with a built bundle, build/trtmc and its model plugin:
// what the adapter's correctness command needs.
type legacyPytest struct {
	r                 *runner
	checkout, engines string
	artifacts, junit  string
}

func newLegacyPytest(t *testing.T) legacyPytest {
	t.Helper()
	checkout := shapedCheckout(t, LayoutLegacy)
	e := legacyPytest{checkout: checkout, engines: filepath.Join(t.TempDir(), "engines"), artifacts: filepath.Join(t.TempDir(), "artifacts"),
		junit: filepath.Join(t.TempDir(), "junit", "correctness.xml")}
	writeTestBundle(t, filepath.Join(e.engines, Profile+".bundle"), adapterSpec(t))
	writeFile(t, filepath.Join(checkout, "build", "trtmc"), fakeSelf)
	writeFile(t, filepath.Join(checkout, "build", "models", "qwen_image", libModelQwen), "lib")
	e.r = newRunner(t, checkout).with("HF_HUB_OFFLINE", "1")
	return e
}

// args is the adapter's correctness command line, with extra options.
func (e legacyPytest) args(extra ...string) []string {
	args := []string{"/opt/venv/bin/python3", "-m", "pytest", LegacyNodeID, "-v", "-rs",
		"--e2e-model", Profile, "--e2e-testcase", Profile, "--engine-dir", e.engines, "--trtmc-binary", "build/trtmc",
		"--hf-python", "/opt/venv/bin/python3", "--e2e-artifacts-dir", e.artifacts, "--junitxml=" + e.junit}
	return append(args, extra...)
}

func TestPytestLegacyPasses(t *testing.T) {
	e := newLegacyPytest(t)
	res := e.r.run(e.args("-p", "no:cacheprovider", "-o", "tmp_path_retention_policy=failed", "-q", "-x")...)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Contains(t, res.stdout, LegacyNodeID+" PASSED")

	s := readJUnit(t, e.junit)
	suite := s.Suites[0]
	assert.Equal(t, [4]int{1, 0, 0, 0}, [4]int{suite.Tests, suite.Failures, suite.Errors, suite.Skipped})
	require.Len(t, suite.Cases, 1)
	c := suite.Cases[0]
	assert.Equal(t, "tests.e2e.models.qwen_image.test_qwen_image_e2e", c.Classname)
	assert.Equal(t, "test_model_e2e[qwen-image-edit-2511]", c.Name)
	assert.Nil(t, c.Failure)
	assert.Nil(t, c.Skipped)
	assert.Equal(t, []junitProperty{{Name: Marker, Value: "true"}}, c.Properties)

	b, err := os.ReadFile(filepath.Join(e.artifacts, Profile, "result.json"))
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	ts, err := time.Parse(time.RFC3339, got["timestamp"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), ts, time.Minute)
	delete(got, "timestamp")
	assert.Equal(t, map[string]any{"case_name": Profile, "status": "pass", "failure_type": nil, "oracle_level": "L1_external_reference",
		"stages": map[string]any{"end_to_end": map[string]any{"status": "passed", "message": "",
			"metrics": map[string]any{"psnr": map[string]any{"value": 30.0, "threshold": 12.0, "operator": ">=", "passed": true}}}},
		"log_file": "e2e_run.log", Marker: true}, got)
	log, err := os.ReadFile(filepath.Join(e.artifacts, Profile, "e2e_run.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "qualkit contract double")
}

func TestPytestLegacyOptionForms(t *testing.T) {
	e := newLegacyPytest(t)
	plugins := filepath.Join(e.checkout, "build", "models")
	res := e.r.run("python3", "-m", "pytest", LegacyNodeID, "--engine-dir="+e.engines, "--trtmc-binary="+filepath.Join(e.checkout, "build", "trtmc"),
		"--hf-python=/usr/bin/python3", "--model-plugin-dir", plugins, "--e2e-model=qwen_image", "--e2e-testcase", Profile,
		"--e2e-artifacts-dir="+e.artifacts, "--junitxml", e.junit, "--basetemp", filepath.Join(t.TempDir(), "bt"), "-o=tmp_path_retention_policy=all")
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Zero(t, readJUnit(t, e.junit).Suites[0].Failures)
}

func TestPytestLegacySkipsWithoutBuildModules(t *testing.T) {
	for _, m := range []string{"diffusers", "ftfy"} {
		e := newLegacyPytest(t)
		res := e.r.with(EnvMissingModules, m).run(e.args()...)
		require.Equal(t, 0, res.code, res.stderr)
		msg := "Module " + m + " not importable in build profile"
		assert.Contains(t, res.stdout, "SKIPPED")
		c := readJUnit(t, e.junit).Suites[0]
		assert.Equal(t, 1, c.Skipped)
		require.NotNil(t, c.Cases[0].Skipped)
		assert.Equal(t, msg, c.Cases[0].Skipped.Message)
		assert.Equal(t, "pytest.skip", c.Cases[0].Skipped.Type)
		assert.NoFileExists(t, filepath.Join(e.artifacts, Profile, "result.json"))
	}
}

func TestPytestLegacyFailures(t *testing.T) {
	otherCondition := adapterSpec(t)
	otherCondition.Condition = encodeTestPNG(t, gradient(320, 200))
	otherSize := adapterSpec(t)
	otherSize.ImageWidth = 512
	for name, tc := range map[string]struct {
		setup func(t *testing.T, e legacyPytest) []string // returns extra args
		env   []string
		want  string
	}{
		"forced": {nil, []string{EnvCase, "fail"}, forcedFailure},
		"rebuild engines": {func(*testing.T, legacyPytest) []string { return []string{"--rebuild-engines"} }, nil,
			"--rebuild-engines: the qualkit contract double plays only the case on a prebuilt bundle"},
		"no bundle": {func(t *testing.T, e legacyPytest) []string {
			require.NoError(t, os.Remove(filepath.Join(e.engines, Profile+".bundle")))
			return nil
		}, nil, "not a valid .bundle artifact"},
		"invalid bundle": {func(t *testing.T, e legacyPytest) []string {
			writeFile(t, filepath.Join(e.engines, Profile+".bundle"), "a real engine, trust me")
			return nil
		}, nil, "no BUNDLE magic"},
		"condition size": {func(t *testing.T, e legacyPytest) []string {
			writeTestBundle(t, filepath.Join(e.engines, Profile+".bundle"), otherCondition)
			return nil
		}, nil, "static condition grid is 320x200, but the test image data/test_img.jpeg is 640x382"},
		"output size": {func(t *testing.T, e legacyPytest) []string {
			writeTestBundle(t, filepath.Join(e.engines, Profile+".bundle"), otherSize)
			return nil
		}, nil, "compiled for 512x1024 output"},
		"no trtmc binary": {func(t *testing.T, e legacyPytest) []string {
			require.NoError(t, os.Remove(filepath.Join(e.checkout, "build", "trtmc")))
			return nil
		}, nil, "--trtmc-binary build/trtmc: no such file"},
		"no model plugin": {func(t *testing.T, e legacyPytest) []string {
			require.NoError(t, os.RemoveAll(filepath.Join(e.checkout, "build", "models")))
			return nil
		}, nil, "holds no qwen_image/libtrtmc_model_qwen_image.so"},
		"plugin dir without plugin": {func(t *testing.T, e legacyPytest) []string {
			return []string{"--model-plugin-dir", t.TempDir()}
		}, nil, "holds no qwen_image/libtrtmc_model_qwen_image.so"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newLegacyPytest(t)
			var extra []string
			if tc.setup != nil {
				extra = tc.setup(t, e)
			}
			res := e.r.with(tc.env...).run(e.args(extra...)...)
			assert.Equal(t, 1, res.code, res.stdout+res.stderr)
			assert.Contains(t, res.stdout, "FAILED "+LegacyNodeID)
			suite := readJUnit(t, e.junit).Suites[0]
			assert.Equal(t, 1, suite.Failures)
			require.NotNil(t, suite.Cases[0].Failure)
			assert.Contains(t, suite.Cases[0].Failure.Message, tc.want)
			b, err := os.ReadFile(filepath.Join(e.artifacts, Profile, "result.json"))
			require.NoError(t, err)
			var r caseResult
			require.NoError(t, json.Unmarshal(b, &r))
			assert.Equal(t, "fail", r.Status)
			assert.Equal(t, "runtime_error", *r.FailureType)
			assert.Contains(t, r.Stages["end_to_end"].Message, tc.want)
		})
	}

	t.Run("no engine dir, no hf-python", func(t *testing.T) {
		e := newLegacyPytest(t)
		res := e.r.run("python3", "-m", "pytest", LegacyNodeID, "--hf-python", "/p", "--junitxml", e.junit)
		assert.Equal(t, 1, res.code)
		assert.Contains(t, readJUnit(t, e.junit).Suites[0].Cases[0].Failure.Message, "--engine-dir is required")
		res = e.r.run("python3", "-m", "pytest", LegacyNodeID, "--engine-dir", e.engines, "--junitxml", e.junit)
		assert.Equal(t, 1, res.code)
		assert.Contains(t, readJUnit(t, e.junit).Suites[0].Cases[0].Failure.Message, "--hf-python is required")
	})
}

// familiesPytest is a families checkout, an HF cache, and a configured native build with
// the runtime libraries: what the families case needs.
type familiesPytest struct {
	r                          *runner
	checkout, build, artifacts string
	basetemp, junit            string
}

func newFamiliesPytest(t *testing.T, testsFlag string) familiesPytest {
	t.Helper()
	checkout := shapedCheckout(t, LayoutFamilies)
	hf := t.TempDir()
	_, err := HFCache(hf)
	require.NoError(t, err)
	e := familiesPytest{checkout: checkout, build: filepath.Join(t.TempDir(), "trtmc-build"), artifacts: filepath.Join(t.TempDir(), "e2e-artifacts"),
		basetemp: filepath.Join(t.TempDir(), "basetemp"), junit: filepath.Join(t.TempDir(), "junit.xml")}
	r := newRunner(t, checkout)
	args := configureArgs(checkout, e.build)
	for i, a := range args {
		if a == "-DTRTMC_BUILD_TESTS=ON" {
			args[i] = "-DTRTMC_BUILD_TESTS=" + testsFlag
		}
	}
	require.Equal(t, 0, r.run(args...).code)
	require.Equal(t, 0, r.run("cmake", "--build", e.build, "--target", "trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image").code)
	e.r = r.with("HF_HOME", hf, EnvTRTMCBinary, filepath.Join(e.build, "trtmc"), EnvRuntimeRoot, e.build,
		EnvNativeBuildDir, e.build, EnvArtifactDir, e.artifacts)
	return e
}

func (e familiesPytest) args(extra ...string) []string {
	args := []string{"python3", "-m", "pytest", FamiliesNodeID, "-v", "-rs", "-p", "no:cacheprovider",
		"--e2e-model", Profile, "--e2e-testcase", Profile, "--basetemp=" + e.basetemp, "--junitxml=" + e.junit}
	return append(args, extra...)
}

func TestPytestFamiliesPasses(t *testing.T) {
	e := newFamiliesPytest(t, "ON")
	res := e.r.run(e.args()...)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)

	suite := readJUnit(t, e.junit).Suites[0]
	assert.Equal(t, [4]int{1, 0, 0, 0}, [4]int{suite.Tests, suite.Failures, suite.Errors, suite.Skipped})
	assert.Equal(t, "families.qwen_image.tests.test_e2e", suite.Cases[0].Classname)
	assert.Equal(t, "test_official_checkpoint_e2e[qwen-image-edit-2511]", suite.Cases[0].Name)

	h, err := ReadBundle(filepath.Join(e.basetemp, "test_official_checkpoint_e2e_q0", Profile+".bundle"))
	require.NoError(t, err, "the case builds its own bundle in tmp_path")
	assert.Equal(t, [4]int{1024, 1024, 640, 382}, [4]int{h.ImageWidth, h.ImageHeight, h.ConditionWidth, h.ConditionHeight},
		"the manifest's output size, the test image's condition grid")
	assert.Equal(t, Revision, h.Revision)
	assert.Equal(t, 20, h.NumInferenceSteps)

	assert.FileExists(t, filepath.Join(e.build, "families", "qwen_image", "qwen_image_e2e_harness"))
	caseDir := filepath.Join(e.artifacts, Profile)
	trt, err := os.ReadFile(filepath.Join(caseDir, "trt-000.png"))
	require.NoError(t, err)
	ref, err := os.ReadFile(filepath.Join(caseDir, "reference-000.png"))
	require.NoError(t, err)
	assert.Equal(t, image.Pt(1024, 1024), decodeTestPNG(t, trt).Bounds().Size(), "the manifest's output size")
	assert.NotEqual(t, trt, ref)
	assert.Zero(t, changedFraction(t, decodeTestPNG(t, trt), decodeTestPNG(t, ref)), "the reference is within one level")
	b, err := os.ReadFile(filepath.Join(caseDir, "metadata.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"case": "qwen-image-edit-2511", "family": "qwen_image", "frame_count": 1,
		"prompt": "Turn the image into a watercolor illustration while preserving the main subject.", "sample_count": 1,
		"sampled_frame_indices": [0], "schema_version": 1, "qualkit_contract_double": true}`, string(b))
	assert.NoFileExists(t, filepath.Join(caseDir, "result.json"), "no result.json in this layout")

	res = e.r.run(e.args()...)
	assert.Equal(t, 1, res.code, "the artifact case directory must not exist (exist_ok=False)")
	assert.Contains(t, readJUnit(t, e.junit).Suites[0].Cases[0].Failure.Message, "FileExistsError")
}

func TestPytestFamiliesSkipsWithoutSelector(t *testing.T) {
	e := newFamiliesPytest(t, "ON")
	res := e.r.run("python3", "-m", "pytest", FamiliesNodeID, "-v", "-rs", "--junitxml="+e.junit)
	require.Equal(t, 0, res.code, "a skip exits 0: the harness must read the JUnit")
	assert.Contains(t, res.stdout, "SKIPPED [1] "+familiesTestFile+": direct E2E requires one of the three explicit E2E selectors")
	suite := readJUnit(t, e.junit).Suites[0]
	assert.Equal(t, [2]int{1, 1}, [2]int{suite.Tests, suite.Skipped})
	assert.Contains(t, suite.Cases[0].Skipped.Message, "direct E2E requires one of the three explicit E2E selectors")
	assert.NoDirExists(t, filepath.Join(e.artifacts, Profile))
}

func TestPytestFamiliesModelsFileSelects(t *testing.T) {
	e := newFamiliesPytest(t, "ON")
	list := writeFile(t, filepath.Join(t.TempDir(), "models.txt"), Profile+"\n")
	res := e.r.run("python3", "-m", "pytest", FamiliesNodeID, "--e2e-models-file", list, "--junitxml="+e.junit, "--basetemp", e.basetemp)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.Zero(t, readJUnit(t, e.junit).Suites[0].Skipped)

	other := writeFile(t, filepath.Join(t.TempDir(), "models.txt"), "qwen-image-l0\n")
	res = e.r.run("python3", "-m", "pytest", FamiliesNodeID, "--e2e-models-file", other, "--junitxml="+e.junit)
	assert.Equal(t, 5, res.code, "deselected: no tests ran")
	assert.Zero(t, readJUnit(t, e.junit).Suites[0].Tests)
}

func TestPytestFamiliesEnvironment(t *testing.T) {
	for name, tc := range map[string]struct {
		testsFlag string
		env       []string
		want      string
	}{
		"no binary":         {"ON", []string{EnvTRTMCBinary, ""}, "selected qwen_image E2E requires TRTMC_BINARY"},
		"absent binary":     {"ON", []string{EnvTRTMCBinary, "/nowhere/trtmc"}, "selected qwen_image E2E requires TRTMC_BINARY"},
		"no runtime root":   {"ON", []string{EnvRuntimeRoot, ""}, "selected qwen_image E2E requires TRTMC_RUNTIME_ROOT"},
		"empty runtime":     {"ON", []string{EnvRuntimeRoot, os.TempDir()}, "requires TRTMC_RUNTIME_ROOT holding libtrtmc_backend_trt.so"},
		"no build dir":      {"ON", []string{EnvNativeBuildDir, ""}, "selected qwen_image E2E requires TRTMC_NATIVE_BUILD_DIR"},
		"unconfigured":      {"ON", []string{EnvNativeBuildDir, os.TempDir() + "/qualkit-none"}, "requires TRTMC_NATIVE_BUILD_DIR to be a configured build directory"},
		"tests off":         {"OFF", nil, "no rule to make target 'qwen_image_e2e_harness'"},
		"model dir empty":   {"ON", []string{EnvModelDir, os.TempDir() + "/qualkit-none"}, "TRTMC_QWEN_IMAGE_MODEL_DIR=" + os.TempDir() + "/qualkit-none holds no model_index.json"},
		"no snapshot":       {"ON", []string{"HF_HOME", os.TempDir() + "/qualkit-none"}, "no local snapshot of " + HFID},
		"forced":            {"ON", []string{EnvCase, "fail"}, forcedFailure},
		"artifact dir file": {"ON", []string{EnvArtifactDir, "/dev/null"}, "/dev/null"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newFamiliesPytest(t, tc.testsFlag)
			res := e.r.with(tc.env...).run(e.args()...)
			assert.Equal(t, 1, res.code, res.stdout+res.stderr)
			c := readJUnit(t, e.junit).Suites[0].Cases[0]
			require.NotNil(t, c.Failure)
			assert.Contains(t, c.Failure.Message, tc.want)
		})
	}

	t.Run("model dir", func(t *testing.T) {
		e := newFamiliesPytest(t, "ON")
		model := t.TempDir()
		writeFile(t, filepath.Join(model, "model_index.json"), "{}")
		res := e.r.with(EnvModelDir, model, "HF_HOME", "").run(e.args()...)
		assert.Equal(t, 0, res.code, res.stdout+res.stderr)
	})
	t.Run("no artifact dir", func(t *testing.T) {
		e := newFamiliesPytest(t, "ON")
		res := e.r.with(EnvArtifactDir, "").run(e.args()...)
		assert.Equal(t, 0, res.code, res.stdout+res.stderr)
		assert.NoDirExists(t, e.artifacts)
	})
}

func TestPytestTmpPathRetention(t *testing.T) {
	tmpPath := func(e familiesPytest) string { return filepath.Join(e.basetemp, "test_official_checkpoint_e2e_q0") }
	for policy, kept := range map[string]bool{"all": true, "failed": false, "none": false} {
		e := newFamiliesPytest(t, "ON")
		res := e.r.run(e.args("-o", "tmp_path_retention_policy="+policy)...)
		require.Equal(t, 0, res.code, res.stderr)
		if kept {
			assert.DirExists(t, tmpPath(e), policy)
		} else {
			assert.NoDirExists(t, tmpPath(e), policy)
		}
	}
	e := newFamiliesPytest(t, "ON")
	stale := writeFile(t, filepath.Join(e.basetemp, "stale.txt"), "from an earlier session")
	res := e.r.with(EnvCase, "fail").run(e.args("-o", "tmp_path_retention_policy=failed")...)
	assert.Equal(t, 1, res.code)
	assert.NoFileExists(t, stale, "pytest empties --basetemp at the start of a session")
}

func TestPytestDefaultBasetemp(t *testing.T) {
	e := newFamiliesPytest(t, "ON")
	tmp := t.TempDir()
	res := e.r.with("TMPDIR", tmp, "USER", "").run("python3", "-m", "pytest", FamiliesNodeID, "--e2e-model", Profile)
	require.Equal(t, 0, res.code, res.stdout+res.stderr)
	assert.FileExists(t, filepath.Join(tmp, "pytest-of-root", "pytest-0", "test_official_checkpoint_e2e_q0", Profile+".bundle"))
}

func TestPytestUsageErrors(t *testing.T) {
	legacy := newLegacyPytest(t)
	families := newFamiliesPytest(t, "ON")
	notCheckout := newRunner(t, t.TempDir())
	for name, tc := range map[string]struct {
		r    *runner
		args []string
		code int
		want string
	}{
		"legacy option in families": {families.r, families.args("--engine-dir", "/e"), 4, "error: unrecognized arguments: --engine-dir"},
		"legacy options, = form":    {families.r, families.args("--hf-python=/p", "--rebuild-engines"), 4, "error: unrecognized arguments: --hf-python=/p --rebuild-engines"},
		"families option in legacy": {legacy.r, legacy.args("--e2e-models-file", "m.txt"), 4, "error: unrecognized arguments: --e2e-models-file"},
		"unknown option":            {legacy.r, legacy.args("--timeout", "60"), 4, "unrecognized arguments: --timeout"},
		"flag given a value":        {legacy.r, legacy.args("-v=yes"), 4, "unrecognized arguments: -v=yes"},
		"unknown node":              {legacy.r, []string{"python3", "-m", "pytest", "tests/e2e/models/qwen_image/test_qwen_image_e2e.py::test_model_e2e[qwen-image-l0]"}, 4, "ERROR: not found: "},
		"other layout's node":       {families.r, []string{"python3", "-m", "pytest", LegacyNodeID, "--e2e-model", Profile}, 4, "ERROR: not found: "},
		"no node":                   {legacy.r, []string{"python3", "-m", "pytest", "-v"}, 4, "give exactly one node id"},
		"two nodes":                 {legacy.r, []string{"python3", "-m", "pytest", LegacyNodeID, LegacyNodeID}, 4, "give exactly one node id"},
		"missing value":             {legacy.r, legacy.args("--engine-dir"), 4, "argument --engine-dir: expected one argument"},
		"other plugin":              {legacy.r, legacy.args("-p", "xdist"), 4, "accepts only -p no:cacheprovider"},
		"other ini option":          {legacy.r, legacy.args("-o", "junit_family=xunit1"), 4, "accepts only -o tmp_path_retention_policy"},
		"bad retention policy":      {legacy.r, legacy.args("-o", "tmp_path_retention_policy=some"), 4, "accepts only -o tmp_path_retention_policy"},
		"bad double case":           {legacy.r.with(EnvCase, "flaky"), legacy.args(), 4, `QUALKIT_DOUBLE_CASE="flaky"`},
		"not a checkout":            {notCheckout, []string{"python3", "-m", "pytest", LegacyNodeID}, 4, "is not a TRTMC checkout"},
		"basetemp root":             {legacy.r, legacy.args("--basetemp", "/"), 4, "refusing to empty a filesystem root"},
	} {
		t.Run(name, func(t *testing.T) {
			res := tc.r.run(tc.args...)
			assert.Equal(t, tc.code, res.code, res.stdout)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
	assert.NoFileExists(t, legacy.junit)

	t.Run("test file missing", func(t *testing.T) {
		e := newLegacyPytest(t)
		require.NoError(t, os.Remove(filepath.Join(e.checkout, legacyTestFile)))
		res := e.r.run(e.args()...)
		assert.Equal(t, 4, res.code)
		assert.Contains(t, res.stderr, "ERROR: file or directory not found: "+legacyTestFile)
	})
	t.Run("manifest without the case", func(t *testing.T) {
		e := newLegacyPytest(t)
		writeFile(t, filepath.Join(e.checkout, legacyManifest), `{"name": "x", "testcases": []}`)
		res := e.r.run(e.args()...)
		assert.Equal(t, 4, res.code)
		assert.Contains(t, res.stderr, "has no testcase "+Profile)
	})
	t.Run("deselected", func(t *testing.T) {
		e := newLegacyPytest(t)
		res := e.r.run("python3", "-m", "pytest", LegacyNodeID, "--e2e-model", "qwen-image-l0", "--junitxml", e.junit)
		assert.Equal(t, 5, res.code)
		assert.Contains(t, res.stdout, "1 deselected")
		assert.Zero(t, readJUnit(t, e.junit).Suites[0].Tests)
	})
}

func TestJUnitIDs(t *testing.T) {
	cls, name := junitIDs(FamiliesNodeID)
	assert.Equal(t, "families.qwen_image.tests.test_e2e", cls)
	assert.Equal(t, "test_official_checkpoint_e2e[qwen-image-edit-2511]", name)
	cls, name = junitIDs(LegacyNodeID)
	assert.Equal(t, "tests.e2e.models.qwen_image.test_qwen_image_e2e", cls)
	assert.Equal(t, "test_model_e2e[qwen-image-edit-2511]", name)
}
