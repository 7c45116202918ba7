package prsummary

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// run is what PR.md and index.html show of a run folder.
type run struct {
	dir         string
	info        schema.RunInfo
	rows        []row
	checkpoints *Checkpoints // nil when the run folder has none
}

type row struct {
	name    string
	href    string // the row folder, relative to the page (a merged run's: shards/<name>/<run id>/<row>)
	res     schema.Result
	line    string // row.md's result line
	files   []string
	gpu     *gpu.Reading
	gpuNote string
}

func readRun(dir string) (*run, error) {
	r := &run{dir: dir}
	if err := schema.ReadJSON(filepath.Join(dir, schema.RunFile), &r.info); err != nil {
		return nil, fmt.Errorf("run folder %s: %w", dir, err)
	}
	var cp Checkpoints
	if err := schema.ReadJSON(filepath.Join(dir, CheckpointsFile), &cp); err == nil {
		r.checkpoints = &cp
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run folder %s: %w", dir, err)
	}
	for _, name := range r.info.Rows {
		rowDir := filepath.Join(dir, name)
		w := row{name: name, href: name}
		if err := schema.ReadJSON(filepath.Join(rowDir, schema.ResultsFile), &w.res); err != nil {
			return nil, fmt.Errorf("row %s: %w", name, err)
		}
		md, err := os.ReadFile(filepath.Join(rowDir, schema.RowMarkdown))
		if err != nil {
			return nil, fmt.Errorf("row %s: %w", name, err)
		}
		lines := strings.Split(strings.TrimSuffix(string(md), "\n"), "\n")
		w.line = lines[len(lines)-1]
		var pre struct {
			Readiness struct {
				GPU      *gpu.Reading `json:"gpu_reading"`
				GPUError string       `json:"gpu_error"`
			} `json:"readiness"`
		}
		if schema.ReadJSON(filepath.Join(rowDir, schema.PreflightFile), &pre) == nil {
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
	case schema.StatusQualified:
		return "aiperf-qualified"
	case schema.StatusSmoke:
		return "smoke only (never qualification)"
	case schema.StatusDouble:
		return "contract double only (never qualification)"
	}
	if st, ok := w.res.Stage(schema.StageCorrectness); ok && st.Status == schema.Pass {
		return "family-validated"
	}
	return "implemented"
}
