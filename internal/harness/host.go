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

// memInfo is a field of /proc/meminfo (MemTotal, MemAvailable) in bytes; 0 when it
// states none.
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

// readHost reads /proc/loadavg and /proc/stat; ok is false where either is missing
// (not Linux) or unreadable.
func readHost() hostReading {
	la, err1 := os.ReadFile("/proc/loadavg")
	st, err2 := os.ReadFile("/proc/stat")
	if err1 != nil || err2 != nil {
		return hostReading{}
	}
	var h hostReading
	var err error
	h.loadavg, err = LoadAvg(la)
	if err != nil {
		return hostReading{}
	}
	if h.stealS, err = StealSeconds(st); err != nil {
		return hostReading{}
	}
	h.ok = true
	return h
}

// hostLoad is the load over a run from its first and last readings (nil unless both
// were read).
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

// clockTicks is USER_HZ, the unit of /proc/stat's times: 100 on every Linux
// architecture Go runs on (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

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
		return float64(v) / clockTicks, nil
	}
	return 0, fmt.Errorf("/proc/stat: no cpu line")
}
