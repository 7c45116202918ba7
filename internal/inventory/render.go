package inventory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The files an inventory run writes.
const (
	MarkdownFile = "INVENTORY.md"
	JSONFile     = "inventory.json"
)

// classMeaning is the legend of the counts table.
var classMeaning = map[Class]string{
	Full:       "a full checkpoint that consumes the reference image",
	Partial:    "L0, reduced or random-weight profile: listed, never counted",
	Gap:        "declares editing, but no reference image reaches it, or it is skipped/staged",
	Variant:    "another precision, quantization or parallel layout of a listed checkpoint",
	OutOfGroup: "another workload (text-to-image, video, text, audio ...)",
}

// WriteJSON writes the profiles as a JSON array, one object per testcase profile.
func (inv *Inventory) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(inv.Profiles, "", "  ")
	if err != nil {
		return fmt.Errorf("inventory json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteMarkdown writes INVENTORY.md: counts per class, the image-edit group, then every
// other profile with the reason it is out of the group.
func (inv *Inventory) WriteMarkdown(w io.Writer) error {
	var b bytes.Buffer
	counts := inv.Counts()
	fmt.Fprintf(&b, "# Checkpoint inventory: image-edit workload\n\n")
	fmt.Fprintf(&b, "Source: TRTMC checkout `%s`, %d testcase profiles.\n", inv.Source, len(inv.Profiles))
	fmt.Fprintf(&b, "Written by `go run ./scripts/inventory`; regenerate it rather than editing it.\n\n")
	fmt.Fprintf(&b, "Image-edit checkpoints counted (class `full`): **%d**.\n\n", counts[Full])

	fmt.Fprintf(&b, "## Counts per class\n\n")
	fmt.Fprintf(&b, "| class | profiles | counted | meaning |\n| --- | ---: | --- | --- |\n")
	for _, c := range Classes {
		counted := "no"
		if c == Full {
			counted = "yes"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", c, counts[c], counted, cell(classMeaning[c]))
	}
	fmt.Fprintf(&b, "| total | %d | | |\n\n", len(inv.Profiles))

	fmt.Fprintf(&b, "## Image-edit group\n\n")
	fmt.Fprintf(&b, "native Task: the TRTMC Task the profile runs (its testcase's `selected_task`, else its manifest's `task`; "+
		"in the e9132e79 layout, which has neither, its `task_strategy`), then the operation the checkout's task vocabulary maps it to. "+
		"supported controls: the controls its family declares it honours; `%s` while the family declares none.\n\n", controlsNotDeclared)
	fmt.Fprintf(&b, "| profile | hf_id | revision | precision | parallel | native Task | supported controls | class | variant of | status | reason |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, p := range inv.Group() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			code(p.Profile), cell(p.HFID), cell(p.Revision), cell(p.Precision), cell(p.Parallel),
			nativeTask(p), cell(cmp.Or(p.SupportedControls, controlsNotDeclared)),
			p.Class, code(p.VariantOf), p.Status, cell(p.Reason))
	}

	fmt.Fprintf(&b, "\n## Out of group\n\n")
	fmt.Fprintf(&b, "| profile | family | hf_id | workload | status | reason |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, p := range inv.Profiles {
		if p.Class.InGroup() {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			code(p.Profile), cell(p.Family), cell(p.HFID), cell(p.Workload), p.Status, cell(p.Reason))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func (inv *Inventory) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("inventory output %s: %w", dir, err)
	}
	for _, out := range []struct {
		name  string
		write func(io.Writer) error
	}{{MarkdownFile, inv.WriteMarkdown}, {JSONFile, inv.WriteJSON}} {
		var b bytes.Buffer
		if err := out.write(&b); err != nil {
			return err
		}
		path := filepath.Join(dir, out.name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// nativeTask is the native Task cell: the Task, then its operation when known.
func nativeTask(p Profile) string {
	if p.Operation == "" {
		return code(p.NativeTask)
	}
	return code(p.NativeTask) + " / " + cell(p.Operation)
}

// cell makes a value safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + cell(s) + "`"
}
