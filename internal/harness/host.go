package harness

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// recordHost copies /proc/cpuinfo and /proc/meminfo into the run folder dir, the raw
// source of what info states of them (the checker reads them again); none without /proc.
func recordHost(dir string, info *schema.RunInfo) error {
	for proc, file := range map[string]string{"/proc/cpuinfo": schema.HostCPUInfoFile, "/proc/meminfo": schema.HostMemInfoFile} {
		b, err := os.ReadFile(proc)
		if err != nil {
			continue
		}
		if err := writeWhole(filepath.Join(dir, file), b); err != nil {
			return err
		}
		if file == schema.HostCPUInfoFile {
			info.CPUModel = CPUModel(b)
		} else {
			info.MemTotalBytes = memInfo(b, "MemTotal")
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

// memInfo is a field of /proc/meminfo (MemTotal, MemAvailable) in bytes; 0 for none.
func memInfo(meminfo []byte, field string) int64 {
	for line := range strings.Lines(string(meminfo)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// hostReading is what /proc says of the host's load at one moment.
type hostReading struct {
	loadavg [3]float64
	stealS  float64 // cumulative since boot, every CPU
	ok      bool
}

// readHost reads /proc/loadavg and /proc/stat; ok is false where either is unreadable.
func readHost() (h hostReading) {
	la, err1 := os.ReadFile("/proc/loadavg")
	st, err2 := os.ReadFile("/proc/stat")
	var err3, err4 error
	h.loadavg, err3 = LoadAvg(la)
	h.stealS, err4 = StealSeconds(st)
	h.ok = err1 == nil && err2 == nil && err3 == nil && err4 == nil
	return h
}

// hostLoad is the load over a run from its first and last readings (nil unless both read).
func hostLoad(start, end hostReading) *schema.HostLoad {
	if !start.ok || !end.ok {
		return nil
	}
	return &schema.HostLoad{LoadAvgStart: start.loadavg, LoadAvgEnd: end.loadavg, StealS: round3(max(0, end.stealS-start.stealS))}
}

// LoadAvg is the three load averages of a /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func LoadAvg(b []byte) ([3]float64, error) {
	var out [3]float64
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("/proc/loadavg: want three load averages, got %q", b)
	}
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return out, fmt.Errorf("/proc/loadavg: %w", err)
		}
		out[i] = v
	}
	return out, nil
}

// StealSeconds is the steal time of /proc/stat's aggregate cpu line (its eighth value),
// in seconds: CPU time a hypervisor gave to others while this host wanted it.
func StealSeconds(b []byte) (float64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return 0, nil // a kernel before 2.6.11 states no steal
		}
		v, err := strconv.ParseUint(f[8], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat steal: %w", err)
		}
		return float64(v) / 100, nil // USER_HZ: 100 on every Linux architecture Go runs on
	}
	return 0, fmt.Errorf("/proc/stat: no cpu line")
}
