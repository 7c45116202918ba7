package inventory

import (
	"fmt"
	"slices"
	"strings"
)

// partialMarkers are the fields that make a profile L0, reduced or random-weight.
func partialMarkers(t testcase) []string {
	var by []string
	if v, where, _ := t.lookup(fieldCITier); v == ciTierL0 {
		by = append(by, fmt.Sprintf("%s %q (%s)", fieldCITier, ciTierL0, where))
	}
	if trace := t.str(fieldTraceID); slices.Contains(strings.Split(trace, "-"), traceTokenL0) {
		by = append(by, fmt.Sprintf("%s %q carries %q", fieldTraceID, trace, traceTokenL0))
	}
	if v, where, ok := t.lookup(familiesPremerge); ok && truthy(v) {
		by = append(by, fmt.Sprintf("%s %v (%s)", familiesPremerge, v, where))
	}
	if id := t.str(fieldHFID); id != "" {
		repo := id[strings.LastIndex(id, "/")+1:]
		if slices.Contains(strings.FieldsFunc(strings.ToLower(repo), isSeparator), randomWeightToken) {
			by = append(by, fmt.Sprintf("%s %q names random weights", fieldHFID, id))
		}
	}
	return by
}

func isSeparator(r rune) bool { return r == '-' || r == '_' || r == '.' }

// skipMarkers are the fields that say the profile is skipped or staged.
func skipMarkers(t testcase) []string {
	var by []string
	if !t.listed {
		by = append(by, fmt.Sprintf("%s is not listed in MODEL.toml test_manifests", t.manifestPath))
	}
	for _, k := range skipFlags {
		// true, or a reason in place of the flag ("skip": "staged for the next phase"):
		// any value that is not false says the profile is not run.
		if v, where, ok := t.lookup(k); ok && present(v) && !falsy(v) {
			if s, isString := v.(string); isString {
				by = append(by, fmt.Sprintf("%s %q (%s)", k, s, where))
			} else {
				by = append(by, fmt.Sprintf("%s %v (%s)", k, v, where))
			}
		}
	}
	for _, k := range skipReasons {
		if v, where, ok := t.lookup(k); ok && present(v) {
			by = append(by, fmt.Sprintf("%s %q (%s)", k, fmt.Sprint(v), where))
		}
	}
	if v, where, ok := t.lookup(fieldCITier); ok && slices.Contains(skipTiers, fmt.Sprint(v)) {
		by = append(by, fmt.Sprintf("%s %q (%s)", fieldCITier, fmt.Sprint(v), where))
	}
	if v, where, ok := t.lookup(fieldStatus); ok && slices.Contains(skipStatuses, fmt.Sprint(v)) {
		by = append(by, fmt.Sprintf("%s %q (%s)", fieldStatus, fmt.Sprint(v), where))
	}
	return by
}
