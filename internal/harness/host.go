package harness

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// hostFiles are the /proc files a run keeps verbatim in its folder, the raw source of
// run.json's cpu_model and mem_total_bytes (the checker reads them again).
var hostFiles = []struct{ proc, file string }{
	{"/proc/cpuinfo", schema.HostCPUInfoFile},
	{"/proc/meminfo", schema.HostMemInfoFile},
}

// recordHost copies /proc/cpuinfo and /proc/meminfo into the run folder dir and states
// what they say in info. Where there is no /proc (not Linux) nothing is recorded.
func recordHost(dir string, info *schema.RunInfo) error {
	for _, h := range hostFiles {
		b, err := os.ReadFile(h.proc)
		if err != nil {
			continue
		}
		if err := writeWhole(filepath.Join(dir, h.file), b); err != nil {
			return err
		}
		switch h.file {
		case schema.HostCPUInfoFile:
			info.CPUModel = CPUModel(b)
		case schema.HostMemInfoFile:
			info.MemTotalBytes = MemTotalBytes(b)
		}
	}
	return nil
}

// CPUModel is the first "model name" of a /proc/cpuinfo ("" when it names none, as on
// most arm64 kernels).
func CPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// MemTotalBytes is /proc/meminfo's MemTotal in bytes (0 when it states none).
func MemTotalBytes(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
