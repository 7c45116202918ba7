package inventory

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadQualRowsFindsProfileFields(t *testing.T) {
	rows, err := ReadQualRows("testdata/qual")
	require.NoError(t, err)
	edit := filepath.Join("testdata", "qual", "edit_test.go")
	smoke := filepath.Join("testdata", "qual", "smoke_test.go")
	assert.Equal(t, []QualRow{
		{File: edit, Line: 6, Name: "refedit-default", Family: "refedit", Profile: "refedit-default"},
		{File: edit, Line: 13, Name: "qwen-image-edit-2511", Family: "trtmc", Profile: "qwen-image-edit-2511"},
		{File: smoke, Line: 4, Name: "qwen-image-l0-smoke", Family: "trtmc", Profile: "qwen-image-l0", Smoke: true},
	}, rows)
	assert.Equal(t, []string{"refedit-default", "qwen-image-edit-2511", "qwen-image-l0"}, Profiles(rows))
}

func TestReadQualRowsRequiresAStringLiteral(t *testing.T) {
	_, err := ReadQualRows("testdata/qual-nonliteral")
	require.ErrorContains(t, err, filepath.Join("testdata", "qual-nonliteral", "rows_test.go")+":6")
	require.ErrorContains(t, err, "Profile must be a non-empty string literal")
}

func TestReadQualRowsWithoutADirectoryFindsNone(t *testing.T) {
	rows, err := ReadQualRows(filepath.Join(t.TempDir(), "qual"))
	require.NoError(t, err)
	assert.Empty(t, rows)
}
