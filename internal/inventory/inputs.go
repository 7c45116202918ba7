package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// referenceImage resolves the MODEL.toml input that carries the reference image for the
// profile's task strategy, then the testcase's own inputs.image, and checks the file.
func referenceImage(root string, t testcase) (value, by string, ok bool) {
	strategy := t.str(fieldTaskStrategy)
	defaults := t.model.Defaults[strategy]
	var mapped string
	for _, in := range defaults.InputFields {
		if in.Input == referenceImageInput {
			mapped = in.Manifest
			break
		}
	}
	if mapped != "" {
		if v, where, found := t.lookup(mapped); found && strings.TrimSpace(fmt.Sprint(v)) != "" {
			value = fmt.Sprint(v)
			by = fmt.Sprintf("input %q <- %s %q (%s)", referenceImageInput, mapped, value, where)
		}
	}
	if value == "" {
		if in, _ := t.fields[fieldInputs].(map[string]any); in != nil && present(in[referenceImageInput]) {
			value = fmt.Sprint(in[referenceImageInput])
			by = fmt.Sprintf("%s.%s %q (testcase)", fieldInputs, referenceImageInput, value)
		}
	}
	if value == "" {
		if mapped == "" {
			return "", fmt.Sprintf("MODEL.toml e2e_defaults.%s maps no input %q and the testcase has no %s.%s", strategy, referenceImageInput, fieldInputs, referenceImageInput), false
		}
		return "", fmt.Sprintf("no %q on the testcase or manifest (MODEL.toml maps input %q <- %q)", mapped, referenceImageInput, mapped), false
	}
	if isURL(value) {
		return value, by, true
	}
	for _, base := range []string{t.modelDir, root} {
		if st, err := os.Stat(filepath.Join(base, filepath.FromSlash(value))); err == nil && st.Mode().IsRegular() {
			return value, by + ", file found", true
		}
	}
	return value, by + ", but the file is in neither the model directory nor the checkout root", false
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
