package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The rows come from the table registry's export, every table's, in order; a double's
// row names no implemented profile.
func TestReadTablesReadsTheRegistryExport(t *testing.T) {
	rows, err := ReadTables(filepath.Join("testdata", "tables", "tables.json"))
	require.NoError(t, err)
	assert.Equal(t, []QualRow{
		{Test: "TestEdit", Name: "refedit-default", Family: "refedit", Profile: "refedit-default"},
		{Test: "TestEdit", Name: "qwen-image-edit-2511", Family: "qwen_image", Profile: "qwen-image-edit-2511"},
		{Test: "TestSmoke", Name: "qwen-image-l0-smoke", Family: "qwen_image", Profile: "qwen-image-l0", Smoke: true},
		{Test: "TestSmoke", Name: "qwen-double", Family: "qwen_image", Profile: "qwen-image-edit-2511", Double: true},
	}, rows)
	assert.Equal(t, []string{"refedit-default", "qwen-image-edit-2511", "qwen-image-l0"}, Profiles(rows))
	assert.False(t, rows[2].Counts())
	assert.False(t, rows[3].Counts())
	assert.Equal(t, "TestSmoke/qwen-double", rows[3].String())
}

func TestReadTablesRefusesWhatItCannotPlace(t *testing.T) {
	dir := t.TempDir()
	_, err := ReadTables(filepath.Join(dir, "tables.json"))
	require.ErrorContains(t, err, "no export of the qual tables at")
	require.ErrorContains(t, err, "run make tables")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"test": "TestX", "details": [{"row": "r", "family": "f"}]}]`), 0o644))
	_, err = ReadTables(bad)
	require.ErrorContains(t, err, "row r of TestX names no profile")

	require.NoError(t, os.WriteFile(bad, []byte(`{`), 0o644))
	_, err = ReadTables(bad)
	require.Error(t, err)
}
