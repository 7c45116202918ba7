package trtmcdouble

import (
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

// hfSnapshot is where huggingface_hub keeps the checkpoint's files at a revision.
func hfSnapshot(hfHome, revision string) string {
	return filepath.Join(hfHome, "hub", "models--"+strings.ReplaceAll(HFID, "/", "--"), "snapshots", revision)
}

// readCMakeCache reads KEY:TYPE=VALUE lines.
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
