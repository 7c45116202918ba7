package qwenimage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/gpu"
	"qualkit/internal/serving"
)

// The container settings the TRTMC row gives every stage (the adapter's Image: the
// checkout at /src, the HF cache read-only, --ipc=host, the image's own entrypoint; the
// harness adds host networking and the leased GPUs by UUID), applied to a small stand-in
// image and verified from inside the container by testdata/containerprobe. Everywhere
// with a Docker engine: the shared /dev/shm, the read-only cache, the host's interfaces,
// the mounted checkout, the command run by the image's ENTRYPOINT (NVIDIA's sets up CUDA
// forward compatibility there; replaced, as `--entrypoint` did, it never ran). With
// QUALKIT_EXPECT_GPU=1 (the H200 run, scripts/h200/container.sh) the row's GPU is leased
// by UUID and nvidia-smi inside must list exactly that UUID.
func TestTRTMCContainerSettings(t *testing.T) {
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	if _, err := serving.Docker(t.Context()); err != nil {
		t.Fatalf("the container settings test needs a Docker engine: %v", err)
	}
	expectGPU := os.Getenv("QUALKIT_EXPECT_GPU") == "1"
	hf, src := t.TempDir(), t.TempDir() // a bare checkout: the settings need no git (the H200 has none)
	writeFile(t, filepath.Join(src, "Dockerfile.dev.x86"), "FROM scratch\n")
	a := New(Config{Checkout: src, HFHome: hf})
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	ci := must(a.image(gpuEnv(t, root))) // the probe folder it mounts is the repository's
	require.True(t, ci.IPCHost)
	require.Contains(t, ci.Mounts, serving.Mount{Host: hf, Container: hf, ReadOnly: true})

	runID := fmt.Sprintf("%s-%d-containersettings", time.Now().UTC().Format("20060102T150405Z"), os.Getpid())
	t.Cleanup(func() { serving.RemoveRunImages(context.Background(), runID) })
	img, err := serving.PrepareImage(t.Context(), serving.ImageSpec{Context: probeContext(t)}, runID, "trtmc-settings", filepath.Join(t.TempDir(), "build.log"))
	require.NoError(t, err)

	var gpus []gpu.Device
	if expectGPU {
		r, err := gpu.Read(t.Context(), os.Getenv("QUALKIT_GPUREAD"))
		require.NoError(t, err, "QUALKIT_EXPECT_GPU=1: the GPUs are read with QUALKIT_GPUREAD")
		require.NotEmpty(t, r.Devices)
		gpus = r.Devices[len(r.Devices)-1:] // the lease: one GPU, by UUID
	}
	marker, value := "qualkit-probe-"+runID, randomHex(t)
	require.NoError(t, os.WriteFile(filepath.Join("/dev/shm", marker), []byte(value), 0o644))
	t.Cleanup(func() { os.Remove(filepath.Join("/dev/shm", marker)) })

	log := filepath.Join(t.TempDir(), "probe.log")
	c := serving.Container{Image: img, RunID: runID, Row: "trtmc-settings", IPCHost: ci.IPCHost, UnderEntrypoint: ci.UnderEntrypoint, Mounts: ci.Mounts}
	rec, err := serving.Run(t.Context(), serving.Command{Args: []string{"/containerprobe", marker, hf, srcDir}}, log,
		serving.InContainer(c), serving.WithGPUs(gpus))
	out, _ := os.ReadFile(log)
	require.NoError(t, err, "%s", out)
	t.Logf("docker run as recorded: %s", strings.Join(rec.Args, " "))
	var r struct {
		ShmMarker     string   `json:"shm_marker"`
		ReadOnlyMount bool     `json:"readonly_mount"`
		WriteError    string   `json:"write_error"`
		Interfaces    []string `json:"interfaces"`
		SrcEntries    []string `json:"src_entries"`
		NvidiaSMI     string   `json:"nvidia_smi"`
		GPUs          []string `json:"gpus"`
		GPUError      string   `json:"gpu_error"`
		Devices       []string `json:"devices"`
		Entrypoint    string   `json:"entrypoint"`
	}
	require.NoError(t, json.Unmarshal(lastJSONLine(out), &r), "%s", out)
	t.Logf("seen from inside the container: %s", lastJSONLine(out))

	assert.Equal(t, value, r.ShmMarker, "--ipc=host: the container's /dev/shm is the host's")
	assert.True(t, r.ReadOnlyMount, "the HF cache is mounted read-only")
	assert.Equal(t, "EROFS", r.WriteError, "writing into the HF cache fails")
	assert.Equal(t, hostInterfaces(t), r.Interfaces, "host networking: the host's interfaces")
	assert.Contains(t, r.SrcEntries, "Dockerfile.dev.x86", "the checkout at /src")
	assert.Equal(t, "ran", r.Entrypoint, "the command runs under the image's ENTRYPOINT")
	assert.NotContains(t, rec.Args, "--entrypoint", "docker run as recorded keeps the image's entrypoint")
	if !expectGPU {
		assert.Empty(t, r.Devices, "no GPU requested, none given")
		return
	}
	require.Empty(t, r.GPUError, "nvidia-smi in the container")
	assert.Equal(t, []string{gpus[0].UUID}, r.GPUs, "nvidia-smi inside sees exactly the leased GPU")
}

// probeContext is a build context: the static probe (built here, or the prebuilt one
// QUALKIT_CONTAINERPROBE names, for a host without Go), and the host's C library and
// loader so that the nvidia-smi the NVIDIA runtime mounts (a dynamic binary) can run in
// an image FROM scratch.
func probeContext(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if pre := os.Getenv("QUALKIT_CONTAINERPROBE"); pre != "" {
		b, err := os.ReadFile(pre)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "containerprobe"), b, 0o755))
	} else {
		build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "containerprobe"), "./testdata/containerprobe")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	df := "FROM scratch\nCOPY containerprobe /containerprobe\nENTRYPOINT [\"/containerprobe\", \"--entrypoint\"]\n"
	for _, lib := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
		"/lib/x86_64-linux-gnu/libdl.so.2", "/lib/x86_64-linux-gnu/libpthread.so.0", "/lib/x86_64-linux-gnu/librt.so.1"} {
		b, err := os.ReadFile(lib) // follows the links
		if err != nil {
			continue
		}
		name := strings.TrimPrefix(strings.ReplaceAll(lib, "/", "_"), "_")
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
		df += fmt.Sprintf("COPY %s %s\n", name, lib)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644))
	return dir
}

func hostInterfaces(t *testing.T) []string {
	ifs, err := net.Interfaces()
	require.NoError(t, err)
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	return slices.Clip(names)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}
