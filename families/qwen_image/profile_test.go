package qwenimage

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/trtmc"
)

// A task table in the shape of task_adapters.py @ 0dd9052f's _DEFAULTS ("task":
// ("operation", warmup, iterations)), naming the tasks given as generate_image tasks,
// with a text-to-image task and an operation of another kind beside them.
func taskTableOf(editTasks ...string) string {
	s := "_DEFAULTS: dict[str, tuple[str, int, int]] = {\n" +
		"    \"text_to_image\": (\"generate_image\", 1, 5),\n" +
		"    \"text_generation\": (\"generate\", 1, 5),\n"
	for _, task := range editTasks {
		s += "    \"" + task + "\": (\"generate_image\", 1, 5),\n"
	}
	return s + "}\n"
}

// L5: the families layout's manifest names its task, and newer TRTMC names the edit task
// images_text_to_image_edit (task_adapters.py @ 0dd9052f). The row accepts the edit tasks
// of the checkout's own task vocabulary (internal/trtmc reads it), not image_edit by name:
// a checkout whose table has only the new name serves a manifest with it and refuses the
// old one, naming the table; a checkout without the table takes the two known names.
func TestManifestTaskIsAnEditTaskOfTheCheckout(t *testing.T) {
	l := layouts[1]
	require.Equal(t, LayoutFamilies, l.Name)
	manifest := func(task string) *Manifest {
		m := &Manifest{HFID: HFID, HFRevision: Revision, Bundle: Profile + ".bundle", Precision: Precision, Task: task,
			Testcases: []Testcase{{Name: Profile, TestImage: "data/test_img.jpeg"}}, ImageWidth: ImageWidth, ImageHeight: ImageHeight}
		return m
	}

	newer := t.TempDir()
	writeFile(t, filepath.Join(newer, trtmc.TaskTable), taskTableOf("images_text_to_image_edit"))
	tasks := trtmc.ReadTasks(newer)
	assert.Empty(t, checkManifest(manifest("images_text_to_image_edit"), l, tasks))
	bad := checkManifest(manifest("image_edit"), l, tasks)
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0], `task is "image_edit"`)
	assert.Contains(t, bad[0], trtmc.TaskTable)
	assert.Contains(t, bad[0], "images_text_to_image_edit")

	renamed := t.TempDir()
	writeFile(t, filepath.Join(renamed, trtmc.TaskTable), taskTableOf("image_edit_v3"))
	assert.Empty(t, checkManifest(manifest("image_edit_v3"), l, trtmc.ReadTasks(renamed)), "a name qualkit has never seen, read from the table")

	none := trtmc.ReadTasks(t.TempDir())
	assert.Empty(t, checkManifest(manifest("images_text_to_image_edit"), l, none))
	assert.Empty(t, checkManifest(manifest("image_edit"), l, none))
	assert.NotEmpty(t, checkManifest(manifest("text_to_image"), l, none), "a generation task is no edit")
}
