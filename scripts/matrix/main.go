// Command matrix prints the qualification rows (from `make tables`) as a GitHub Actions
// matrix: one include entry per row, a CI job that runs exactly that row (`make shard`)
// on the runner class its needs ask for, with a timeout from its deadlines.
//
//	go run ./scripts/matrix [-tables .cache/tables.json] [-run PATTERN] [-skip PATTERN] [-evidence evidence] [-out FILE]
//
// -run and -skip match "TestX/row" as go test does. Entries are ordered as TRTMC's
// tools/model_ci.py orders its matrix (GitHub starts jobs in include order): GPU rows
// first, then rows with no estimate, then the longest estimate (the row's newest wall
// time under -evidence) first, ties by name. Exit 1 when the inputs cannot be read or
// select no row, 2 on a usage error.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"qualkit/internal/evidencerepo"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("matrix", flag.ContinueOnError)
	flags.SetOutput(stderr)
	tablesFile := flags.String("tables", ".cache/tables.json", "the tables JSON (make tables writes it)")
	runPattern := flags.String("run", "", "go test -run pattern: the rows (\"TestX/row\") to include; default every row")
	skipPattern := flags.String("skip", "", "go test -skip pattern: rows to leave out")
	evidence := flags.String("evidence", "evidence", "evidence root holding past run folders (<run id>/<row>/results.json), for the estimates")
	out := flags.String("out", "", "write the matrix JSON to this file instead of stdout")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "matrix: unexpected argument %q: every input is a flag (-tables, -run, -skip, -evidence, -out)\n", flags.Arg(0))
		return 2
	}
	if top := evidencerepo.Untracked(*out); *out != "" && top != "" {
		fmt.Fprintf(stderr, "matrix: -out %s would be an untracked file of the work tree %s and make every run of it dirty: write it under evidence/ (ignored), e.g. -out evidence/matrix.json, or outside the tree\n", *out, top)
		return 2
	}
	if err := write(*tablesFile, *runPattern, *skipPattern, *evidence, *out, stdout); err != nil {
		fmt.Fprintln(stderr, "matrix:", err)
		return 1
	}
	return 0
}

func write(tablesFile, runPattern, skipPattern, evidence, out string, stdout io.Writer) error {
	rows, err := readTables(tablesFile)
	if err != nil {
		return err
	}
	selected, err := selectRows(rows, runPattern, skipPattern)
	if err != nil {
		return err
	}
	estimates, err := findEstimates(evidence)
	if err != nil {
		return err
	}
	created := time.Now().UTC().Truncate(time.Second)
	b, err := json.MarshalIndent(Matrix{Created: created, Matrix: Include{Include: entries(selected, estimates, created)}}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// Matrix is what the command prints: a GitHub Actions strategy.matrix under "matrix".
type Matrix struct {
	// Created is when the matrix was made: a shard answers it only with a run begun
	// after (internal/merged), signed naming it (make shard MATRIX_CREATED=, in each
	// entry's command).
	Created time.Time `json:"created"`
	Matrix  Include   `json:"matrix"`
}

// Include is a strategy.matrix made of include entries only.
type Include struct {
	Include []Entry `json:"include"`
}

// Entry is one matrix job: one row.
type Entry struct {
	Name           string   `json:"name"`    // the row; also the shard's name
	Test           string   `json:"test"`    // the table's test function
	Run            string   `json:"run"`     // the go test -run pattern that selects the row whole
	Command        string   `json:"command"` // what the job runs
	Runner         string   `json:"runner"`  // the runner class: a self-hosted runner label
	GPUs           int      `json:"gpus"`
	TimeoutMinutes int      `json:"timeout_minutes"`
	EstimateS      *float64 `json:"estimate_s"`    // wall time of the row's newest run; null when none
	EstimateFrom   string   `json:"estimate_from"` // that run's results.json, relative to -evidence
}

// Estimate is a row's wall time in one past run.
type Estimate struct {
	WallS float64
	From  string // results.json, relative to the evidence root, slash-separated
}

// MarginMinutes covers the stages with no deadline, the job's setup and the evidence
// check; BenchmarkSlackMinutes is what the benchmark stage allows AIPerf beyond its
// requests' deadlines; InfluenceRequests what the influence probe sends.
const (
	MarginMinutes         = 10
	BenchmarkSlackMinutes = 5
	InfluenceRequests     = 3
)

// readTables reads every row of every table, in table order.
func readTables(file string) ([]schema.RowDetails, error) {
	tables, err := schema.ReadTables(file)
	if err != nil {
		return nil, err
	}
	var rows []schema.RowDetails
	for _, t := range tables {
		if len(t.Details) != len(t.Rows) {
			return nil, fmt.Errorf("tables %s: table %s lists %d rows but %d details: it was written by an older qual.test; write it again with: make tables",
				file, t.Test, len(t.Rows), len(t.Details))
		}
		for i, d := range t.Details {
			if d.Row != t.Rows[i] || d.Test != t.Test {
				return nil, fmt.Errorf("tables %s: table %s: details[%d] is %s/%s, not row %s: write it again with: make tables",
					file, t.Test, i, d.Test, d.Row, t.Rows[i])
			}
		}
		rows = append(rows, t.Details...)
	}
	return rows, nil
}

// selectRows keeps the rows whose "TestX/row" the -run and -skip patterns select, the way
// go test selects subtests. Selecting none is an error naming the patterns, and so is
// selecting two rows of the same name (each row names its shard).
func selectRows(rows []schema.RowDetails, runPattern, skipPattern string) ([]schema.RowDetails, error) {
	sel, err := harness.NewSelection(runPattern, skipPattern)
	if err != nil {
		return nil, fmt.Errorf("%w: give a go test -run/-skip pattern, such as '^TestRefEdit$/^refedit-v1$'", err)
	}
	var out []schema.RowDetails
	seen := map[string]string{}
	for _, r := range rows {
		if !sel.Runs(r.Test + "/" + r.Row) {
			continue
		}
		if other, ok := seen[r.Row]; ok {
			return nil, fmt.Errorf("rows %s/%s and %s/%s share a name, and a row's name names its shard: rename one, or select one with -run", other, r.Row, r.Test, r.Row)
		}
		seen[r.Row] = r.Test
		out = append(out, r)
	}
	if len(out) == 0 {
		var all []string
		for _, r := range rows {
			all = append(all, r.Test+"/"+r.Row)
		}
		return nil, fmt.Errorf("-run %q -skip %q selects no row; the rows are %s", runPattern, skipPattern, strings.Join(all, ", "))
	}
	return out, nil
}

// entries makes one matrix entry per row and orders them (see sortEntries).
func entries(rows []schema.RowDetails, estimates map[string]Estimate, created time.Time) []Entry {
	out := make([]Entry, 0, len(rows))
	for _, r := range rows {
		e := Entry{
			Name: r.Row, Test: r.Test, Run: RunPattern(r.Test, r.Row),
			Runner: RunnerClass(r), GPUs: r.GPUs, TimeoutMinutes: TimeoutMinutes(r),
		}
		e.Command = fmt.Sprintf("make shard RUN='%s' SHARD=%s MATRIX_CREATED=%s", e.Run, r.Row, created.Format(time.RFC3339))
		if est, ok := estimates[r.Row]; ok {
			wall := est.WallS
			e.EstimateS, e.EstimateFrom = &wall, est.From
		}
		out = append(out, e)
	}
	sortEntries(out)
	return out
}

// sortEntries orders the matrix as TRTMC's tools/model_ci.py does (see the package doc).
func sortEntries(es []Entry) {
	slices.SortStableFunc(es, func(a, b Entry) int {
		if c := cmp.Compare(one(a.GPUs == 0), one(b.GPUs == 0)); c != 0 {
			return c
		}
		if c := cmp.Compare(one(a.EstimateS != nil), one(b.EstimateS != nil)); c != 0 {
			return c
		}
		if a.EstimateS != nil && b.EstimateS != nil {
			if c := cmp.Compare(*b.EstimateS, *a.EstimateS); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

func one(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RunPattern is the go test -run pattern that selects exactly one row, whole.
func RunPattern(test, row string) string {
	return "^" + regexp.QuoteMeta(test) + "$/^" + regexp.QuoteMeta(row) + "$"
}

// RunnerClass is the runner label a row's needs ask for: "cpu" (no GPU, any runtime),
// "cpu-docker" (no GPU, served only from a container), or "gpu-<count>x<GiB>" (count
// GPUs of at least that many GiB each, the minimum rounded up; "gpu-<count>x" when the
// row sets no memory minimum). A GPU runner is expected to have Docker.
func RunnerClass(r schema.RowDetails) string {
	switch {
	case r.GPUs > 0 && r.GPUMemoryBytes == 0:
		return fmt.Sprintf("gpu-%dx", r.GPUs)
	case r.GPUs > 0:
		const gib = 1 << 30
		return fmt.Sprintf("gpu-%dx%d", r.GPUs, (r.GPUMemoryBytes+gib-1)/gib)
	case r.Container:
		return "cpu-docker"
	}
	return "cpu"
}

// TimeoutMinutes is the job's timeout in whole minutes: every stage at its deadline
// (each request served and replayed natively for identity), plus the slack and margin.
func TimeoutMinutes(r schema.RowDetails) int {
	d := r.Deadlines
	s := d.Build + d.Correctness + d.Ready + float64(r.Requests)*(d.Request+d.Native) + BenchmarkSlackMinutes*60 +
		InfluenceRequests*d.Request + MarginMinutes*60
	return int(math.Ceil(s / 60))
}

// findEstimates keeps, per row, time_budget.wall_s of the newest run under root that ran
// the row through every stage (a stopped row is no measure of its length). Newest is the
// latest run.json finished time (none counts as oldest), then the larger run id. A
// missing root is no estimate at all (a fresh CI checkout has no evidence).
func findEstimates(root string) (map[string]Estimate, error) {
	dirs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Estimate{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evidence root: %w (give another with -evidence DIR)", err)
	}
	out := map[string]Estimate{}
	type from struct {
		finished time.Time
		run      string
	}
	newest := map[string]from{} // by row: the run of its estimate
	for _, d := range dirs {
		if !d.IsDir() { // evidence/latest, a link, points at a run listed anyway
			continue
		}
		runDir := filepath.Join(root, d.Name())
		var info schema.RunInfo
		if err := readJSON(filepath.Join(runDir, schema.RunFile), &info); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		rows, err := os.ReadDir(runDir)
		if err != nil {
			return nil, fmt.Errorf("evidence run folder: %w", err)
		}
		for _, rd := range rows {
			if !rd.IsDir() {
				continue
			}
			var res resultTime
			err := readJSON(filepath.Join(runDir, rd.Name(), schema.ResultsFile), &res)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if res.TimeBudget == nil || !res.ranWhole() {
				continue
			}
			name := cmp.Or(res.Row, rd.Name())
			old, ok := newest[name]
			if !ok || info.Finished.After(old.finished) || info.Finished.Equal(old.finished) && d.Name() > old.run {
				out[name] = Estimate{WallS: res.TimeBudget.WallS, From: path.Join(d.Name(), rd.Name(), schema.ResultsFile)}
				newest[name] = from{info.Finished, d.Name()}
			}
		}
	}
	return out, nil
}

// resultTime is the part of a results.json the estimates read: only that part, so that
// an older harness's folders, whose other fields had other shapes, still give their time.
type resultTime struct {
	Row        string               `json:"row"`
	Stages     []schema.StageResult `json:"stages"`
	TimeBudget *schema.TimeBudget   `json:"time_budget"`
}

// ranWhole says whether the row went through every stage (none not-run).
func (r resultTime) ranWhole() bool {
	if len(r.Stages) == 0 {
		return false
	}
	for _, st := range r.Stages {
		if st.Status == schema.NotRun {
			return false
		}
	}
	return true
}

func readJSON(file string, v any) error {
	err := schema.ReadJSON(file, v)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: fix or remove that run folder, or give another evidence root with -evidence DIR", err)
	}
	return err
}
