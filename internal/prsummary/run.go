package prsummary

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// run is what PR.md and index.html show of a run folder.
type run struct {
	dir  string
	info runInfo
	rows []row
}

type runInfo struct {
	RunID         string `json:"run_id"`
	Qualification bool   `json:"qualification_run"`
	GoVersion     string `json:"go_version"`
	HarnessCommit string `json:"harness_commit"`
	HarnessDirty  bool   `json:"harness_dirty"`
	AIPerfVersion string `json:"aiperf_version"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	CPUs          int    `json:"cpus"`
	Hostname      string `json:"hostname"`
	RuntimeNote   string `json:"runtime_note"`
	Docker        *struct {
		ServerVersion string `json:"ServerVersion"`
		OS            string `json:"OS"`
		NvidiaRuntime bool   `json:"NvidiaRuntime"`
	} `json:"docker"`
	DockerError string   `json:"docker_error"`
	Skips       []string `json:"skips"`
	Rows        []string `json:"rows"`
}

type row struct {
	name    string
	res     result
	line    string // row.md's result line
	files   []string
	gpu     *gpuReading
	gpuNote string
}

type result struct {
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	Checkpoint struct {
		Name     string `json:"name"`
		Family   string `json:"family"`
		Backend  string `json:"backend"`
		Model    string `json:"model"`
		Profile  string `json:"profile"`
		Revision string `json:"revision"`
		Smoke    bool   `json:"smoke"`
	} `json:"checkpoint"`
	Stages []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"stages"`
	Runtime   string `json:"runtime"`
	Container *struct {
		ImageID       string `json:"ImageID"`
		ImageRef      string `json:"ImageRef"`
		DockerVersion string `json:"DockerVersion"`
	} `json:"container"`
	Bundle *struct {
		SHA256 string `json:"sha256"`
		Bytes  int64  `json:"bytes"`
		Cached bool   `json:"cached"`
	} `json:"bundle"`
	Settings map[string]string `json:"settings"`
	Command  string            `json:"command"`
}

type gpuReading struct {
	DriverVersion     string `json:"driver_version"`
	CUDADriverVersion int    `json:"cuda_driver_version"`
	Count             int    `json:"count"`
	Devices           []struct {
		Name              string `json:"name"`
		MemoryTotalBytes  uint64 `json:"memory_total_bytes"`
		ComputeCapability string `json:"compute_capability"`
	} `json:"devices"`
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func readRun(dir string) (*run, error) {
	r := &run{dir: dir}
	if err := readJSON(filepath.Join(dir, "run.json"), &r.info); err != nil {
		return nil, fmt.Errorf("run folder %s: %w", dir, err)
	}
	for _, name := range r.info.Rows {
		rowDir := filepath.Join(dir, name)
		w := row{name: name}
		if err := readJSON(filepath.Join(rowDir, "results.json"), &w.res); err != nil {
			return nil, fmt.Errorf("row %s: %w", name, err)
		}
		md, err := os.ReadFile(filepath.Join(rowDir, "row.md"))
		if err != nil {
			return nil, fmt.Errorf("row %s: %w", name, err)
		}
		lines := strings.Split(strings.TrimSuffix(string(md), "\n"), "\n")
		w.line = lines[len(lines)-1]
		var pre struct {
			Readiness struct {
				GPU      *gpuReading `json:"gpu_reading"`
				GPUError string      `json:"gpu_error"`
			} `json:"readiness"`
		}
		if readJSON(filepath.Join(rowDir, "preflight.json"), &pre) == nil {
			w.gpu, w.gpuNote = pre.Readiness.GPU, pre.Readiness.GPUError
		}
		filepath.WalkDir(rowDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				rel, _ := filepath.Rel(dir, p)
				w.files = append(w.files, filepath.ToSlash(rel))
			}
			return nil
		})
		sort.Strings(w.files)
		r.rows = append(r.rows, w)
	}
	return r, nil
}

func (w row) has(rel string) bool {
	for _, f := range w.files {
		if f == w.name+"/"+rel {
			return true
		}
	}
	return false
}

// proves is the status level this run's evidence gives the row's checkpoint, on the
// ladder planned -> implemented -> family-validated -> AIPerf-qualified.
func (w row) proves() string {
	switch w.res.Status {
	case "qualified":
		return "aiperf-qualified"
	case "smoke-passed":
		return "smoke only (never qualification)"
	}
	for _, s := range w.res.Stages {
		if s.Name == "correctness" && s.Status == "pass" {
			return "family-validated"
		}
	}
	return "implemented"
}
