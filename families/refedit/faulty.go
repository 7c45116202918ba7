package refedit

import (
	"time"

	"qualkit/internal/family"
)

// Faulty is the reference family broken on purpose, for the negative controls (README
// "Fault injection"): it wraps a real Family from outside and adds refedit's fault flags
// to the commands it gives. The zero values break nothing; none of them is part of the
// bundle or its cache key.
type Faulty struct {
	Family
	Fault       string        // `refedit serve --fault NAME[:K]`
	FaultDelay  time.Duration // `refedit serve --fault-delay` (slow); 0 keeps the server's default
	NativeFault string        // `refedit run --fault NAME`: the identity stage's native Task
	LeakState   bool          // `refedit run --batch --leak-state`: a batch that carries state between replays
	OneShot     bool          // no batch: one `refedit run` per replay (as for a TRTMC checkout without the persistent worker)
	NoPair      bool          // the quality stage without the pair's reference criteria: the influence gate alone sees a server that ignores the image
	CaseFault   CaseFault     // a correctness case that proves nothing
	MemoryBytes int64         // the row's containers get this memory cap: below what the server needs, the kernel OOM-kills it
	// ControlValues replace the two values the controls stage sends for a field: the
	// checker's testdata, shrunk to 64x64, needs more blur passes than 512x512 for a
	// step's cost to show, and small sizes to stay small.
	ControlValues map[string][2]string
}

// Describe is the family's, its commands broken as the fields ask: without the batch when
// OneShot asks, without the pair when NoPair asks.
func (f Faulty) Describe(env family.Env, row family.Row) (family.Spec, error) {
	spec, err := f.Family.Describe(env, row)
	image, batch := spec.Image, spec.NativeBatch
	spec.Image = func(env family.Env) (family.ContainerImage, error) {
		ci, err := image(env)
		ci.MemoryBytes = f.MemoryBytes
		return ci, err
	}
	spec.NativeBatch = func(env family.Env, s family.NativeBatchSpec) (family.Command, error) {
		c, err := batch(env, s)
		if f.NativeFault != "" {
			c.Args = append(c.Args, "--fault", f.NativeFault)
		}
		if f.LeakState {
			c.Args = append(c.Args, "--leak-state")
		}
		return c, err
	}
	if f.OneShot {
		spec.NativeBatch, spec.BatchWaits = nil, false
	}
	if spec.Controls != nil {
		for i, c := range spec.Controls.Controls {
			if v, ok := f.ControlValues[c.Field]; ok {
				spec.Controls.Controls[i].Values = v
			}
		}
	}
	if f.NoPair {
		spec.Quality = func(env family.Env) (family.QualitySpec, error) {
			q, err := quality(env)
			q.Pair = nil
			q.Criteria.PSNRMin, q.Criteria.SSIMMin = nil, nil
			return q, err
		}
	}
	return spec, err
}

// CaseFault replaces the correctness case with one the harness must refuse.
type CaseFault string

const (
	// CaseSkips runs correctness/faults/test_skips.py: one case that calls pytest.skip,
	// as TRTMC's case does when diffusers is missing.
	CaseSkips CaseFault = "skip"
	// CaseSelectsNone runs the real case with a -k that selects nothing (pytest exits 5).
	CaseSelectsNone CaseFault = "select-none"
)

func (f Faulty) Serve(env family.Env, spec family.ServeSpec) (family.Command, error) {
	c, err := f.Family.Serve(env, spec)
	if f.Fault != "" {
		c.Args = append(c.Args, "--fault", f.Fault)
	}
	if f.FaultDelay != 0 {
		c.Args = append(c.Args, "--fault-delay", f.FaultDelay.String())
	}
	return c, err
}

func (f Faulty) Native(env family.Env, spec family.NativeSpec) (family.Command, error) {
	c, err := f.Family.Native(env, spec)
	if f.NativeFault != "" {
		c.Args = append(c.Args, "--fault", f.NativeFault)
	}
	return c, err
}

func (f Faulty) Correctness(env family.Env, spec family.CorrectnessSpec) (family.CorrectnessCase, error) {
	cc, err := f.Family.Correctness(env, spec)
	switch f.CaseFault {
	case CaseSkips:
		cc.Command.Args = []string{env.Python, "-m", "pytest", "families/refedit/correctness/faults/test_skips.py",
			"-v", "-rs", "-p", "no:cacheprovider", "--rootdir", env.Root, "--junitxml=" + spec.JUnit}
	case CaseSelectsNone:
		cc.Command.Args = append(cc.Command.Args, "-k", "qualkit_negative_control_selects_nothing")
	}
	return cc, err
}
