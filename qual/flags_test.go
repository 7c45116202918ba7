package qual

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

// Relative paths in flags are taken from the repository root, not from qual/ where go
// test runs the binary (docs/operations.md "Flags").
func TestFlagPathsResolveAgainstTheRepositoryRoot(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "myev"), inRoot(root, "myev", "evidence"))
	assert.Equal(t, filepath.Join(root, "..", "x"), inRoot(root, "../x", ".venv"))
	assert.Equal(t, filepath.Join(root, "evidence"), inRoot(root, "", "evidence"))
	assert.Equal(t, "/abs/ev", inRoot(root, "/abs/ev", "evidence"))
	assert.Equal(t, "", inRoot(root, "", ""))

	// The run's own configuration went through it.
	assert.True(t, filepath.IsAbs(baseConfig.EvidenceRoot), baseConfig.EvidenceRoot)
	assert.True(t, filepath.IsAbs(baseConfig.Python), baseConfig.Python)
	if *evidenceRoot == filepath.Join(root, "evidence") {
		assert.Equal(t, filepath.Join(root, "evidence"), baseConfig.EvidenceRoot)
	}
}

// selected matches a -run pattern level by level, as go test does.
func TestDoctorSelectsRowsLikeRun(t *testing.T) {
	for _, tt := range []struct {
		pattern, test, row string
		want               bool
	}{
		{"", "TestQwenImageEdit", "qwen-image-edit-2511", true},
		{"Qwen", "TestQwenImageEdit", "qwen-image-edit-2511", true},
		{"Qwen", "TestReferenceSmoke", "reference-smoke", false},
		{"^TestRefEdit$", "TestRefEdit", "refedit-v1", true},
		{"^TestRefEdit$/^other$", "TestRefEdit", "refedit-v1", false},
		{"TestRefEdit/refedit-v1/report", "TestRefEdit", "refedit-v1", true},
		{"Test(Ref|Qwen)Edit", "TestRefEdit", "refedit-v1", true},
		{"[/]", "TestRefEdit", "refedit-v1", false},
	} {
		assert.Equal(t, tt.want, selected(tt.pattern, tt.test, tt.row), "-run %q on %s/%s", tt.pattern, tt.test, tt.row)
	}
	assert.Equal(t, []string{"a", "(b/c)", "[/]"}, splitPattern("a/(b/c)/[/]"))
}

// make doctor JSON=1: a ready row lists its missing requirements as an empty list, not
// null, as the docs show it.
func TestDoctorJSONListsNoRequirementAsEmpty(t *testing.T) {
	out, err := exec.Command(os.Args[0], "-test.run", "^TestRefEdit$", "-qualkit.doctor", "-qualkit.json",
		"-qualkit.evidence", t.TempDir()).Output()
	require.NoError(t, err, "%s", out)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out, &rows), "%s", out)
	require.Len(t, rows, 1)
	assert.Equal(t, true, rows[0]["ready"])
	assert.Equal(t, []any{}, rows[0]["requirements"])
}
