package inventory

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFilesWritesMarkdownAndTheJSONArray(t *testing.T) {
	inv := loadSynthetic(t)
	dir := t.TempDir()
	require.NoError(t, inv.WriteFiles(dir))

	md, err := os.ReadFile(filepath.Join(dir, MarkdownFile))
	require.NoError(t, err)
	assert.Equal(t, markdown(t, inv), md)

	raw, err := os.ReadFile(filepath.Join(dir, JSONFile))
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, inv.WriteJSON(&b))
	assert.Equal(t, b.Bytes(), raw, "inventory.json is what -json prints")

	var rows []Profile
	require.NoError(t, json.Unmarshal(raw, &rows))
	assert.Equal(t, inv.Profiles, rows)
}

func TestJSONNamesVariantOfOnlyOnVariants(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, loadSynthetic(t).WriteJSON(&b))
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &rows))
	for _, r := range rows {
		_, has := r["variant_of"]
		assert.Equal(t, r["class"] == string(Variant), has, "profile %v", r["profile"])
	}
}

func TestMarkdownCellEscapesPipes(t *testing.T) {
	assert.Equal(t, `a \| b c`, cell("a | b\nc"))
	assert.Equal(t, "", code(""))
	assert.Equal(t, "`x`", code("x"))
}
