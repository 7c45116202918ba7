// Package qwenimage is the harness adapter of TRTMC's qwen_image family for its one
// image-edit checkpoint, Qwen/Qwen-Image-Edit-2511: the argv of TRTMC's build, serve,
// native-task and correctness programs, and what a host must have before they can run.
//
// The family's own manifest and quality thresholds stay in the user's TRTMC checkout:
// this package reads them there and never carries a copy. It does not know how the
// harness runs a command (process or container); it only says what to run.
package qwenimage

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// The checkpoint and its TRTMC profile (tests/e2e/models/qwen_image/manifests/
// qwen-image-edit-2511.json at TRTMC main e9132e79; revision from TRTMC's
// website/data/hf-model-metadata.json).
const (
	HFID     = "Qwen/Qwen-Image-Edit-2511"
	Profile  = "qwen-image-edit-2511" // TRTMC manifest, testcase and bundle name
	Revision = "6f3ccc0b56e431dc6a0c2b2039706d7d26f22cb9"
)

// The build settings baked into the bundle. They are build arguments (REFERENCE.md's
// `trtmc build` argv and the manifest's build inputs), not quality thresholds; preflight
// checks that the checkout's manifest asks for the same.
const (
	Precision         = "bf16"
	ImageHeight       = 1024 // output height the bundle is compiled for
	ImageWidth        = 1024
	NumInferenceSteps = 20
	MaxCacheLength    = 256
)

// The condition image fixes a static VAE condition grid in the bundle: every reference
// image served must have its size. It is the size of TRTMC's own test photo
// (data/test_img.jpeg), so that the family's unchanged correctness case, which edits that
// photo, runs on the bundle qualkit builds.
const (
	ConditionWidth  = 640
	ConditionHeight = 382
)

// Paths inside a TRTMC checkout.
const (
	familyDir      = "tests/e2e/models/qwen_image"
	modelTOMLPath  = familyDir + "/MODEL.toml"
	e2eTestPath    = familyDir + "/test_qwen_image_e2e.py"
	manifestPath   = familyDir + "/manifests/" + Profile + ".json"
	thresholdsPath = familyDir + "/thresholds/" + Profile + ".json"
	binaryPath     = "build/trtmc" // TRTMC's CLI; its own CI passes it as --trtmc-binary
	// e2eCaseID is the JUnit id of the case's one item for the profile, as pytest writes
	// it with the checkout as rootdir.
	e2eCaseID = "tests.e2e.models.qwen_image.test_qwen_image_e2e.test_model_e2e[" + Profile + "]"
)

// conditionEnv names the build's condition image (the manifest's build_env).
const conditionEnv = "TRTMC_QWEN_IMAGE_EDIT_CONDITION_IMAGE"

// Manifest is the part of TRTMC's model manifest this adapter checks against its own
// build settings.
type Manifest struct {
	Name      string                     `json:"name"`
	HFID      string                     `json:"hf_id"`
	Bundle    string                     `json:"bundle"`
	Family    string                     `json:"family"`
	Precision string                     `json:"precision"`
	BuildArgs map[string]json.RawMessage `json:"build_args"`
	BuildEnv  map[string]struct {
		Path       string `json:"path"`
		RelativeTo string `json:"relative_to"`
	} `json:"build_env"`
	Testcases []Testcase `json:"testcases"`
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
	Height            int     `json:"height"`
	Width             int     `json:"width"`
	NumInferenceSteps int     `json:"num_inference_steps"`
	CFGScale          float64 `json:"cfg_scale"`
	Seed              int     `json:"seed"`
}

// ReadManifest reads the profile's manifest from a TRTMC checkout.
func ReadManifest(checkout string) (*Manifest, error) {
	path := filepath.Join(checkout, manifestPath)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("TRTMC manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("TRTMC manifest %s: %w", path, err)
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

// ReadThresholds reads the quality gates the correctness case applies, as the checkout
// states them (its threshold_overrides), so evidence and messages can quote them without
// qualkit keeping a copy.
func ReadThresholds(checkout string) (map[string]float64, error) {
	path := filepath.Join(checkout, thresholdsPath)
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

// checkManifest lists every way the checkout's manifest disagrees with what this adapter
// builds: a bundle built with other settings than the correctness case expects would
// make its verdict say nothing about the bundle.
func checkManifest(m *Manifest) []string {
	var bad []string
	differ := func(field string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			bad = append(bad, fmt.Sprintf("%s is %v, the adapter builds %v", field, got, want))
		}
	}
	differ("hf_id", m.HFID, HFID)
	differ("bundle", m.Bundle, Profile+".bundle")
	differ("precision", m.Precision, Precision)
	var maxCache any = "(absent)"
	if raw, ok := m.BuildArgs["max_cache_length"]; ok {
		maxCache = string(raw)
	}
	differ("build_args.max_cache_length", maxCache, MaxCacheLength)
	if _, ok := m.BuildEnv[conditionEnv]; !ok {
		bad = append(bad, "build_env has no "+conditionEnv+": the checkout's bundles no longer take a condition image")
	}
	tc, ok := m.Testcase()
	if !ok {
		return append(bad, fmt.Sprintf("no testcase named %q", Profile))
	}
	differ("testcase image_height", tc.ImageHeight, ImageHeight)
	differ("testcase image_width", tc.ImageWidth, ImageWidth)
	differ("testcase num_inference_steps", tc.NumInferenceSteps, NumInferenceSteps)
	if tc.TestImage == "" {
		bad = append(bad, "testcase has no test_image")
	}
	return bad
}
