// Package qwenimage is the harness adapter of TRTMC's qwen_image family for its one
// image-edit checkpoint, Qwen/Qwen-Image-Edit-2511: the argv of TRTMC's own build,
// correctness, serve and native-task programs, all run in the image TRTMC's docs build,
// and what a host must have before they can run.
//
// The family's manifest, build arguments and quality thresholds stay in the user's TRTMC
// checkout: this package reads them there and never carries a copy. It does not know how
// the harness runs a command; it only says what to run, naming host paths.
package qwenimage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/trtmc"
)

// The checkpoint and its TRTMC profile. The revision is the one TRTMC pins
// (families/qwen_image/tests/manifests/qwen-image-edit-2511.json hf_revision in the newer
// layout; website/data/hf-model-metadata.json at e9132e79).
const (
	HFID     = "Qwen/Qwen-Image-Edit-2511"
	Profile  = "qwen-image-edit-2511" // TRTMC manifest, testcase and bundle name
	Revision = "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9"
)

// What the row serves (static in the bundle; preflight holds the manifest to it).
const (
	Precision   = "bf16"
	ImageHeight = 1024
	ImageWidth  = 1024
)

// conditionEnv names the e9132e79 build's condition image (build_env), whose size fixes
// the bundle's VAE condition grid.
const conditionEnv = "TRTMC_QWEN_IMAGE_EDIT_CONDITION_IMAGE"

// Manifest is the part of TRTMC's model manifest the adapter reads, in either layout.
type Manifest struct {
	Name       string                     `json:"name"`
	HFID       string                     `json:"hf_id"`
	HFRevision string                     `json:"hf_revision"` // newer layout
	Bundle     string                     `json:"bundle"`
	Family     string                     `json:"family"`
	Task       string                     `json:"task"`          // newer layout: image_edit
	Strategy   string                     `json:"task_strategy"` // e9132e79: its MODEL.toml e2e_defaults key
	Precision  string                     `json:"precision"`
	BuildArgs  map[string]json.RawMessage `json:"build_args"`
	BuildEnv   map[string]struct {
		Path       string `json:"path"`
		RelativeTo string `json:"relative_to"`
	} `json:"build_env"`
	ImageHeight int        `json:"image_height"` // newer layout: top level
	ImageWidth  int        `json:"image_width"`
	Testcases   []Testcase `json:"testcases"`

	raw map[string]json.RawMessage
}

// Testcase is one manifest testcase: the inputs the correctness case runs with.
type Testcase struct {
	Name              string  `json:"name"`
	TaskMode          string  `json:"task_mode"`
	Prompt            string  `json:"prompt"`
	TestImage         string  `json:"test_image"`
	NegativePrompt    string  `json:"negative_prompt"`
	ImageHeight       int     `json:"image_height"`
	ImageWidth        int     `json:"image_width"`
	NumInferenceSteps int     `json:"num_inference_steps"`
	CFGScale          float64 `json:"cfg_scale"`
	Seed              int     `json:"seed"`

	raw map[string]json.RawMessage
}

// ReadManifest reads the profile's manifest from a checkout of the layout.
func ReadManifest(checkout string, l Layout) (*Manifest, error) {
	path := filepath.Join(checkout, l.Manifest)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("TRTMC manifest: %w", err)
	}
	var m Manifest
	err = json.Unmarshal(b, &m)
	if err == nil {
		err = json.Unmarshal(b, &m.raw)
	}
	if err != nil {

		return nil, fmt.Errorf("TRTMC manifest %s: %w", path, err)
	}

	var raws struct {
		Testcases []map[string]json.RawMessage `json:"testcases"`
	}
	if err := json.Unmarshal(b, &raws); err == nil && len(raws.Testcases) == len(m.Testcases) {
		for i := range m.Testcases {
			m.Testcases[i].raw = raws.Testcases[i]
		}
	}
	return &m, nil
}

// Testcase returns the manifest's testcase of the profile.
func (m *Manifest) Testcase() (Testcase, bool) {
	for _, tc := range m.Testcases {
		if tc.Name == Profile {
			return tc, true
		}
	}
	return Testcase{}, false
}

// outputSize is the bundle's static output size as the manifest states it.
func (m *Manifest) outputSize(tc Testcase) (w, h int) {
	if m.ImageHeight > 0 {
		return m.ImageWidth, m.ImageHeight
	}
	return tc.ImageWidth, tc.ImageHeight
}

// ReadThresholds reads the checkout's threshold_overrides, the correctness case's gates.
func ReadThresholds(checkout string, l Layout) (map[string]float64, error) {
	path := filepath.Join(checkout, l.Thresholds)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("TRTMC thresholds: %w", err)
	}
	var doc struct {
		Overrides map[string]float64 `json:"threshold_overrides"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("TRTMC thresholds %s: %w", path, err)
	}
	if len(doc.Overrides) == 0 {
		return nil, fmt.Errorf("TRTMC thresholds %s: no threshold_overrides", path)
	}
	return doc.Overrides, nil
}

// checkManifest lists every way the checkout's manifest disagrees with what the row serves.
func checkManifest(m *Manifest, l Layout, tasks trtmc.Tasks) []string {
	var bad []string
	differ := func(field string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			bad = append(bad, fmt.Sprintf("%s is %v, the row serves %v", field, got, want))
		}
	}
	differ("hf_id", m.HFID, HFID)
	differ("bundle", m.Bundle, Profile+".bundle")
	differ("precision", m.Precision, Precision)
	if m.HFRevision != "" {
		differ("hf_revision", m.HFRevision, Revision)
	}
	switch l.Name {
	case LayoutE9132e79:
		if _, ok := m.BuildEnv[conditionEnv]; !ok {
			bad = append(bad, "build_env has no "+conditionEnv+": the checkout's bundles no longer take a condition image")
		}
	case LayoutFamilies:
		if !tasks.IsEdit(m.Task) {
			bad = append(bad, fmt.Sprintf("task is %q, which the checkout's task vocabulary (%s) does not map to an image edit (it does: %s)",
				m.Task, tasks.Source, strings.Join(tasks.Edits(), ", ")))
		}
	}
	tc, ok := m.Testcase()
	if !ok {
		return append(bad, fmt.Sprintf("no testcase named %q", Profile))
	}
	w, h := m.outputSize(tc)
	differ("output size (image_width x image_height)", fmt.Sprintf("%dx%d", w, h), fmt.Sprintf("%dx%d", ImageWidth, ImageHeight))
	if tc.TestImage == "" {
		bad = append(bad, "testcase has no test_image")
	}
	return bad
}

// buildEnvPath is the path a build_env entry names (relative_to "model": the family folder).
func (m *Manifest) buildEnvPath(checkout string, l Layout, name string) string {
	spec := m.BuildEnv[name]
	if filepath.IsAbs(spec.Path) {
		return spec.Path
	}
	if spec.RelativeTo == "model" {
		return filepath.Join(checkout, l.FamilyDir, spec.Path)
	}
	return filepath.Join(checkout, spec.Path)
}

// conditionImage is the image whose size the bundle's condition grid takes: build_env's
// at e9132e79, the testcase's test image in the newer layout.
func (m *Manifest) conditionImage(checkout string, l Layout) (string, error) {
	if l.Name == LayoutE9132e79 {
		if _, ok := m.BuildEnv[conditionEnv]; !ok {
			return "", fmt.Errorf("the manifest's build_env has no %s", conditionEnv)
		}
		return m.buildEnvPath(checkout, l, conditionEnv), nil
	}
	tc, ok := m.Testcase()
	if !ok || tc.TestImage == "" {
		return "", fmt.Errorf("the manifest's testcase has no test_image")
	}
	return filepath.Join(checkout, l.FamilyDir, tc.TestImage), nil
}
