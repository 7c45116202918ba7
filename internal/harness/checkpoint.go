package harness

import (
	"fmt"
	"regexp"

	"qualkit/internal/family"
	"qualkit/internal/gpu"
)

// Checkpoint is one row of a qualification table: a checkpoint served by one backend.
type Checkpoint struct {
	Name     string // row label, unique within a table; becomes the subtest and evidence folder name
	Family   string // directory under families/ that owns the adapter
	Model    string // model name sent to the server (HF id for real checkpoints)
	Profile  string // the family's profile id (TRTMC testcase id, or the reference profile)
	Revision string // pinned checkpoint revision; empty only for families without one
	Reason   string // why this row is in the group, or why it is a gap

	Smoke  bool // a reduced or random-weight profile: never qualification of the full checkpoint
	Double bool // served by a contract double of the serving stack: proves the wiring, never qualified

	Adapter  family.Family
	Fixtures string // path to the fixtures manifest, relative to the repository root
	Bench    Bench
	Needs    Needs
	Deadline family.Deadlines
}

type Bench struct {
	Measured int // profiling requests
	Warmup   int // warmup requests (outside the timed region, still replayed for identity)
	Seed     int // AIPerf --random-seed
}

// Needs is what a row requires of the host. The zero value means CPU only, any runtime.
type Needs struct {
	GPU       gpu.Needs // zero: no GPU
	Container bool      // the row can only be served from a container
	ShareGPU  bool      // its GPUs may be leased at once to other rows that say so too
	// ResidentBytes is the model's memory once loaded (on each GPU, or the host), and
	// CaseResidentBytes the correctness case's peak: the overlapped order loads two
	// things at once only when the free memory holds both (zero: unknown, so never).
	ResidentBytes, CaseResidentBytes uint64
}

// Deadlines are the row's own, defaults filled, as the family adjusts them (Spec.Deadlines).
func (c Checkpoint) Deadlines() family.Deadlines {
	d := c.Deadline.WithDefaults()
	if c.Adapter == nil {
		return d
	}
	if spec, err := c.Adapter.Describe(family.Env{}, c.Row()); err == nil && spec.Deadlines != nil {
		d = spec.Deadlines(d)
	}
	return d
}

func (c Checkpoint) Row() family.Row {
	return family.Row{Name: c.Name, Model: c.Model, Profile: c.Profile, Revision: c.Revision, Smoke: c.Smoke, Double: c.Double, Fixtures: c.Fixtures}
}

var rowName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

func (c Checkpoint) Validate() error {
	switch {
	case !rowName.MatchString(c.Name):
		return fmt.Errorf("checkpoint %q: name must match %s (it names a subtest and a folder)", c.Name, rowName)
	case c.Family == "":
		return fmt.Errorf("checkpoint %q: no family: set Family to the directory under families/", c.Name)
	case c.Reason == "":
		return fmt.Errorf("checkpoint %q: no reason: say why this row is in the group", c.Name)
	case c.Adapter == nil:
		return fmt.Errorf("checkpoint %q: no adapter: set Adapter to the family's family.Family", c.Name)
	case c.Model == "" || c.Profile == "":
		return fmt.Errorf("checkpoint %q: Model and Profile are required", c.Name)
	case c.Fixtures == "":
		return fmt.Errorf("checkpoint %q: no fixtures manifest", c.Name)
	case c.Bench.Measured < 1 || c.Bench.Warmup < 0:
		return fmt.Errorf("checkpoint %q: bench needs Measured >= 1 and Warmup >= 0, got %d + %d", c.Name, c.Bench.Measured, c.Bench.Warmup)
	}
	return nil
}

// Table is a group of rows. NewTable panics on an invalid or duplicate row.
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
