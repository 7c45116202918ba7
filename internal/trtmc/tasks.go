// Package trtmc is TRTMC's task vocabulary as a checkout states it: the Task a testcase
// selects, the operation the checkout's task table maps each Task to, which Tasks edit an
// image, and where an edit Task takes its reference images from. The qwen_image family's
// preflight and the inventory both read it here, so the two never disagree on what an
// edit is.
//
// It only reads files; everything it knows of TRTMC is cited `path @ commit8` below.
package trtmc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// TaskTable is where a families-layout checkout's benchmark catalog maps each Task to its
// operation (task_adapters.py @ 0dd9052f § _DEFAULTS).
const TaskTable = "apps/benchmark/trtmc_benchmark/task_adapters.py"

// The edit Tasks of task_adapters.py @ 0dd9052f § _DEFAULTS, both mapped to generate_image.
const (
	TaskImageEdit             = "image_edit"                // the legacy ITask path
	TaskImagesTextToImageEdit = "images_text_to_image_edit" // the Task SDK's, image_path or image_paths
	OperationGenerateImage    = "generate_image"
)

// Manifest and testcase fields that name the Task: the manifest's task, which a testcase's
// selected_task overrides (catalog.py @ 0dd9052f § selected_task_for_case).
const (
	FieldTask         = "task"
	FieldSelectedTask = "selected_task"
)

// knownSource cites the vocabulary a checkout without a task table gets.
const knownSource = "task_adapters.py @ 0dd9052f § _DEFAULTS (qualkit's known vocabulary: the checkout has no " + TaskTable + ")"

// Tasks is a checkout's task vocabulary.
type Tasks struct {
	// Source says where it came from: the checkout's task table, or the citation of the
	// known vocabulary when the checkout has none.
	Source string
	ops    map[string]string // Task -> its default operation
	order  []string          // Tasks in the table's order
}

// known is the vocabulary of a checkout without a task table: the two edit Tasks.
func known() Tasks {
	return Tasks{Source: knownSource, order: []string{TaskImageEdit, TaskImagesTextToImageEdit},
		ops: map[string]string{TaskImageEdit: OperationGenerateImage, TaskImagesTextToImageEdit: OperationGenerateImage}}
}

// taskEntry is one line of _DEFAULTS: "task": ("operation", warmup, iterations).
var taskEntry = regexp.MustCompile(`"([a-z0-9_]+)":\s*\("([a-z0-9_]+)",`)

// ReadTasks reads the checkout's task table (the _DEFAULTS dict of TaskTable), so that a
// newer TRTMC that names its Tasks otherwise is read, not refused. A checkout without the
// table, or whose table has no entry, has the known vocabulary.
func ReadTasks(checkout string) Tasks {
	b, err := os.ReadFile(filepath.Join(checkout, TaskTable))
	if err != nil {
		return known()
	}
	src := "\n" + string(b)
	if i := strings.Index(src, "\n_DEFAULTS"); i >= 0 {
		src = src[i:]
		if j := strings.Index(src, "\n}"); j >= 0 {
			src = src[:j]
		}
	}
	t := Tasks{Source: TaskTable, ops: map[string]string{}}
	for _, m := range taskEntry.FindAllStringSubmatch(src, -1) {
		if _, dup := t.ops[m[1]]; !dup {
			t.ops[m[1]] = m[2]
			t.order = append(t.order, m[1])
		}
	}
	if len(t.order) == 0 {
		return known()
	}
	return t
}

// Operation is the operation the vocabulary maps the Task to, if it knows the Task.
func (t Tasks) Operation(task string) (string, bool) {
	op, ok := t.ops[task]
	return op, ok
}

// IsEdit reports whether the Task edits an image: one the vocabulary maps to
// generate_image whose name says edit.
func (t Tasks) IsEdit(task string) bool {
	return t.ops[task] == OperationGenerateImage && strings.Contains(task, "edit")
}

// Edits are the edit Tasks, in the vocabulary's order.
func (t Tasks) Edits() []string {
	var out []string
	for _, task := range t.order {
		if t.IsEdit(task) {
			out = append(out, task)
		}
	}
	return out
}

// ImageInput is where an edit Task reads its reference images from a testcase.
type ImageInput struct {
	Single []string // fields naming one image, in TRTMC's order
	Multi  []string // fields naming an ordered list of images (a multi-reference edit)
	// Explicit: read as task_adapters' _explicit, from the testcase and its inputs object,
	// more than one of the fields refused; otherwise the first single field that is a path.
	Explicit bool
	Source   string // the citation
}

// EditImageInput says where the edit Task takes its reference images. The legacy
// image_edit reads test_image or image from the testcase (task_adapters.py @ 0dd9052f §
// _image_path); every other image-input Task of that table, the Task SDK's
// images_text_to_image_edit among them, reads image_path, image or test_image, or the list
// image_paths or images, from the testcase or its inputs, and refuses more than one of
// them (§ _semantic_media_request, _explicit).
func EditImageInput(task string) ImageInput {
	if task == TaskImageEdit {
		return ImageInput{Single: []string{"test_image", "image"}, Source: "task_adapters.py @ 0dd9052f § _image_path"}
	}
	return ImageInput{Single: []string{"image_path", "image", "test_image"}, Multi: []string{"image_paths", "images"}, Explicit: true,
		Source: "task_adapters.py @ 0dd9052f § _semantic_media_request"}
}
