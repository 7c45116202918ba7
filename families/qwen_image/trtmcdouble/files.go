package trtmcdouble

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The two TRTMC checkout layouts: main e9132e79, and the newer families/ layout.
const (
	LayoutLegacy   = "legacy"
	LayoutFamilies = "families"
)

// Paths inside a checkout, per layout.
const (
	legacyModelDir   = "tests/e2e/models/qwen_image"
	legacyModelTOML  = legacyModelDir + "/MODEL.toml"
	legacyManifest   = legacyModelDir + "/manifests/" + Profile + ".json"
	legacyTestFile   = legacyModelDir + "/test_qwen_image_e2e.py"
	familiesTestsDir = "families/qwen_image/tests"
	familiesManifest = familiesTestsDir + "/manifests/" + Profile + ".json"
	familiesTestFile = familiesTestsDir + "/test_e2e.py"
	familiesTestImg  = familiesTestsDir + "/data/test_img.jpeg"
)

// Library files of the native build.
const (
	libBackendTRT = "libtrtmc_backend_trt.so"
	libModelQwen  = "libtrtmc_model_qwen_image.so"
)

// layoutOf says which layout the checkout at src has: "" when it is neither.
func layoutOf(src string) string {
	switch {
	case isFile(filepath.Join(src, familiesManifest)):
		return LayoutFamilies
	case isFile(filepath.Join(src, legacyModelTOML)):
		return LayoutLegacy
	}
	return ""
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// writeExecutable copies the running executable to dst (through a temporary file and a
// rename, so a running copy at dst is replaced, not overwritten).
func writeExecutable(self, dst string) error {
	b, err := os.ReadFile(self)
	if err != nil {
		return fmt.Errorf("reading own executable: %w", err)
	}
	return writeFileAtomic(dst, b, 0o755)
}

func writeFileAtomic(dst string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".tmp-qualkit-double"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// hfSnapshot is where huggingface_hub keeps the checkpoint's files at a revision.
func hfSnapshot(hfHome, revision string) string {
	return filepath.Join(hfHome, "hub", "models--"+strings.ReplaceAll(HFID, "/", "--"), "snapshots", revision)
}

// hfHome is the Hugging Face cache root huggingface_hub would use.
func (p *proc) hfHome() string {
	switch {
	case p.getenv("HF_HOME") != "":
		return p.getenv("HF_HOME")
	case p.getenv("XDG_CACHE_HOME") != "":
		return filepath.Join(p.getenv("XDG_CACHE_HOME"), "huggingface")
	case p.getenv("HOME") != "":
		return filepath.Join(p.getenv("HOME"), ".cache", "huggingface")
	}
	return ""
}

// readCMakeCache reads KEY:TYPE=VALUE lines into KEY -> VALUE.
func readCMakeCache(buildDir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(buildDir, "CMakeCache.txt"))
	if err != nil {
		return nil, err
	}
	cache := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "//") {
			continue
		}
		kt, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, _, _ := strings.Cut(kt, ":")
		cache[k] = v
	}
	return cache, nil
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// manifest is the fields of a TRTMC test manifest the double reads.
type manifest struct {
	Name       string `json:"name"`
	HFID       string `json:"hf_id"`
	HFRevision string `json:"hf_revision"`
	Bundle     string `json:"bundle"`
	Family     string `json:"family"`
	Task       string `json:"task"`
	Precision  string `json:"precision"`
	// ImageHeight and ImageWidth are the output size (the families layout states it
	// once for the manifest).
	ImageHeight int        `json:"image_height"`
	ImageWidth  int        `json:"image_width"`
	Testcases   []testcase `json:"testcases"`
}

type testcase struct {
	Name              string   `json:"name"`
	Prompt            string   `json:"prompt"`
	TestImage         string   `json:"test_image"`
	NegativePrompt    *string  `json:"negative_prompt"`
	NumInferenceSteps int      `json:"num_inference_steps"`
	CFGScale          *float64 `json:"cfg_scale"`
	Seed              int64    `json:"seed"`
}
