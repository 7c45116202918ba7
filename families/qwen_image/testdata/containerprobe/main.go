// Command containerprobe reports, as one JSON object, what a container sees of the
// settings qualkit's TRTMC row gives its containers: the host's /dev/shm (--ipc=host), a
// read-only mount, the host's network interfaces, the mounted checkout, and the GPUs
// nvidia-smi lists, and whether it ran under the image's ENTRYPOINT. It is built static
// (CGO_ENABLED=0) for an image FROM scratch, whose ENTRYPOINT is the probe itself playing
// NVIDIA's entrypoint: it marks the environment, as that one sets up CUDA forward
// compatibility, then runs its arguments (exec "$@").
//
//	containerprobe SHM_MARKER RO_DIR SRC_DIR
//	containerprobe --entrypoint PROGRAM ARGS...
package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

type report struct {
	ShmMarker     string   `json:"shm_marker"`     // the content of /dev/shm/<marker>, "" when absent
	ReadOnlyMount bool     `json:"readonly_mount"` // RO_DIR is a mount point with the ro option
	WriteError    string   `json:"write_error"`    // what writing into RO_DIR gave
	Interfaces    []string `json:"interfaces"`
	SrcEntries    []string `json:"src_entries"`
	NvidiaSMI     string   `json:"nvidia_smi"` // the binary found, "" when none
	GPUs          []string `json:"gpus"`       // nvidia-smi's UUIDs
	GPUError      string   `json:"gpu_error,omitempty"`
	Devices       []string `json:"devices"`    // /dev/nvidia*
	Entrypoint    string   `json:"entrypoint"` // "ran" when the image's ENTRYPOINT ran first
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "--entrypoint" {
		err := syscall.Exec(os.Args[2], os.Args[2:], append(os.Environ(), "QUALKIT_PROBE_ENTRYPOINT=ran"))
		os.Stderr.WriteString("containerprobe: entrypoint: " + err.Error() + "\n")
		os.Exit(127)
	}
	if len(os.Args) != 4 {
		os.Stderr.WriteString("usage: containerprobe SHM_MARKER RO_DIR SRC_DIR\n")
		os.Exit(2)
	}
	r := report{Entrypoint: os.Getenv("QUALKIT_PROBE_ENTRYPOINT")}
	if b, err := os.ReadFile(filepath.Join("/dev/shm", os.Args[1])); err == nil {
		r.ShmMarker = string(b)
	}
	r.ReadOnlyMount = mountedReadOnly(os.Args[2])
	err := os.WriteFile(filepath.Join(os.Args[2], ".containerprobe"), []byte("x"), 0o644)
	switch {
	case errors.Is(err, syscall.EROFS):
		r.WriteError = "EROFS"
	case err != nil:
		r.WriteError = err.Error()
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			r.Interfaces = append(r.Interfaces, i.Name)
		}
	}
	if es, err := os.ReadDir(os.Args[3]); err == nil {
		for _, e := range es {
			r.SrcEntries = append(r.SrcEntries, e.Name())
		}
	}
	r.Devices, _ = filepath.Glob("/dev/nvidia*")
	for _, p := range []string{"/usr/local/nvidia/bin/nvidia-smi", "/usr/bin/nvidia-smi"} {
		if _, err := os.Stat(p); err == nil {
			r.NvidiaSMI = p
			break
		}
	}
	if r.NvidiaSMI != "" {
		cmd := exec.Command(r.NvidiaSMI, "--query-gpu=uuid", "--format=csv,noheader")
		cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu")
		out, err := cmd.CombinedOutput()
		if err != nil {
			r.GPUError = err.Error() + ": " + strings.TrimSpace(string(out))
		} else {
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					r.GPUs = append(r.GPUs, l)
				}
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
}

// mountedReadOnly: dir is a mount point whose mount options include ro.
func mountedReadOnly(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == filepath.Clean(dir) {
			for _, o := range strings.Split(f[5], ",") {
				if o == "ro" {
					return true
				}
			}
		}
	}
	return false
}
