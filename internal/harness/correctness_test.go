package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// A pytest JUnit file as pytest 9 writes it.
const pytestPass = `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="0" tests="1" time="1.2"><testcase classname="families.refedit.correctness.test_refedit_e2e" name="test_refedit_e2e" time="1.1" /></testsuite></testsuites>`

const pytestSkip = `<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="0" skipped="1" tests="1"><testcase classname="tests.e2e.models.qwen_image.test_qwen_image_e2e" name="test_model_e2e[qwen-image-edit-2511]"><skipped type="pytest.skip" message="diffusers is not installed">skip</skipped></testcase></testsuite></testsuites>`

const refeditCase = "families.refedit.correctness.test_refedit_e2e.test_refedit_e2e"

func TestCorrectnessGate(t *testing.T) {
	c, err := ReadJUnit(writeTemp(t, "j.xml", pytestPass))
	require.NoError(t, err)
	assert.Equal(t, 1, c.Executed)
	assert.Equal(t, []string{refeditCase}, c.Cases)
	require.NoError(t, GateCases(c, []string{refeditCase}))
	require.ErrorContains(t, GateCases(c, []string{refeditCase, "other.test"}), "1 cases executed, expected 2")

	c, err = ReadJUnit(writeTemp(t, "j.xml", pytestSkip))
	require.NoError(t, err)
	err = GateCases(c, []string{"tests.e2e.models.qwen_image.test_qwen_image_e2e.test_model_e2e[qwen-image-edit-2511]"})
	require.ErrorContains(t, err, "1 skipped (test_model_e2e[qwen-image-edit-2511]: diffusers is not installed)")
	require.ErrorContains(t, err, "0 cases executed, expected 1")

	c, err = ReadJUnit(writeTemp(t, "j.xml", `<testsuites><testsuite tests="0"></testsuite></testsuites>`))
	require.NoError(t, err)
	require.ErrorContains(t, GateCases(c, []string{refeditCase}), "0 cases executed, expected 1", "zero cases is never a pass")

	c, err = ReadJUnit(writeTemp(t, "j.xml", `<testsuite><testcase name="a"><failure message="psnr"/></testcase><testcase name="b"><error message="boom"/></testcase></testsuite>`))
	require.NoError(t, err)
	err = GateCases(c, []string{"a", "b"})
	require.ErrorContains(t, err, "1 failed")
	require.ErrorContains(t, err, "1 errors")
}

// The gate names cases, never only counts them: another test passing in the declared
// one's place, or none declared, is no pass.
func TestCorrectnessGateComparesIDs(t *testing.T) {
	c, err := ReadJUnit(writeTemp(t, "j.xml", pytestPass))
	require.NoError(t, err)
	err = GateCases(c, []string{"families.refedit.correctness.test_refedit_e2e.test_something_else"})
	require.ErrorContains(t, err, "declared but not executed: families.refedit.correctness.test_refedit_e2e.test_something_else")
	require.ErrorContains(t, err, "executed but not declared: "+refeditCase)
	require.ErrorContains(t, GateCases(c, nil), "declares no test case id")
	require.ErrorContains(t, GateCases(schema.CaseCounts{}, nil), "declares no test case id", "an empty file with nothing declared is no pass")

	_, err = ReadJUnit(writeTemp(t, "j.xml", "<<<"))
	require.Error(t, err)
}

func TestCheckResultFile(t *testing.T) {
	require.NoError(t, CheckResultFile(writeTemp(t, "r.json", `{"status":"pass","psnr":30}`)))
	require.ErrorContains(t, CheckResultFile(writeTemp(t, "r.json", `{"status":"fail"}`)), `status "fail"`)
	require.Error(t, CheckResultFile(filepath.Join(t.TempDir(), "none.json")))
}

func chmodX(p string) error { return os.Chmod(p, 0o755) }

// pytest 8.4.2 (TRTMC's pin) makes <test>_q0 under --basetemp and the link
// <test>_qcurrent to it: the bundle pattern matches twice, and that is one bundle.
// Two real folders are two bundles: refused, naming both.
func TestFindCaseBundleResolvesPytestsCurrentLink(t *testing.T) {
	base := t.TempDir()
	q0 := filepath.Join(base, "test_official_checkpoint_e2e_q0")
	require.NoError(t, os.MkdirAll(filepath.Join(q0, "x.bundle"), 0o755))
	require.NoError(t, os.Symlink(q0, filepath.Join(base, "test_official_checkpoint_e2e_qcurrent")))
	pattern := filepath.Join(base, "test_official_checkpoint_e2e*", "x.bundle")
	got, matched, err := FindCaseBundle(pattern)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(q0, "x.bundle"), got)
	assert.Equal(t, []schema.MatchedPath{
		{Path: filepath.Join(q0, "x.bundle"), Resolved: got},
		{Path: filepath.Join(base, "test_official_checkpoint_e2e_qcurrent", "x.bundle"), Resolved: got},
	}, matched, "the evidence names both matches and the one real path")

	require.NoError(t, os.MkdirAll(filepath.Join(base, "test_official_checkpoint_e2e_q1", "x.bundle"), 0o755))
	_, _, err = FindCaseBundle(pattern)
	assert.ErrorContains(t, err, "2 paths match the bundle it builds")
	_, _, err = FindCaseBundle(filepath.Join(base, "nothing*", "x.bundle"))
	assert.ErrorContains(t, err, "0 paths match")
}

// A case that wrote a result.json its family does not name fails the stage, saying what to
// set: otherwise the row would pass every stage and fail only the run's evidence check.
func TestUndeclaredResultFile(t *testing.T) {
	assert.NoError(t, undeclaredResult([]schema.FileHash{{Path: "correctness/artifacts/out.png"}}))
	assert.ErrorContains(t, undeclaredResult([]schema.FileHash{{Path: "correctness/artifacts/out.png"}, {Path: "correctness/artifacts/case/result.json"}}),
		"the correctness case wrote correctness/artifacts/case/result.json, but the family names no result file (CorrectnessCase.Result)")
}
