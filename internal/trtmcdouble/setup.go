package trtmcdouble

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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
	cmdPackage     = "./internal/trtmcdouble/cmd/trtmcdouble"
	familiesTree   = "internal/trtmc/testdata/families"
	legacyTree     = "internal/trtmc/testdata/e9132e79"
	checkoutBinary = "qualkit-double/trtmcdouble"
)

// Trees are the folders of qualkit's repository that the double's checkouts copy.
var Trees = []string{familiesTree, legacyTree}

// Build compiles the double into out: a static Linux binary (CGO_ENABLED=0, GOOS=linux,
// this machine's GOARCH, -trimpath), fit for an image built FROM scratch.
func Build(ctx context.Context, repoRoot, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, cmdPackage)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", cmdPackage, err, b)
	}
	return nil
}

// DockerfileName is the name TRTMC gives its dev Dockerfile for this machine's
// architecture (Dockerfile.dev.x86, Dockerfile.dev.aarch64).
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

// doubleDockerfile installs the double under the names qualkit calls, copying from
// where the layout's own dev Dockerfile copies: requirements/community-ci.txt with the
// checkout root as context at e9132e79; community-ci.txt with requirements/ as the
// context in the newer layout (Dockerfile.dev.x86 @ 520a0165), so the double's binary
// lies under requirements/ there. It is the double's Dockerfile, not TRTMC's: it only
// borrows the name and the COPY shape. trtmc, trtmc-server and trtmc_benchmark_worker
// need no entry: the cmake double writes them into the build folder.
func doubleDockerfile(layout string) string {
	reqs, bin := "requirements/community-ci.txt", checkoutBinary
	if layout == LayoutFamilies {
		reqs, bin = "community-ci.txt", "qualkit-double/trtmcdouble"
	}
	return strings.NewReplacer("{{reqs}}", reqs, "{{bin}}", bin).Replace(dockerfileTemplate)
}

const dockerfileTemplate = `# qualkit contract double: this Dockerfile is the double's, NOT TensorRT-Model-Connect's.
# It carries the name of TRTMC's dev Dockerfile so that qualkit finds it where it looks,
# copies from where that layout's Dockerfile copies, and installs one static binary
# (qualkit's internal/trtmcdouble) under the program names qualkit calls. No CUDA, no
# TensorRT, no model: nothing it produces is a real result.
FROM scratch
LABEL qualkit.contract-double="true"
COPY {{reqs}} /tmp/trtmc-community-ci.txt
COPY {{bin}} /usr/bin/cmake
COPY {{bin}} /opt/venv/bin/python3
COPY {{bin}} /opt/venv/bin/python
ENV PATH=/opt/venv/bin:/usr/local/bin:/usr/bin:/bin
WORKDIR /workspace/tensorrt-model-connect
`

// Checkout creates a TRTMC-shaped checkout of layout ("families" or "legacy") at dir,
// which must not exist or be empty: the shaped tree of that layout, the stand-in sources
// of one serving contract (serving: perf-serve, edit-route or none; the legacy layout,
// like TRTMC main e9132e79, has none), the built double, a .dockerignore and the
// double's Dockerfile under TRTMC's dev Dockerfile name, shaped like the layout's; then
// one git commit, so the checkout has a revision.
func Checkout(ctx context.Context, repoRoot, dir, layout, serving string) error {
	var trees []string
	switch layout {
	case LayoutFamilies:
		trees = []string{familiesTree}
	case LayoutLegacy:
		trees = []string{legacyTree}
	default:
		return fmt.Errorf("checkout layout %q: want %q or %q", layout, LayoutFamilies, LayoutLegacy)
	}
	dockerfile, err := DockerfileName()
	if err != nil {
		return err
	}
	if err := copyShapedTree(repoRoot, dir, trees); err != nil {
		return err
	}
	sources, ok := servingSources[serving]
	if !ok || (layout == LayoutLegacy && serving != ServingNone) {
		return fmt.Errorf("checkout serving %q: want %s, %s or %s (legacy: %s only)", serving, ServingPerfServe, ServingEditRoute, ServingNone, ServingNone)
	}
	files := map[string]string{".dockerignore": dockerignore, dockerfile: doubleDockerfile(layout),
		"requirements/community-ci.txt": "# qualkit contract double: stands for TRTMC's community CI pins\n"}
	for rel, text := range sources {
		files[rel] = text
	}
	for rel, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			return err
		}
	}
	bin := filepath.Join(dir, checkoutBinary)
	if layout == LayoutFamilies {
		bin = filepath.Join(dir, "requirements", "qualkit-double", "trtmcdouble")
	}
	if err := Build(ctx, repoRoot, bin); err != nil {
		return err
	}
	return gitCommit(ctx, dir, "TRTMC-shaped checkout ("+layout+" layout, serving "+serving+") with qualkit's contract double")
}

// servingSources are the stand-in source files of each serving contract: our own words,
// at the paths where TRTMC keeps the real ones, declaring the route qualkit's adapter
// looks for. The double's programs play the servers; these files are never run.
var servingSources = map[string]map[string]string{
	ServingNone: {},
	ServingPerfServe: {
		"apps/perf_serving/trtmc_perf_serving/__init__.py": "# qualkit contract double: stands for TRTMC's trtmc_perf_serving package.\n",
		"apps/perf_serving/trtmc_perf_serving/cli.py":      "# qualkit contract double: stands for cli.py (`python -m trtmc_perf_serving serve ...`); the double's python3 plays it.\n",
		"apps/perf_serving/trtmc_perf_serving/app.py": "# qualkit contract double: stands for app.py; the route it declares, as TRTMC's does:\n" +
			"# @app.post(\"/v1/tasks/{name}\")\n",
		"apps/perf_serving/requirements.txt": "# qualkit contract double: stands for perf-serve's requirements\n",
	},
	ServingEditRoute: {
		"apps/server/main.cpp":                        "// qualkit contract double: stands for the native trtmc-server (main.cpp); the double's binary plays it.\n",
		"apps/server/python/trtmc_server/__init__.py": "# qualkit contract double: stands for TRTMC's trtmc_server package.\n",
		"apps/server/python/trtmc_server/__main__.py": "# qualkit contract double: stands for `python -m trtmc_server`.\n",
		"apps/server/python/trtmc_server/cli.py":      "# qualkit contract double: stands for cli.py; the double's python3 plays it.\n",
		"apps/server/python/trtmc_server/app.py": "# qualkit contract double: stands for app.py with the stage-7 report's image edit route\n" +
			"# (no public TRTMC source has it): POST /v1/images/edits\n",
	},
}

// copyShapedTree copies the first tree to dir, then from each further tree (an overlay)
// the files dir does not have yet.
func copyShapedTree(repoRoot, dir string, trees []string) error {
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, trees[0]))); err != nil {
		return fmt.Errorf("copying %s: %w", trees[0], err)
	}
	for _, t := range trees[1:] {
		src := filepath.Join(repoRoot, t)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(src, path)
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, rel)
			if _, err := os.Lstat(dst); err == nil {
				return nil // the shaped tree has its own
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			return fmt.Errorf("copying %s: %w", t, err)
		}
	}
	return nil
}

// gitCommit makes dir a repository with one commit of everything in it, whatever the
// user's git configuration.
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

// HFCache writes a fake Hugging Face cache of the checkpoint at dir, laid out as
// huggingface_hub lays it out (HF_HOME=dir): refs/main names Revision, and the snapshot's
// files are relative links into blobs/. Every file says it belongs to the double. It
// returns the snapshot directory.
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
		cfg, err := json.MarshalIndent(map[string]any{"_class_name": c[2], Marker: true}, "", "  ")
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
