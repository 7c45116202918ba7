package inventory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"qualkit/internal/trtmc"
)

// testcase is one profile as TRTMC sees it: the testcase object plus the manifest that
// holds it. Fields are kept as decoded JSON so that MODEL.toml input_fields, which name
// arbitrary manifest fields, can be resolved without a schema of every plugin.
type testcase struct {
	manifestPath string // relative to the checkout root
	listed       bool   // named by MODEL.toml test_manifests
	model        ModelFile
	modelDir     string // absolute
	manifest     map[string]any
	fields       map[string]any
}

// readManifest decodes a manifest and returns one testcase per entry of "testcases".
// A manifest without testcases, or a testcase without a name, is an error naming the
// file: the name is the profile id everything else is keyed on.
func readManifest(path, rel string) ([]map[string]any, map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", rel, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, nil, fmt.Errorf("parse manifest %s: %w", rel, err)
	}
	list, ok := top[fieldTestcases].([]any)
	if !ok || len(list) == 0 {
		return nil, nil, fmt.Errorf("manifest %s: no %q array: every manifest must declare at least one testcase profile", rel, fieldTestcases)
	}
	var out []map[string]any
	for i, v := range list {
		tc, ok := v.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("manifest %s: %s[%d] is not an object", rel, fieldTestcases, i)
		}
		name, _ := tc[fieldName].(string)
		if strings.TrimSpace(name) == "" {
			return nil, nil, fmt.Errorf("manifest %s: %s[%d] has no %q: the profile name is required", rel, fieldTestcases, i, fieldName)
		}
		out = append(out, tc)
	}
	return out, top, nil
}

// lookup finds a field on the testcase, then on its manifest, and says where it was.
func (t testcase) lookup(key string) (any, string, bool) {
	if v, ok := t.fields[key]; ok && v != nil {
		return v, "testcase", true
	}
	if v, ok := t.manifest[key]; ok && v != nil {
		return v, "manifest", true
	}
	return nil, "", false
}

// level is the testcase or its manifest, for fields whose two levels mean different
// things (user_contract: an e2e contract on the testcase, an HF pipeline tag on the manifest).
type level struct {
	where  string
	fields map[string]any
}

func (t testcase) levels() []level {
	return []level{{"testcase", t.fields}, {"manifest", t.manifest}}
}

func (t testcase) str(key string) string {
	v, _, _ := t.lookup(key)
	s, _ := v.(string)
	return s
}

func (t testcase) name() string { s, _ := t.fields[fieldName].(string); return s }

// task is the TRTMC Task the testcase runs: its selected_task, else its manifest's task
// (catalog.py @ 0dd9052f § selected_task_for_case), with the field and level it was read
// from; "" when neither names one (the e9132e79 layout has no Task field).
func (t testcase) task() (task, by string) {
	if s, _ := t.fields[trtmc.FieldSelectedTask].(string); s != "" {
		return s, fmt.Sprintf("%s %q (testcase)", trtmc.FieldSelectedTask, s)
	}
	if s, _ := t.manifest[trtmc.FieldTask].(string); s != "" {
		return s, fmt.Sprintf("%s %q (manifest)", trtmc.FieldTask, s)
	}
	return "", ""
}

func (t testcase) object(key string) map[string]any {
	v, _, _ := t.lookup(key)
	m, _ := v.(map[string]any)
	return m
}

// present reports whether a manifest field has a value: not null, not "". A blank
// string is a value (TRTMC's negative_prompt is " " on purpose).
func present(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return x != ""
	}
	return true
}

// truthy reads JSON booleans and the strings "true"/"yes"/"1".
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "1":
			return true
		}
	case json.Number:
		return x.String() != "0"
	}
	return false
}

// falsy reads JSON false and the strings "false"/"no"/"0" (and the number 0).
func falsy(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "false", "no", "0":
			return true
		}
	case json.Number:
		return x.String() == "0"
	}
	return false
}

func number(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := n.Int64()
	if err != nil {
		return 0
	}
	return int(i)
}
