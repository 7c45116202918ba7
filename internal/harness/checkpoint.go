package harness

import (
	"fmt"
	"regexp"
	"time"

	"qualkit/internal/harness/gpu"
)

// Checkpoint is one row of a qualification table: a checkpoint (or reference family)
// served by one backend, with the reason it belongs to its group.
type Checkpoint struct {
	Name     string // row label, unique within a table; becomes the subtest and evidence folder name
	Family   string // directory under families/ that owns the adapter
	Model    string // model name sent to the server (HF id for real checkpoints)
	Profile  string // the family's profile id (TRTMC testcase id, or the reference profile)
	Revision string // pinned checkpoint revision; empty only for families without one
	Reason   string // why this row is in the group, or why it is a gap

	// Smoke marks reduced or random-weight profiles: they may pass every stage but are
	// never reported as qualification of the full checkpoint.
	Smoke bool
	// Double marks rows served by a contract double of the serving stack (programs that
	// hold its documented contracts, without the model): they prove the adapter's wiring
	// and read "passed-contract-double", never qualified.
	Double bool

	Adapter  Family
	Fixtures string // path to the fixtures manifest, relative to the repository root
	Bench    Bench
	Needs    Needs
	Deadline Deadlines
}

// Bench is the AIPerf workload shape of a row.
type Bench struct {
	Measured int // profiling requests
	Warmup   int // warmup requests (outside the timed region, still replayed for identity)
	Seed     int // AIPerf --random-seed
}

// Needs is what a row requires of the host. The zero value means CPU only, any runtime.
type Needs struct {
	GPU       gpu.Needs // count, memory per GPU, compute capability; zero: no GPU
	Container bool      // the row can only be served from a container
	// ShareGPU lets the row's GPUs be leased to other rows that say so too, at the same
	// time; by default a row has its GPUs to itself for its whole life.
	ShareGPU bool
	// ResidentBytes is the model's memory once loaded (on each of the row's GPUs, or on
	// the host for a row without one). The overlapped order preloads the native batch
	// beside the server only when the free memory holds both; zero: unknown, so never.
	ResidentBytes uint64
	// CaseResidentBytes is the correctness case's peak memory (its model, and the
	// reference it compares with, if it loads one), where ResidentBytes is counted. The
	// overlapped order loads the server beside the case only when the free memory holds
	// both; zero: unknown, so never.
	CaseResidentBytes uint64
}

// Deadlines bound each long stage of a row. Zero fields take the defaults.
type Deadlines struct {
	Build       time.Duration
	Correctness time.Duration
	Ready       time.Duration // model load until /health/ready answers 200
	Request     time.Duration // one HTTP request
	Native      time.Duration // one native task call
}

// WithDefaults is the deadlines with each zero field set to its default.
func (d Deadlines) WithDefaults() Deadlines { return d.withDefaults() }

// DeadlineSetter is implemented by families whose stages take longer on some inputs than
// the row states (a correctness case that builds its own bundle): they adjust the row's
// deadlines, defaults already applied.
type DeadlineSetter interface {
	StageDeadlines(d Deadlines) Deadlines
}

// Deadlines are the deadlines the row runs with: its own, defaults filled, as the
// family adjusts them.
func (c Checkpoint) Deadlines() Deadlines {
	d := c.Deadline.withDefaults()
	if ds, ok := c.Adapter.(DeadlineSetter); ok {
		d = ds.StageDeadlines(d)
	}
	return d
}

func (d Deadlines) withDefaults() Deadlines {
	def := func(v *time.Duration, x time.Duration) {
		if *v == 0 {
			*v = x
		}
	}
	def(&d.Build, 30*time.Minute)
	def(&d.Correctness, 30*time.Minute)
	def(&d.Ready, 30*time.Minute)
	def(&d.Request, 30*time.Minute)
	def(&d.Native, 30*time.Minute)
	return d
}

var rowName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Validate reports what is wrong with a row, so a table cannot hold a row that would
// produce an unreadable report.
func (c Checkpoint) Validate() error {
	switch {
	case !rowName.MatchString(c.Name):
		return fmt.Errorf("checkpoint %q: name must match %s (it names a subtest and a folder)", c.Name, rowName)
	case c.Family == "":
		return fmt.Errorf("checkpoint %q: no family: set Family to the directory under families/", c.Name)
	case c.Reason == "":
		return fmt.Errorf("checkpoint %q: no reason: say why this row is in the group", c.Name)
	case c.Adapter == nil:
		return fmt.Errorf("checkpoint %q: no adapter: set Adapter to the family's harness.Family", c.Name)
	case c.Model == "" || c.Profile == "":
		return fmt.Errorf("checkpoint %q: Model and Profile are required", c.Name)
	case c.Fixtures == "":
		return fmt.Errorf("checkpoint %q: no fixtures manifest", c.Name)
	case c.Bench.Measured < 1 || c.Bench.Warmup < 0:
		return fmt.Errorf("checkpoint %q: bench needs Measured >= 1 and Warmup >= 0, got %d + %d", c.Name, c.Bench.Measured, c.Bench.Warmup)
	}
	return nil
}

// Table is a group of rows. NewTable panics on an invalid or duplicate row: a table is
// source code, and a broken one must not compile into a run.
type Table []Checkpoint

func NewTable(rows ...Checkpoint) Table {
	seen := map[string]bool{}
	for _, r := range rows {
		if err := r.Validate(); err != nil {
			panic(err)
		}
		if seen[r.Name] {
			panic(fmt.Sprintf("checkpoint %q appears twice in the table", r.Name))
		}
		seen[r.Name] = true
	}
	return Table(rows)
}
