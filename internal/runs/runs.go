// Package runs reads past evidence runs for people: it lists the runs under an evidence
// root, and compares two runs row by row against a noise band, naming every regression.
// It checks nothing: proving a run is the evidence checker's job.
package runs

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// Run is one evidence run folder.
type Run struct {
	Dir  string
	Info schema.RunInfo
	Rows []schema.Result // sorted by row name
	// Clocks is, by row, the max SM clocks (MHz) of its leased GPUs at preflight ("1980,1755").
	Clocks map[string]string
}

// Read loads one run folder: run.json and the results.json of every row it names.
func Read(dir string) (*Run, error) {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	r := &Run{Dir: dir}
	if err := schema.ReadJSON(filepath.Join(dir, schema.RunFile), &r.Info); err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	for _, name := range r.Info.Rows {
		var res schema.Result
		if err := schema.ReadJSON(filepath.Join(dir, name, schema.ResultsFile), &res); err != nil {
			return nil, fmt.Errorf("run %s: row %s: %w", dir, name, err)
		}
		r.Rows = append(r.Rows, res)
		if c := leasedClocks(filepath.Join(dir, name, schema.PreflightFile), res); c != "" {
			if r.Clocks == nil {
				r.Clocks = map[string]string{}
			}
			r.Clocks[name] = c
		}
	}
	slices.SortFunc(r.Rows, func(a, b schema.Result) int { return cmp.Compare(a.Row, b.Row) })
	return r, nil
}

// leasedClocks is the maximum SM clocks of the GPUs res leased, from its preflight.json's
// NVML reading ("" when it has none).
func leasedClocks(preflight string, res schema.Result) string {
	if res.Lease == nil || len(res.Lease.GPUs) == 0 {
		return ""
	}
	var pf struct {
		Readiness struct {
			GPU *gpu.Reading `json:"gpu_reading"`
		} `json:"readiness"`
	}
	if schema.ReadJSON(preflight, &pf) != nil || pf.Readiness.GPU == nil {
		return ""
	}
	var mhz []string
	for _, uuid := range res.Lease.GPUs {
		for _, d := range pf.Readiness.GPU.Devices {
			if d.UUID == uuid && d.SMClockMaxMHz > 0 {
				mhz = append(mhz, fmt.Sprint(d.SMClockMaxMHz))
			}
		}
	}
	return strings.Join(mhz, ",")
}

// List reads every run folder (holding a run.json) directly under root, newest first.
func List(root string) ([]*Run, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("evidence root: %w", err)
	}
	var out []*Run
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue // files, and evidence/latest (a link to a run listed anyway)
		}
		if _, err := os.Stat(filepath.Join(dir, schema.RunFile)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		r, err := Read(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Run) int {
		return cmp.Or(b.Info.Started.Compare(a.Info.Started), cmp.Compare(b.Info.RunID, a.Info.RunID))
	})
	return out, nil
}

// Row returns the run's row of that name.
func (r *Run) Row(name string) (schema.Result, bool) {
	i := slices.IndexFunc(r.Rows, func(res schema.Result) bool { return res.Row == name })
	if i < 0 {
		return schema.Result{}, false
	}
	return r.Rows[i], true
}

// Commit is the harness commit, marked when the tree was not clean.
func (r *Run) Commit() string {
	c := r.Info.HarnessCommit
	if len(c) > 12 {
		c = c[:12]
	}
	if r.Info.HarnessDirty {
		c += " (dirty)"
	}
	return c
}

func (r *Run) Started() string {
	if r.Info.Started.IsZero() {
		return "-"
	}
	return r.Info.Started.UTC().Format(time.DateTime)
}
