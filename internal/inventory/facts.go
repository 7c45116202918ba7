package inventory

import (
	"fmt"
	"slices"
	"strings"

	"qualkit/internal/trtmc"
)

// facts are the field readings a class is decided from, each with the words that go
// into the reason.
type facts struct {
	editBy     string // why editing is declared; "" when it is not
	notEditBy  string // the fields that were read when it is not
	refImage   string // the reference image value, when the inputs name one
	refBy      string // where the reference image comes from, or why there is none
	refOK      bool   // named and present (a file in the checkout, or a URL)
	refMulti   string // why a multi-reference edit is not this workload; "" for one image
	partialBy  []string
	skipBy     []string
	parallel   string
	quant      string
	checkpoint string // identity of the weights: hf_id (and a pinned hf_revision)
	workload   string
	workloadBy string
}

func readFacts(co *checkout, t testcase) facts {
	f := facts{partialBy: partialMarkers(t), skipBy: skipMarkers(t), parallel: parallelLayout(t), quant: quantization(t), checkpoint: t.str(fieldHFID)}
	f.editBy, f.notEditBy = editDeclaration(t, co.tasks)
	f.refImage, f.refBy, f.refOK, f.refMulti = referenceImage(co, t)
	if rev := t.str(fieldHFRevision); rev != "" {
		f.checkpoint += "@" + rev
	}
	if f.checkpoint == "" {
		f.checkpoint = "manifest:" + t.manifestPath
	}
	f.workload, f.workloadBy = workload(t, f)
	return f
}

// editDeclaration checks the testcase's TRTMC Task against the checkout's task
// vocabulary, then task_mode and both levels of user_contract: the manifest's is an HF
// pipeline tag ("image-to-image"), the testcase's an e2e contract, and either may be the
// one that says "edit". When none does, the second result quotes what was read.
func editDeclaration(t testcase, tasks trtmc.Tasks) (string, string) {
	task, taskBy := t.task()
	if tasks.IsEdit(task) {
		return fmt.Sprintf("%s, an edit Task of %s", taskBy, tasks.Source), ""
	}
	mode, where, ok := t.lookup(fieldTaskMode)
	if ok && mode == taskModeEdit {
		return fmt.Sprintf("%s %q (%s)", fieldTaskMode, taskModeEdit, where), ""
	}
	read := []string{fieldTaskMode + " unset"}
	if ok {
		read[0] = fmt.Sprintf("%s %q (%s)", fieldTaskMode, fmt.Sprint(mode), where)
	}
	for _, level := range t.levels() {
		s, _ := level.fields[fieldUserContract].(string)
		if slices.Contains(editContracts, s) {
			return fmt.Sprintf("%s %q (%s)", fieldUserContract, s, level.where), ""
		}
		if s != "" {
			read = append(read, fmt.Sprintf("%s %q (%s)", fieldUserContract, s, level.where))
		}
	}
	if len(read) == 1 {
		read = append(read, fieldUserContract+" unset")
	}
	if task != "" {
		read = append(read, taskBy+", not an edit Task of "+tasks.Source)
	}
	return "", strings.Join(read, ", ")
}

// workload names what the profile does. Editing wins; then an HF pipeline tag
// (hyphenated user_contract); then, for media diffusion, the contract's output
// ("diffusion_video") with the input modality the profile carries; then the task strategy.
func workload(t testcase, f facts) (string, string) {
	if f.editBy != "" {
		return WorkloadImageEdit, "editing declared by " + f.editBy
	}
	for _, level := range t.levels() {
		if s, _ := level.fields[fieldUserContract].(string); strings.Contains(s, "-") {
			return strings.ReplaceAll(s, "-", "_"), fmt.Sprintf("%s %q (%s)", fieldUserContract, s, level.where)
		}
	}
	uc := t.str(fieldUserContract)
	if out, ok := strings.CutPrefix(uc, "diffusion_"); ok && out != "" && t.str(fieldTaskStrategy) == strategyDiffusionMedia {
		in := "text"
		if f.refImage != "" {
			in = "image"
		}
		return in + "_to_" + out, fmt.Sprintf("%s %q with %s input", fieldUserContract, uc, in)
	}
	if s := t.str(fieldTaskStrategy); s != "" {
		return s, fmt.Sprintf("%s %q", fieldTaskStrategy, s)
	}
	if task, by := t.task(); task != "" {
		return task, by
	}
	return "unknown", fmt.Sprintf("no %s and no %s", fieldUserContract, fieldTaskStrategy)
}
