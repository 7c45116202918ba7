package trtmc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task table in the shape of task_adapters.py @ 0dd9052f's _DEFAULTS ("task":
// ("operation", warmup, iterations)), with a text-to-image Task and one of another
// operation beside the edit Tasks given, and a dict of the same shape after it that is
// not the table.
func writeTable(t *testing.T, editTasks ...string) string {
	t.Helper()
	s := "_DEFAULTS: dict[str, tuple[str, int, int]] = {\n" +
		"    \"text_to_image\": (\"generate_image\", 1, 5),\n" +
		"    \"text_generation\": (\"generate\", 5, 50),\n"
	for _, task := range editTasks {
		s += "    \"" + task + "\": (\"generate_image\", 1, 5),\n"
	}
	s += "}\n\n_OTHER = {\n    \"not_a_task_edit\": (\"generate_image\", 1, 5),\n}\n"
	dir := t.TempDir()
	path := filepath.Join(dir, TaskTable)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return dir
}

// The edit Tasks are the checkout's table's generate_image Tasks that say edit, read
// from _DEFAULTS alone; a newer name is read, not refused; a checkout without the table
// has the two known names, and says where they come from.
func TestReadTasksFromTheCheckoutsTable(t *testing.T) {
	tasks := ReadTasks(writeTable(t, TaskImagesTextToImageEdit))
	assert.Equal(t, TaskTable, tasks.Source)
	assert.Equal(t, []string{TaskImagesTextToImageEdit}, tasks.Edits())
	assert.False(t, tasks.IsEdit(TaskImageEdit), "not in this table")
	assert.False(t, tasks.IsEdit("text_to_image"))
	assert.False(t, tasks.IsEdit("not_a_task_edit"), "outside _DEFAULTS")
	op, ok := tasks.Operation("text_generation")
	assert.True(t, ok)
	assert.Equal(t, "generate", op)

	assert.Equal(t, []string{"image_edit_v3"}, ReadTasks(writeTable(t, "image_edit_v3")).Edits())

	none := ReadTasks(t.TempDir())
	assert.Equal(t, []string{TaskImageEdit, TaskImagesTextToImageEdit}, none.Edits())
	assert.Contains(t, none.Source, "task_adapters.py @ 0dd9052f")
	assert.Contains(t, none.Source, "the checkout has no "+TaskTable)
	_, ok = none.Operation("text_to_image")
	assert.False(t, ok, "the known vocabulary holds the edit Tasks only")
}

// The legacy image_edit reads one image from the testcase's top level; the Task SDK's
// edit reads one image or a list, from the testcase or its inputs.
func TestEditImageInput(t *testing.T) {
	legacy := EditImageInput(TaskImageEdit)
	assert.Equal(t, []string{"test_image", "image"}, legacy.Single)
	assert.Empty(t, legacy.Multi)
	assert.False(t, legacy.Explicit)
	sdk := EditImageInput(TaskImagesTextToImageEdit)
	assert.Equal(t, []string{"image_path", "image", "test_image"}, sdk.Single)
	assert.Equal(t, []string{"image_paths", "images"}, sdk.Multi)
	assert.True(t, sdk.Explicit)
}
