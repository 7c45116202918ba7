package inventory

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/trtmc"
)

// taskSDKCheckout writes a families-layout checkout whose edits are declared the Task-SDK
// way (task_adapters.py @ 0dd9052f § _semantic_media_request; catalog.py @ 0dd9052f §
// selected_task_for_case): images_text_to_image_edit with image_path, with image_paths of
// one and of two images, a testcase that selects the edit Task under a text-to-image
// manifest (its image in inputs), and one naming two single-image fields, which TRTMC
// refuses. With table, the checkout has its own task table, in _DEFAULTS's shape.
func taskSDKCheckout(t *testing.T, table bool) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	tests := "families/sdkfam/tests/"
	write(tests+"data/a.jpeg", "a")
	write(tests+"data/b.jpeg", "b")
	manifest := func(name, task, testcases string) {
		write(tests+"manifests/"+name+".json", `{"name": "`+name+`", "hf_id": "acme/`+name+`", "bundle": "`+name+`.bundle",
  "family": "sdkfam", "task": "`+task+`", "precision": "bf16", "testcases": [`+testcases+`]}`)
	}
	manifest("sdk-image-path", trtmc.TaskImagesTextToImageEdit, `{"name": "sdk-image-path", "prompt": "p", "image_path": "data/a.jpeg"}`)
	manifest("sdk-one-of-image-paths", trtmc.TaskImagesTextToImageEdit, `{"name": "sdk-one-of-image-paths", "prompt": "p", "image_paths": ["data/a.jpeg"]}`)
	manifest("sdk-two-image-paths", trtmc.TaskImagesTextToImageEdit, `{"name": "sdk-two-image-paths", "prompt": "p", "image_paths": ["data/a.jpeg", "data/b.jpeg"]}`)
	manifest("sdk-two-fields", trtmc.TaskImagesTextToImageEdit, `{"name": "sdk-two-fields", "prompt": "p", "image_path": "data/a.jpeg", "test_image": "data/a.jpeg"}`)
	manifest("t2i", "text_to_image", `{"name": "t2i", "prompt": "p"},
  {"name": "t2i-selected-edit", "prompt": "p", "selected_task": "`+trtmc.TaskImagesTextToImageEdit+`", "inputs": {"image_path": "data/b.jpeg"}}`)
	if table {
		write(trtmc.TaskTable, "_DEFAULTS: dict[str, tuple[str, int, int]] = {\n"+
			"    \"text_to_image\": (\"generate_image\", 1, 5),\n"+
			"    \"images_text_to_image_edit\": (\"generate_image\", 1, 5),\n"+
			"    \"image_edit\": (\"generate_image\", 1, 5),\n}\n")
	}
	return dir
}

// D3 of issue 44: edits declared the Task-SDK way are the image-edit group, read from the
// checkout's own task table or, without one, from the known vocabulary, cited. One image
// (image_path, or image_paths of one) is this workload; image_paths of several is a
// multi-reference gap that says so; two image fields are a gap TRTMC itself refuses.
func TestTaskSDKEditsAreTheImageEditGroup(t *testing.T) {
	for _, table := range []bool{true, false} {
		source := trtmc.TaskTable
		if !table {
			source = "task_adapters.py @ 0dd9052f § _DEFAULTS (qualkit's known vocabulary"
		}
		t.Run(map[bool]string{true: "task table", false: "known vocabulary"}[table], func(t *testing.T) {
			inv, err := Load(taskSDKCheckout(t, table))
			require.NoError(t, err)
			ps := byProfile(inv)
			for name, want := range map[string]struct {
				class  Class
				reason []string
			}{
				"sdk-image-path":         {Full, []string{`task "images_text_to_image_edit" (manifest), an edit Task of ` + source, `image_path "data/a.jpeg" (testcase)`, "file found"}},
				"sdk-one-of-image-paths": {Full, []string{`image_paths ["data/a.jpeg"] (testcase), one image`, "file found"}},
				"t2i-selected-edit":      {Full, []string{`selected_task "images_text_to_image_edit" (testcase), an edit Task of ` + source, `image_path "data/b.jpeg" (testcase inputs)`}},
				"sdk-two-image-paths":    {Gap, []string{"multi-reference edit: image_paths", "lists 2 images; this workload edits one reference image per request"}},
				"sdk-two-fields":         {Gap, []string{"TRTMC refuses the testcase: it names image_path (testcase) and test_image (testcase)"}},
				"t2i":                    {OutOfGroup, []string{`task "text_to_image" (manifest), not an edit Task of ` + source}},
			} {
				p, ok := ps[name]
				require.True(t, ok, "profile %s", name)
				assert.Equal(t, want.class, p.Class, "%s: %s", name, p.Reason)
				for _, s := range want.reason {
					assert.Contains(t, p.Reason, s, name)
				}
				if p.Class.InGroup() {
					assert.Equal(t, WorkloadImageEdit, p.Workload, name)
					assert.Equal(t, trtmc.TaskImagesTextToImageEdit, p.NativeTask, name)
					assert.Equal(t, trtmc.OperationGenerateImage, p.Operation, name)
					assert.Equal(t, "not declared", p.SupportedControls, name)
				}
			}
			assert.Equal(t, "data/a.jpeg", ps["sdk-one-of-image-paths"].ReferenceImage)
			assert.Empty(t, ps["sdk-two-image-paths"].ReferenceImage, "no one reference image")
			assert.Equal(t, map[Class]int{Full: 3, Partial: 0, Gap: 2, Variant: 0, OutOfGroup: 1}, inv.Counts())

			var b bytes.Buffer
			require.NoError(t, inv.WriteMarkdown(&b))
			assert.Contains(t, b.String(), "| native Task | supported controls |")
			assert.Contains(t, b.String(), "| `images_text_to_image_edit` / generate_image | not declared |")
		})
	}
}
