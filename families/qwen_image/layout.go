package qwenimage

import (
	"fmt"
	"os"
	"path/filepath"
	"qualkit/internal/family"
	"time"

	"qualkit/internal/quality"
)

// A TRTMC checkout comes in one of two layouts: public main e9132e79 (2026-08-22; the
// case under tests/e2e/models/qwen_image/ finds the bundle TRTMC's Python builder made
// in --engine-dir; no HTTP server), or the newer families layout (October 2026: the
// case in families/qwen_image/tests/ builds its own bundle under pytest's tmp_path).
const (
	LayoutE9132e79 = "e9132e79"
	LayoutFamilies = "families"
)

// Layout is where one layout keeps the pieces the row uses, relative to the checkout.
type Layout struct {
	Name                           string
	FamilyDir                      string // manifest paths are relative to it
	Manifest, Thresholds, TestFile string
	NodeID, CaseID                 string // the profile's case; its JUnit id
	E2EModel                       string // holds build_cli_args (e9132e79 only)
	// PythonPath is what TRTMC's editable install puts on sys.path (each command runs in
	// a fresh container, so it is given as PYTHONPATH).
	PythonPath []string
	// PluginLib is the model plugin, relative to the build folder; PluginDir is what
	// TRTMC_MODEL_PLUGIN_DIR names.
	PluginLib, PluginDir string
	CMakeOptions         []string // beyond source-build.md's common ones
	Targets              []string
	// PairReference is the HF image the case writes for its pair, under its artifacts.
	PairReference string
	// PairMetric is the PSNR/SSIM formula its thresholds bound (internal/quality/trtmc.go).
	PairMetric string
}

// evidencePlugin is TRTMC's e2e evidence plugin in the families layout, relative to the
// checkout (tools/e2e_evidence.py @ e2c6fa14).
const evidencePlugin = "tools/e2e_evidence.py"

var layouts = []Layout{
	{
		Name:       LayoutE9132e79,
		FamilyDir:  "tests/e2e/models/qwen_image",
		Manifest:   "tests/e2e/models/qwen_image/manifests/" + Profile + ".json",
		Thresholds: "tests/e2e/models/qwen_image/thresholds/" + Profile + ".json",
		TestFile:   "tests/e2e/models/qwen_image/test_qwen_image_e2e.py",
		NodeID:     "tests/e2e/models/qwen_image/test_qwen_image_e2e.py::test_model_e2e[" + Profile + "]",
		CaseID:     "tests.e2e.models.qwen_image.test_qwen_image_e2e.test_model_e2e[" + Profile + "]",
		E2EModel:   "tests/e2e/models/qwen_image/MODEL.toml",
		PythonPath: []string{"python"},
		// CMakeLists.txt:503-507 at e9132e79: models/<id>/lib<...>.so
		PluginLib:    "models/qwen_image/libtrtmc_model_qwen_image.so",
		PluginDir:    "models", // source-build.md:69
		CMakeOptions: []string{"-DTRTMC_BUILD_TESTS=OFF", "-DTRTMC_BUILD_BENCHMARKS=OFF"},
		// source-build.md:64-67 names trtmc_model_qwen, a target that does not exist for
		// this family: the Qwen-Image plugin target is trtmc_model_qwen_image.
		Targets: []string{"trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image"},
		// e2e_plugins/references/hf_diffusers.py: <artifacts>/<case>/hf_frames/frame_0000.png
		PairReference: Profile + "/hf_frames/frame_0000.png",
		// e2e_plugins/comparators/diffusion.py @ e9132e79: _compute_psnr, _compute_ssim.
		PairMetric: quality.MetricTRTMCE9132e79,
	},
	{
		Name:       LayoutFamilies,
		FamilyDir:  "families/qwen_image/tests",
		Manifest:   "families/qwen_image/tests/manifests/" + Profile + ".json",
		Thresholds: "families/qwen_image/tests/thresholds/" + Profile + ".json",
		TestFile:   "families/qwen_image/tests/test_e2e.py",
		NodeID:     "families/qwen_image/tests/test_e2e.py::test_official_checkpoint_e2e[" + Profile + "]",
		CaseID:     "families.qwen_image.tests.test_e2e.test_official_checkpoint_e2e[" + Profile + "]",
		PythonPath: []string{"core/builder", "apps/benchmark", "."},
		// families/qwen_image/runtime/CMakeLists.txt: the library lands in the build root.
		PluginLib: "libtrtmc_model_qwen_image.so",
		PluginDir: ".",
		// The case builds qwen_image_e2e_harness itself (a TRTMC_BUILD_TESTS target); the
		// persistent worker needs TRTMC_BUILD_EXAMPLES.
		CMakeOptions: []string{"-DTRTMC_BUILD_TESTS=ON", "-DTRTMC_BUILD_BENCHMARKS=OFF", "-DTRTMC_BUILD_EXAMPLES=ON"},
		Targets:      []string{"trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image", "qwen_image_e2e_harness", "trtmc_benchmark_worker"},
		// test_e2e.py's semantic artifacts: <artifacts>/<case>/reference-000.png
		PairReference: Profile + "/reference-000.png",
		// families/qwen_image/tests/test_e2e.py @ 9777fef7: _assert_parity.
		PairMetric: quality.MetricTRTMCFamilies,
	},
}

// DetectLayout finds the layout of a checkout from the profile's manifest.
func DetectLayout(checkout string) (Layout, error) {
	var found []Layout
	for _, l := range layouts {
		if isFile(filepath.Join(checkout, l.Manifest)) {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Layout{}, fmt.Errorf("TRTMC checkout %s has the manifest of neither known layout (%s, %s)", checkout, layouts[0].Manifest, layouts[1].Manifest)
	}
	return Layout{}, fmt.Errorf("TRTMC checkout %s has the manifest of both layouts (%s, %s): which one is current?", checkout, found[0].Manifest, found[1].Manifest)
}

func (l Layout) buildsOwnBundle() bool { return l.Name == LayoutFamilies }

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// caseBuildTimeout is what TRTMC's e2e orchestrator gives one bundle build
// (tests/e2e_harness/orchestrator.py @ e9132e79: build_timeout_s, default 3600).
const caseBuildTimeout = 3600 * time.Second

// perfServeWorkerStartup is perf-serve's wait for its worker: startup_timeout_s
// (backends/trtmc.py @ 7b798a32), which cli.py @ 3878755c § serve cannot change.
const perfServeWorkerStartup = 900 * time.Second

const perfServeStartSlack = time.Minute // the fingerprint and uvicorn's start

// stageDeadlines: the families case builds its bundle first (TRTMC's build timeout
// added), and perf-serve's worker has a fixed 900 s to load, plus a minute to listen.
func (a TRTMC) stageDeadlines(d family.Deadlines) family.Deadlines {
	if l, err := a.layout(); err == nil && l.buildsOwnBundle() {
		d.Correctness += caseBuildTimeout
	}
	if a.perfServe() {
		d.Ready = min(d.WithDefaults().Ready, perfServeWorkerStartup+perfServeStartSlack)
	}
	return d
}
