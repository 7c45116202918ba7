package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/trtmc"
)

// referenceImage finds the reference image of a profile and checks the file. A testcase
// whose TRTMC Task edits takes it where that Task reads it (taskImage); any other takes
// the MODEL.toml input that carries it for its task strategy, then its own inputs.image.
// The last result is set, instead of a usable image, for a multi-reference edit.
func referenceImage(co *checkout, t testcase) (value, by string, ok bool, multi string) {
	if task, _ := t.task(); co.tasks.IsEdit(task) {
		value, by, multi = taskImage(t, trtmc.EditImageInput(task))
	} else {
		value, by = modelImage(t)
	}
	if value == "" {
		return "", by, false, multi
	}
	if isURL(value) {
		return value, by, true, ""
	}
	for _, base := range []string{t.modelDir, co.root} {
		if st, err := os.Stat(filepath.Join(base, filepath.FromSlash(value))); err == nil && st.Mode().IsRegular() {
			return value, by + ", file found", true, ""
		}
	}
	return value, by + ", but the file is in neither the model directory nor the checkout root", false, ""
}

// modelImage is the MODEL.toml input that carries the reference image for the profile's
// task strategy, then the testcase's own inputs.image.
func modelImage(t testcase) (value, by string) {
	strategy := t.str(fieldTaskStrategy)
	var mapped string
	for _, in := range t.model.Defaults[strategy].InputFields {
		if in.Input == referenceImageInput {
			mapped = in.Manifest
			break
		}
	}
	if mapped != "" {
		if v, where, found := t.lookup(mapped); found && strings.TrimSpace(fmt.Sprint(v)) != "" {
			value = fmt.Sprint(v)
			return value, fmt.Sprintf("input %q <- %s %q (%s)", referenceImageInput, mapped, value, where)
		}
	}
	if in, _ := t.fields[fieldInputs].(map[string]any); in != nil && present(in[referenceImageInput]) {
		value = fmt.Sprint(in[referenceImageInput])
		return value, fmt.Sprintf("%s.%s %q (testcase)", fieldInputs, referenceImageInput, value)
	}
	if mapped == "" {
		return "", fmt.Sprintf("MODEL.toml e2e_defaults.%s maps no input %q and the testcase has no %s.%s", strategy, referenceImageInput, fieldInputs, referenceImageInput)
	}
	return "", fmt.Sprintf("no %q on the testcase or manifest (MODEL.toml maps input %q <- %q)", mapped, referenceImageInput, mapped)
}

// taskImage reads the reference image where the edit Task does. Without Explicit, the
// first of the single-image fields that is a path. With it, as TRTMC's _explicit: the
// fields of the testcase and of its inputs, more than one of them refused; a list of one
// image is this workload, a list of several a multi-reference edit (the third result).
func taskImage(t testcase, in trtmc.ImageInput) (value, by, multi string) {
	cite := " (" + in.Source + ")"
	if !in.Explicit {
		for _, name := range in.Single {
			if s, _ := t.fields[name].(string); s != "" {
				return s, fmt.Sprintf("%s %q (testcase)%s", name, s, cite), ""
			}
		}
		return "", fmt.Sprintf("no %s on the testcase%s", strings.Join(in.Single, " or "), cite), ""
	}
	levels := []level{{"testcase", t.fields}}
	if m, _ := t.fields[fieldInputs].(map[string]any); m != nil {
		levels = append(levels, level{"testcase " + fieldInputs, m})
	}
	type found struct {
		name, where string
		v           any
	}
	fields := append(slices.Clone(in.Single), in.Multi...)
	var got []found
	for _, l := range levels {
		for _, name := range fields {
			if v, ok := l.fields[name]; ok {
				got = append(got, found{name, l.where, v})
			}
		}
	}
	switch {
	case len(got) == 0:
		return "", fmt.Sprintf("no %s on the testcase or its %s%s", strings.Join(fields, ", "), fieldInputs, cite), ""
	case len(got) > 1:
		var names []string
		for _, g := range got {
			names = append(names, fmt.Sprintf("%s (%s)", g.name, g.where))
		}
		return "", fmt.Sprintf("TRTMC refuses the testcase: it names %s, and takes one of them%s", strings.Join(names, " and "), cite), ""
	}
	g := got[0]
	if !slices.Contains(in.Multi, g.name) {
		s, _ := g.v.(string)
		if s == "" {
			return "", fmt.Sprintf("%s (%s) is not a path%s", g.name, g.where, cite), ""
		}
		return s, fmt.Sprintf("%s %q (%s)%s", g.name, s, g.where, cite), ""
	}
	list, _ := g.v.([]any)
	var paths []string
	for _, v := range list {
		if s, _ := v.(string); s != "" {
			paths = append(paths, s)
		}
	}
	if len(paths) == 0 || len(paths) != len(list) {
		return "", fmt.Sprintf("%s (%s) is not a non-empty list of paths%s", g.name, g.where, cite), ""
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	named := fmt.Sprintf("%s [%s] (%s)", g.name, strings.Join(quoted, ", "), g.where)
	if len(paths) > 1 {
		return "", named + cite, fmt.Sprintf("multi-reference edit: %s lists %d images; this workload edits one reference image per request%s", named, len(paths), cite)
	}
	return paths[0], named + ", one image" + cite, ""
}

func isURL(s string) bool {
	for _, p := range []string{"http://", "https://", "data:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// controls are the MODEL.toml input_fields of the profile's task strategy that resolve
// to a value for this testcase (a manifest value, or a default whose required_manifest
// is set), in declaration order, without the reference image itself.
func controls(t testcase) []string {
	out := []string{}
	for _, in := range t.model.Defaults[t.str(fieldTaskStrategy)].InputFields {
		if in.Input == referenceImageInput || slices.Contains(out, in.Input) {
			continue
		}
		v, _, ok := t.lookup(in.Manifest)
		set := ok && present(v)
		if !set && in.Default != nil {
			if in.RequiredManifest == "" {
				set = true
			} else if rv, _, rok := t.lookup(in.RequiredManifest); rok && present(rv) {
				set = true
			}
		}
		if set {
			out = append(out, in.Input)
		}
	}
	return out
}
