package qwenimage

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"qualkit/internal/family"
)

// Where the image sees the checkout (at /src, as source-build.md:34-43 mounts it) and
// the runtime's build folder (outside it, one per key under .cache/trtmc-native).
const (
	srcDir   = "/src"
	buildDir = "/opt/qualkit/trtmc-build"
	probeDir = "/opt/qualkit/probe"
)

// cmakeCommon are source-build.md:55-62's configure options shared by both layouts.
var cmakeCommon = []string{"-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
	"-DTRTMC_BUILD_BACKEND_TRT=ON", "-DTRTMC_BUILD_BACKEND_RTX=OFF", "-DTRTMC_ENABLE_LIBTORCH_MULTINOMIAL=OFF"}

// sm is the GPU architecture the native runtime is built for: the row's GPU's compute
// capability without the dot (source-build.md:15-21), or the test hook's.
func (a TRTMC) sm(env family.Env) (string, error) {
	if len(env.GPUs) > 0 {
		return strings.ReplaceAll(env.GPUs[0].ComputeCapability, ".", ""), nil
	}
	if a.Config.AssumeSM != "" {
		return a.Config.AssumeSM, nil
	}
	return "", fmt.Errorf("no GPU chosen for the row: the native runtime is built for the GPU's SM")
}

// source is the checkout's identity: its commit, and the changes no commit holds.
type source struct {
	Commit string `json:"commit"`
	Dirty  string `json:"dirty,omitempty"` // sha256 of `git status --porcelain` and `git diff HEAD`, when not clean
}

func readSource(checkout string) (source, error) {
	git := func(args ...string) (string, error) {
		out, err := exec.Command("git", append([]string{"-C", checkout}, args...)...).Output()
		return string(out), err
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return source{}, fmt.Errorf("TRTMC checkout %s: not a git checkout (git rev-parse HEAD: %v): the commit keys its native build and bundle", checkout, err)
	}
	s := source{Commit: strings.TrimSpace(commit)}
	status, err := git("status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return s, fmt.Errorf("TRTMC checkout %s: git status: %w", checkout, err)
	}
	if strings.TrimSpace(status) != "" {
		diff, _ := git("diff", "HEAD")
		sum := sha256.Sum256([]byte(status + "\x00" + diff))
		s.Dirty = hex.EncodeToString(sum[:8])
	}
	return s, nil
}

// native is one native runtime build: its inputs and where it lives on the host.
type native struct {
	Layout    string   `json:"layout"`
	Source    source   `json:"source"`
	ImageID   string   `json:"image_id"`
	SM        string   `json:"sm"`
	Configure []string `json:"configure"`
	Targets   []string `json:"targets"`
	Key       string   `json:"key"`
	dir       string
}

// native describes the runtime build for the row's image, GPU and checkout.
func (a TRTMC) native(env family.Env) (native, error) {
	l, err := DetectLayout(a.Config.Checkout)
	if err != nil {
		return native{}, err
	}
	if env.ImageID == "" {
		return native{}, fmt.Errorf("no image: the row's stages run in TRTMC's dev image, which the harness prepares first")
	}
	sm, err := a.sm(env)
	if err != nil {
		return native{}, err
	}
	src, err := readSource(a.Config.Checkout)
	if err != nil {
		return native{}, err
	}
	targets := l.Targets
	if s, err := a.serving(); err == nil && s.Contract == ServingEditRoute {
		targets = append(append([]string{}, targets...), nativeServerTargets...)
	}
	n := native{Layout: l.Name, Source: src, ImageID: env.ImageID, SM: sm, Targets: targets,
		Configure: append(append(append([]string{}, cmakeCommon...), "-DCMAKE_CUDA_ARCHITECTURES="+sm+"-real"), l.CMakeOptions...)}
	b, _ := json.Marshal(n)
	sum := sha256.Sum256(b)
	n.Key = hex.EncodeToString(sum[:12])
	n.dir = filepath.Join(env.Root, ".cache", "trtmc-native", n.Key)
	return n, nil
}

func (n native) stamp() string { return filepath.Join(n.dir, "qualkit-native.json") }

// built says whether the build folder holds this build, checked and stamped.
func (n native) built() bool {
	b, err := os.ReadFile(n.stamp())
	if err != nil {
		return false
	}
	var got native
	return json.Unmarshal(b, &got) == nil && got.Key == n.Key
}

// Tools builds TRTMC's native runtime in the image as source-build.md:53-67 does, once
// per commit, image and SM; its stamp is the builder that keys the bundle cache.
func (a TRTMC) Tools(env family.Env) (family.Tools, error) {
	n, err := a.native(env)
	if err != nil {
		return family.Tools{}, fmt.Errorf("native runtime: %w", err)
	}
	tools := family.Tools{Builder: n.stamp(), Settings: a.buildSettings(env)}
	if n.built() {
		return tools, nil
	}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return family.Tools{}, err
	}
	configure := append([]string{"cmake", "-S", a.Config.Checkout, "-B", n.dir}, n.Configure...)
	build := append([]string{"cmake", "--build", n.dir, "--parallel", "--target"}, n.Targets...)
	tools.Commands = []family.Command{
		{Args: configure, Env: a.env(env), Dir: a.Config.Checkout},
		{Args: build, Env: a.env(env), Dir: a.Config.Checkout},
	}
	return tools, nil
}

// checkTools checks the build made the files the row runs, for the row's SM, then
// stamps the build folder.
func (a TRTMC) checkTools(env family.Env) error {
	n, err := a.native(env)
	if err != nil {
		return err
	}
	if n.built() {
		return nil
	}
	l, _ := DetectLayout(a.Config.Checkout)
	need := []string{"trtmc", l.PluginLib}
	if s, err := a.serving(); err == nil && s.Contract == ServingEditRoute {
		need = append(need, "trtmc-server", "server/python/trtmc_server/cli.py") // and its control plane's copy
	} else if err == nil {
		need = append(need, "trtmc_benchmark_worker")
	}

	for _, f := range need {
		if !isFile(filepath.Join(n.dir, f)) {
			return fmt.Errorf("the native build wrote no %s in %s: a target was not built (targets %s)", f, n.dir, strings.Join(n.Targets, " "))
		}
	}
	arch, err := cmakeCacheValue(filepath.Join(n.dir, "CMakeCache.txt"), "CMAKE_CUDA_ARCHITECTURES")
	if err != nil {
		return err
	}
	if arch != n.SM+"-real" {
		return fmt.Errorf("the native runtime in %s is built for CUDA architectures %q, the row's GPU is SM %s: it would not load there", n.dir, arch, n.SM)
	}
	b, _ := json.MarshalIndent(n, "", "  ")
	return os.WriteFile(n.stamp(), append(b, '\n'), 0o644)
}

// cmakeCacheValue reads KEY:TYPE=VALUE from a CMakeCache.txt.
func cmakeCacheValue(path, key string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the native build's CMake cache: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if name, _, _ := strings.Cut(k, ":"); ok && name == key {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no %s", path, key)
}
