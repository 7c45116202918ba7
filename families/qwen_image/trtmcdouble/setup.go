package trtmcdouble

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Paths in qualkit's repository that the setup helpers read.
const (
	cmdPackage   = "./families/qwen_image/trtmcdouble/cmd/trtmcdouble"
	familiesTree = "internal/trtmc/testdata/families"
	legacyTree   = "internal/trtmc/testdata/e9132e79"
	// commonTree holds what every checkout of the double gets besides its layout's tree:
	// the CMake functions, the stand-in Python packages and the serving stand-ins.
	commonTree  = "families/qwen_image/trtmcdouble/checkout"
	imageDir    = "families/qwen_image/trtmcdouble/image"
	imageScript = "scripts/double-image.sh"
)

// Trees are the repository paths the double's checkouts and image are made from.
var Trees = []string{familiesTree, legacyTree, commonTree, imageDir, imageScript}

// Build compiles the double into out as a static Linux binary.
func Build(ctx context.Context, repoRoot, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, cmdPackage)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", cmdPackage, err, b)
	}
	return nil
}

// PythonImage is the tag of the Python image scripts/double-image.sh makes, keyed as the
// script keys it: the sha256 of the script, the image's Dockerfile and its lock.
func PythonImage(repoRoot string) (string, error) {
	h := sha256.New()
	for _, f := range []string{imageScript, imageDir + "/Dockerfile", imageDir + "/requirements.lock"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			return "", fmt.Errorf("the double's image: %w", err)
		}
		h.Write(b)
	}
	return fmt.Sprintf("qualkit/trtmc-double-python:%x", h.Sum(nil)[:8]), nil
}

// DockerfileName is TRTMC's dev Dockerfile name for this machine's architecture.

func DockerfileName() (string, error) {
	switch runtime.GOARCH {
	case "amd64":
		return "Dockerfile.dev.x86", nil
	case "arm64":
		return "Dockerfile.dev.aarch64", nil
	}
	return "", fmt.Errorf("TRTMC has no dev Dockerfile for %s", runtime.GOARCH)
}

// Serving contracts a checkout of the double can carry (qwen_image's DetectServing reads
// them from the source files Checkout writes).
const (
	ServingPerfServe = "perf-serve"
	ServingEditRoute = "edit-route"
	ServingNone      = "none"
)

// dockerignore is shaped like TRTMC's root .dockerignore at e9132e79: everything denied,
// then an allow-list of python/ that leaves out requirements/, which the dev Dockerfile
// copies from. `docker build -f Dockerfile.dev.x86 .` therefore fails on it, as TRTMC's
// own documented command does; qualkit stages the context from the COPY lines instead.
const dockerignore = `# qualkit contract double: shaped like TRTMC's root .dockerignore at e9132e79 (a
# deny-all with an allow-list that leaves out requirements/ and qualkit-double/).
*
!python/
!python/tensorrt_model_connect/
!python/tensorrt_model_connect/__init__.py
**/__pycache__/
`

// doubleDockerfile copies from where the layout's dev Dockerfile copies: the checkout root
// is the context at e9132e79, requirements/ in the newer layout (Dockerfile.dev.x86 @
// 520a0165), so the double's files lie under requirements/ there.
func doubleDockerfile(layout, base string) string {
	reqs := "requirements/community-ci.txt"
	if layout == LayoutFamilies {
		reqs = "community-ci.txt"
	}
	return strings.NewReplacer("{{reqs}}", reqs, "{{base}}", base).Replace(dockerfileTemplate)
}

const dockerfileTemplate = `# qualkit contract double: this Dockerfile is the double's, NOT TensorRT-Model-Connect's.
# It carries the name of TRTMC's dev Dockerfile so that qualkit finds it where it looks,
# and copies from where that layout's Dockerfile copies. Its base is real Python with
# pytest, CMake and perf-serve's dependencies (scripts/double-image.sh); it adds qualkit's
# Go binary, which the stand-in CMake build copies under TRTMC's program names, and
# stand-in Python modules for what cannot run here (torch, torchvision, transformers,
# accelerate, tensorrt, diffusers, ftfy).
# No CUDA, no TensorRT, no model: nothing it produces is a real result.
FROM {{base}}
LABEL qualkit.contract-double="true"
COPY {{reqs}} /tmp/trtmc-community-ci.txt
COPY ` + doubleFiles + `/trtmcdouble /usr/local/bin/trtmcdouble
COPY ` + doubleFiles + `/site/ /usr/local/lib/python3.11/dist-packages/
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /workspace/tensorrt-model-connect
`

// doubleFiles is where a checkout keeps the double's binary and site packages, relative
// to its image's build context.
const doubleFiles = "qualkit-double"

// CheckoutSpec says which TRTMC-shaped checkout to make.
type CheckoutSpec struct {
	// Layout is LayoutFamilies or LayoutLegacy; Serving one of the Serving constants (the
	// legacy layout, like TRTMC main e9132e79, has none).
	Layout, Serving string
	// PerfServe, for the perf-serve contract: a snapshot of TRTMC's apps/perf_serving and
	// apps/benchmark, run through checkout/perf-serve-shim instead of the Go imitation.
	PerfServe   string
	PythonImage string
}

// Checkout creates a TRTMC-shaped checkout at dir (absent or empty) with the built double
// and the double's Dockerfile under TRTMC's dev Dockerfile name, committed once so the
// checkout has a revision.
func Checkout(ctx context.Context, repoRoot, dir string, spec CheckoutSpec) error {
	var tree, builder, context string
	switch spec.Layout {
	case LayoutFamilies:
		tree, builder, context = familiesTree, "core/builder", "requirements"
	case LayoutLegacy:
		tree, builder, context = legacyTree, "python", "."
	default:
		return fmt.Errorf("checkout layout %q: want %q or %q", spec.Layout, LayoutFamilies, LayoutLegacy)
	}
	if !oneOf(ServingPerfServe, ServingEditRoute, ServingNone)(spec.Serving) || (spec.Layout == LayoutLegacy && spec.Serving != ServingNone) {
		return fmt.Errorf("checkout serving %q: want %s, %s or %s (legacy: %s only)", spec.Serving, ServingPerfServe, ServingEditRoute, ServingNone, ServingNone)
	}
	if spec.PerfServe != "" && spec.Serving != ServingPerfServe {
		return fmt.Errorf("a perf-serve snapshot (%s) for a checkout serving %s", spec.PerfServe, spec.Serving)
	}
	if spec.PythonImage == "" {
		return errors.New("checkout: no Python image for the double's Dockerfile (trtmcdouble.PythonImage)")
	}
	dockerfile, err := DockerfileName()
	if err != nil {
		return err
	}
	common := filepath.Join(repoRoot, commonTree)
	copies := []struct{ from, to string }{
		{filepath.Join(repoRoot, tree), "."},
		{filepath.Join(common, "cmake"), "cmake"},
		{filepath.Join(common, "python"), builder},
		{filepath.Join(common, "site"), filepath.Join(context, doubleFiles, "site")},
	}
	switch {
	case spec.PerfServe != "":
		snap, err := perfServeSnapshot(spec.PerfServe)
		if err != nil {
			return err
		}
		copies = append(copies,
			struct{ from, to string }{filepath.Join(snap, "apps"), "apps"},
			struct{ from, to string }{filepath.Join(common, "perf-serve-shim"), "apps/perf_serving/trtmc_perf_serving"})
		for _, f := range []string{"LICENSE", "NOTICE", "MANIFEST.txt"} {
			copies = append(copies, struct{ from, to string }{filepath.Join(snap, f), filepath.Join("apps", "perf_serving", "TRTMC-SNAPSHOT", f)})
		}
	case spec.Serving != ServingNone:
		copies = append(copies, struct{ from, to string }{filepath.Join(common, "serving", spec.Serving), "."})
	}
	for _, c := range copies {
		if err := copyTree(c.from, filepath.Join(dir, c.to)); err != nil {
			return err
		}
	}
	files := map[string]string{".dockerignore": dockerignore, dockerfile: doubleDockerfile(spec.Layout, spec.PythonImage),
		"requirements/community-ci.txt": "# qualkit contract double: stands for TRTMC's community CI pins\n"}
	for rel, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := Build(ctx, repoRoot, filepath.Join(dir, context, doubleFiles, "trtmcdouble")); err != nil {
		return err
	}
	what := "serving " + spec.Serving
	if spec.PerfServe != "" {
		what = "serving TRTMC's own perf-serve from " + spec.PerfServe
	}
	return gitCommit(ctx, dir, "TRTMC-shaped checkout ("+spec.Layout+" layout, "+what+") with qualkit's contract double")
}

// perfServeSnapshot finds the snapshot in a TRTMC_PERF_SERVE folder: itself or snapshot/.
func perfServeSnapshot(dir string) (string, error) {
	for _, d := range []string{filepath.Join(dir, "snapshot"), dir} {
		if isFile(filepath.Join(d, "apps", "perf_serving", "trtmc_perf_serving", "app.py")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s holds no snapshot of TRTMC's perf-serve (apps/perf_serving/trtmc_perf_serving/app.py, in it or in snapshot/)", dir)
}

// copyTree copies the files under src into dst, keeping their modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, info.Mode().Perm()|0o200); err != nil {
			return fmt.Errorf("copying %s: %w", path, err)
		}
		return os.Chmod(out, info.Mode().Perm()|0o200)
	})
}

// gitCommit commits everything in dir, whatever the user's git configuration.
func gitCommit(ctx context.Context, dir, message string) error {
	git := func(args ...string) error {
		base := []string{"-c", "user.name=qualkit", "-c", "user.email=qualkit@localhost",
			"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-c", "core.hooksPath=" + os.DevNull}
		cmd := exec.CommandContext(ctx, "git", append(base, args...)...)
		cmd.Dir = dir
		// Fixed dates: the same tree gives the same commit, so a rerun reuses the native
		// build and the bundle that the commit keys.
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_DATE=2026-12-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-12-01T00:00:00Z")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := git("init", "-q"); err != nil {
		return err
	}
	if err := git("add", "-A"); err != nil {
		return err
	}
	return git("commit", "-q", "-m", message)
}

// HFCache writes a fake Hugging Face cache (HF_HOME=dir) of the checkpoint at Revision,
// laid out as huggingface_hub lays it out, and returns the snapshot directory.
func HFCache(dir string) (string, error) {
	repo := filepath.Join(dir, "hub", "models--"+strings.ReplaceAll(HFID, "/", "--"))
	snapshot := filepath.Join(repo, "snapshots", Revision)
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(Revision), 0o644); err != nil {
		return "", err
	}
	files, err := hfFiles()
	if err != nil {
		return "", err
	}
	for rel, content := range files {
		if err := writeBlobLink(repo, filepath.Join(snapshot, rel), content); err != nil {
			return "", err
		}
	}
	return snapshot, nil
}

// hfFiles are the snapshot's files by path.
func hfFiles() (map[string][]byte, error) {
	// Latent replay reads the transformer's in_channels and the VAE's temporal
	// downsample (latents.py @ d3e1a549 § _qwen_image): the checkpoint's values.
	extra := map[string]map[string]any{
		"transformer": {"in_channels": transformerInChannels},
		"vae":         {"temperal_downsample": make([]bool, vaeTemporalDownsample)},
	}
	components := [][3]string{
		{"transformer", "diffusers", "QwenImageTransformer2DModel"},
		{"text_encoder", "transformers", "Qwen2_5_VLForConditionalGeneration"},
		{"vae", "diffusers", "AutoencoderKLQwenImage"},
		{"scheduler", "diffusers", "FlowMatchEulerDiscreteScheduler"},
		{"tokenizer", "transformers", "Qwen2Tokenizer"},
		{"processor", "transformers", "Qwen2VLProcessor"},
	}
	files := map[string][]byte{}
	index := map[string]any{"_class_name": "QwenImageEditPlusPipeline", "_diffusers_version": "0.40.0", Marker: true}
	for _, c := range components {
		index[c[0]] = []string{c[1], c[2]}
		doc := map[string]any{"_class_name": c[2], Marker: true}
		for k, v := range extra[c[0]] {
			doc[k] = v
		}
		cfg, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return nil, err
		}
		files[filepath.Join(c[0], "config.json")] = cfg
	}
	shards := []string{"diffusion_pytorch_model-00001-of-00002.safetensors", "diffusion_pytorch_model-00002-of-00002.safetensors"}
	weightMap := map[string]string{"transformer_blocks.0.attn.to_q.weight": shards[0], "transformer_blocks.1.attn.to_q.weight": shards[1]}
	for _, s := range shards {
		files[filepath.Join("transformer", s)] = []byte("qualkit contract double: stands for " + s + "; no weights\n")
	}
	for name, v := range map[string]any{
		"model_index.json": index,
		"transformer/diffusion_pytorch_model.safetensors.index.json": map[string]any{
			"metadata": map[string]any{"total_size": 0}, "weight_map": weightMap, Marker: true},
	} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		files[filepath.FromSlash(name)] = b
	}
	return files, nil
}

// writeBlobLink stores content as blobs/<sha256> and links path to it.
func writeBlobLink(repo, path string, content []byte) error {
	blob := filepath.Join(repo, "blobs", fmt.Sprintf("%x", sha256.Sum256(content)))
	if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
		return err
	}
	if old, err := os.ReadFile(blob); err != nil || !bytes.Equal(old, content) {
		if err := os.WriteFile(blob, content, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	target, err := filepath.Rel(filepath.Dir(path), blob)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink(target, path)
}
