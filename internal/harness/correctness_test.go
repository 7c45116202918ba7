package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestCorrectnessGate(t *testing.T) {
	c, err := ReadJUnit(writeTemp(t, "j.xml", pytestPass))
	require.NoError(t, err)
	assert.Equal(t, 1, c.Executed)
	require.NoError(t, GateCases(c, 1))
	require.ErrorContains(t, GateCases(c, 2), "1 cases executed, expected 2")

	c, err = ReadJUnit(writeTemp(t, "j.xml", pytestSkip))
	require.NoError(t, err)
	err = GateCases(c, 1)
	require.ErrorContains(t, err, "1 skipped (test_model_e2e[qwen-image-edit-2511]: diffusers is not installed)")
	require.ErrorContains(t, err, "0 cases executed, expected 1")

	c, err = ReadJUnit(writeTemp(t, "j.xml", `<testsuites><testsuite tests="0"></testsuite></testsuites>`))
	require.NoError(t, err)
	require.ErrorContains(t, GateCases(c, 1), "0 cases executed, expected 1", "zero cases is never a pass")

	c, err = ReadJUnit(writeTemp(t, "j.xml", `<testsuite><testcase name="a"><failure message="psnr"/></testcase><testcase name="b"><error message="boom"/></testcase></testsuite>`))
	require.NoError(t, err)
	err = GateCases(c, 2)
	require.ErrorContains(t, err, "1 failed")
	require.ErrorContains(t, err, "1 errors")

	_, err = ReadJUnit(writeTemp(t, "j.xml", "<<<"))
	require.Error(t, err)
}

func TestCheckResultFile(t *testing.T) {
	require.NoError(t, CheckResultFile(writeTemp(t, "r.json", `{"status":"pass","psnr":30}`)))
	require.ErrorContains(t, CheckResultFile(writeTemp(t, "r.json", `{"status":"fail"}`)), `status "fail"`)
	require.Error(t, CheckResultFile(filepath.Join(t.TempDir(), "none.json")))
}

func chmodX(p string) error { return os.Chmod(p, 0o755) }
