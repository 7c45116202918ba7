package trtmcdouble

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment of the legacy bundle build (tests/e2e_harness/orchestrator.py at e9132e79).
const (
	EnvConditionImage = "TRTMC_QWEN_IMAGE_EDIT_CONDITION_IMAGE"
	EnvNativeBinDir   = "_TRTMC_INTERNAL_NATIVE_BIN_DIR"
)

// buildParser is TRTMC's build_cli.py build parser (e9132e79), the options the double plays.
var buildParser = newOptParser(true,
	opt{"-o|--output", true}, opt{"--model-revision", true}, opt{"--max-cache-length", true},
	opt{"--image-height", true}, opt{"--image-width", true}, opt{"--video-height", true},
	opt{"--video-width", true}, opt{"--video-num-frames", true},
	opt{"--num-inference-steps", true}, opt{"--max-batch-size", true},
	opt{"--precision", true}, opt{"--method", true}, opt{"--build-timing-json", true},
	opt{"--trust-remote-code", false}, opt{"--tp-size", true}, opt{"--cp-size", true},
)

const buildUsage = "usage: trtmc build [-h] -o OUTPUT [--model-revision R] [--max-cache-length N] [--image-height N] [--image-width N] [--video-height N] [--video-width N] [--video-num-frames N] [--num-inference-steps N] [--max-batch-size N] [--precision {fp32,fp16,bf16}] [--method {auto,trt}] [--build-timing-json PATH] [--trust-remote-code] [--tp-size N] [--cp-size N] model"

type buildRequest struct {
	model, out, timing string
	spec               BundleSpec
}

// parseBuild parses the build options as argparse would, with its error texts.
func parseBuild(args []string) (buildRequest, error) {
	a, err := buildParser.parse(args)
	if err != nil {
		return buildRequest{}, fmt.Errorf("argument %s: expected one argument", err.(*missingValueError).flag)
	}
	switch {
	case len(a.unknown) > 0:
		return buildRequest{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(a.unknown, " "))
	case len(a.pos) > 1:
		return buildRequest{}, fmt.Errorf("unrecognized arguments: %s", strings.Join(a.pos[1:], " "))
	case len(a.pos) == 0:
		return buildRequest{}, errors.New("the following arguments are required: model")
	case !a.has("-o"):
		return buildRequest{}, errors.New("the following arguments are required: -o/--output")
	}
	r := buildRequest{model: a.pos[0], out: a.get("-o"), timing: a.get("--build-timing-json"),
		spec: BundleSpec{Precision: "fp32", Revision: a.get("--model-revision")}}
	ints := []struct {
		flag string
		dst  *int
		def  int
	}{
		{"--max-cache-length", &r.spec.MaxCacheLength, 256},
		{"--image-height", &r.spec.ImageHeight, DefaultSize},
		{"--image-width", &r.spec.ImageWidth, DefaultSize},
		{"--num-inference-steps", &r.spec.NumInferenceSteps, DefaultSteps},
	}
	for _, f := range ints {
		if *f.dst, err = intArg(f.flag, a.get(f.flag), f.def); err != nil {
			return buildRequest{}, err
		}
	}
	for _, f := range []string{"--video-height", "--video-width", "--video-num-frames", "--max-batch-size", "--tp-size", "--cp-size"} {
		if _, err := intArg(f, a.get(f), 0); err != nil {
			return buildRequest{}, err
		}
	}
	if a.has("--precision") {
		r.spec.Precision = a.get("--precision")
		if !oneOf("fp32", "fp16", "bf16")(r.spec.Precision) {
			return buildRequest{}, fmt.Errorf("argument --precision: invalid choice: '%s' (choose from 'fp32', 'fp16', 'bf16')", r.spec.Precision)
		}
	}
	if m := a.get("--method"); a.has("--method") && !oneOf("auto", "trt")(m) {
		return buildRequest{}, fmt.Errorf("argument --method: invalid choice: '%s' (choose from 'auto', 'trt')", m)
	}
	return r, nil
}

// buildMain plays `python3 -m tensorrt_model_connect build` and `trtmc build`; nativeBinDir
// is the default of _TRTMC_INTERNAL_NATIVE_BIN_DIR ("" for the Python module).
func buildMain(p *proc, args []string, nativeBinDir string) int {
	r, err := parseBuild(args)
	if err != nil {
		return p.fail(exitUsage, "%s\ntrtmc build: error: %v", buildUsage, err)
	}
	if nd := p.getenv(EnvNativeBinDir); nd != "" {
		nativeBinDir = nd
	}
	if err := p.checkBuild(&r, nativeBinDir); err != nil {
		return p.fail(exitFail, "Error: %v", err)
	}
	h, err := NewBundleHeader(r.spec)
	if err == nil {
		err = WriteBundle(p.abs(r.out), h)
	}
	if err == nil && r.timing != "" {
		var b []byte
		if b, err = json.MarshalIndent(map[string]any{Marker: true, "total_s": 0.01}, "", "  "); err == nil {
			err = os.WriteFile(p.abs(r.timing), append(b, '\n'), 0o644)
		}
	}
	if err != nil {
		return p.fail(exitFail, "Error: %v", err)
	}
	fmt.Fprintf(p.stdout, "Bundle written to %s (qualkit contract double: no engines were built)\n", r.out)
	return exitOK
}

// checkBuild checks what the build reads and loads the condition image into r.spec.
func (p *proc) checkBuild(r *buildRequest, nativeBinDir string) error {
	switch {
	case r.model != HFID:
		return fmt.Errorf("the qualkit contract double builds only %s, not %s", HFID, r.model)
	case p.getenv("HF_HUB_OFFLINE") != "1":
		return errors.New("HF_HUB_OFFLINE=1 is required: the build must read only the local Hugging Face cache")
	case p.getenv("HF_HOME") == "":
		return errors.New("HF_HOME is not set: the double reads the snapshot only from $HF_HOME/hub")
	case r.spec.Revision == "":
		return errors.New("--model-revision is required by the qualkit contract double: it pins the snapshot")
	}
	index := filepath.Join(hfSnapshot(p.getenv("HF_HOME"), r.spec.Revision), "model_index.json")
	if !isFile(index) {
		return fmt.Errorf("no snapshot of %s at revision %s in HF_HOME (missing %s)", HFID, r.spec.Revision, index)
	}
	legacy := layoutOf(p.wd) != LayoutFamilies
	cond := p.getenv(EnvConditionImage)
	if cond == "" && legacy {
		return fmt.Errorf("%s is not set: the edit bundle compiles its condition grid from that image", EnvConditionImage)
	}
	if cond != "" {
		b, err := os.ReadFile(p.abs(cond))
		if err != nil {
			return fmt.Errorf("%s: %w", EnvConditionImage, err)
		}
		if _, _, err := imageSize(b); err != nil {
			return fmt.Errorf("%s=%s: %w", EnvConditionImage, cond, err)
		}
		r.spec.Condition = b
	}
	if legacy && nativeBinDir == "" {
		return fmt.Errorf("%s is not set: the build loads the native backend %s from it", EnvNativeBinDir, libBackendTRT)
	}
	if legacy && !isFile(filepath.Join(p.abs(nativeBinDir), libBackendTRT)) {
		return fmt.Errorf("%s=%q holds no %s: build the native backend first (cmake --build BUILD --target trtmc_backend_trt)", EnvNativeBinDir, nativeBinDir, libBackendTRT)
	}
	return nil
}

// builderMain plays TRTMC's Python builder for the stand-in tensorrt_model_connect package:
// `build ARGS` as e9132e79's build_cli.py, and `build-request FILE` as
// tensorrt_model_connect.build(BuildRequest), the request's fields as JSON.
func builderMain(p *proc) int {
	args := p.args[1:]
	switch {
	case len(args) > 0 && args[0] == "build":
		return buildMain(p, args[1:], "")
	case len(args) == 2 && args[0] == "build-request":
		return buildRequestMain(p, args[1])
	}
	return p.fail(exitUsage, "tensorrt-model-connect (qualkit contract double): only `build HF_ID -o OUT ...` and `build-request FILE` are played")
}

// familiesBuildRequest is the BuildRequest the families case passes (test_e2e.py @
// f0a1b69f § _build: for image_edit, image_height and image_width are the test photo's);
// the double reads the fields a bundle of its own records.
type familiesBuildRequest struct {
	ModelDir           string `json:"model_dir"`
	OutputPath         string `json:"output_path"`
	Family             string `json:"family"`
	Task               string `json:"task"`
	Precision          string `json:"precision"`
	ImageHeight        *int   `json:"image_height"`
	ImageWidth         *int   `json:"image_width"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
}

func buildRequestMain(p *proc, path string) int {
	b, err := os.ReadFile(p.abs(path))
	if err != nil {
		return p.fail(exitFail, "build: %v", err)
	}
	var r familiesBuildRequest
	if err := json.Unmarshal(b, &r); err != nil {
		return p.fail(exitFail, "build: the request %s: %v", path, err)
	}
	switch {
	case r.Family != Family || r.Task != "image_edit":
		return p.fail(exitFail, "build: family %q task %q: the qualkit contract double builds only %s image_edit", r.Family, r.Task, Family)
	case r.TensorParallelSize > 1:
		return p.fail(exitFail, "build: tensor_parallel_size %d: the double builds single-GPU bundles", r.TensorParallelSize)
	case !isFile(filepath.Join(p.abs(r.ModelDir), "model_index.json")):
		return p.fail(exitFail, "build: model_dir %s holds no model_index.json", r.ModelDir)
	case r.OutputPath == "":
		return p.fail(exitFail, "build: output_path is empty")
	}
	// An edit build takes image_height x image_width as its condition image's size and
	// keeps the bundle's default 1024x1024 output (model.py @ b40c8184 § build:
	// edit_condition_image_size, no raw geometry), refusing a request without them.
	if r.ImageWidth == nil || r.ImageHeight == nil {
		return p.fail(exitFail, "build: Qwen-Image Edit requires image_height and image_width for the condition image")
	}
	spec := BundleSpec{Precision: r.Precision, MaxCacheLength: 256, ImageWidth: DefaultSize, ImageHeight: DefaultSize}
	if dir := filepath.Clean(p.abs(r.ModelDir)); filepath.Base(filepath.Dir(dir)) == "snapshots" {
		spec.Revision = filepath.Base(dir)
	}
	h, err := NewBundleHeader(spec)
	h.ConditionWidth, h.ConditionHeight = *r.ImageWidth, *r.ImageHeight
	if err == nil {
		err = WriteBundle(p.abs(r.OutputPath), h)
	}
	if err != nil {
		return p.fail(exitFail, "build: %v", err)
	}
	fmt.Fprintf(p.stdout, "Bundle written to %s (qualkit contract double: no engines were built)\n", r.OutputPath)
	return exitOK
}
