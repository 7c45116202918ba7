package familytest

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

var minimalRules = []judge.Rules{{
	Backend:       "familytest-minimal",
	PairReference: func(string, string) string { return "pair/reference.png" },
	PairMetric:    func(string) string { return "" },
	TaskTime: func(judge.Row) judge.TaskTime {
		return judge.TaskTime{Sources: []schema.TimingSource{{Body: "timing.ms"}}, Body: "timing.ms"}
	},
}}

// minimal is the smallest family the contract accepts; each field breaks one thing.
type minimal struct {
	backend      string // "" breaks Validate
	timing       string // the body field of the Task time: "" is timing.ms, what the rules accept
	noIdentity   bool
	emptyServe   bool // Serve gives an empty command and no error
	noBuilder    bool
	bundleByCase bool // no Spec.Build, but the case names no bundle
}

func (m minimal) Describe(family.Env, family.Row) (family.Spec, error) {
	timing := cmp.Or(m.timing, "timing.ms")
	s := family.Spec{Backend: m.backend, Timing: schema.TimingSource{Body: timing},
		Identity: family.IdentityCheck{Path: "/v1/models", Check: func([]byte, family.ServeSpec) (string, error) { return "m", nil }}}
	if !m.bundleByCase {
		s.Build = func(_ family.Env, s family.BuildSpec) (family.Command, error) {
			return family.Command{Args: []string{"build", s.Out}}, nil
		}
	}
	if m.noIdentity {
		s.Identity = family.IdentityCheck{}
	}
	return s, nil
}

func (m minimal) Tools(family.Env) (family.Tools, error) {
	if m.noBuilder {
		return family.Tools{}, nil
	}
	return family.Tools{Builder: "/repo/build.py"}, nil
}

func (minimal) Correctness(_ family.Env, s family.CorrectnessSpec) (family.CorrectnessCase, error) {
	return family.CorrectnessCase{Command: family.Command{Args: []string{"case", s.JUnit}}, Cases: []string{"case"}}, nil
}

func (m minimal) Serve(_ family.Env, s family.ServeSpec) (family.Command, error) {
	if m.emptyServe {
		return family.Command{}, nil
	}
	return family.Command{Args: []string{"serve", s.Bundle}}, nil
}

func (minimal) Native(_ family.Env, s family.NativeSpec) (family.Command, error) {
	return family.Command{Args: []string{"native", s.Output}}, nil
}

// recorder is a T that keeps what failed; FailNow ends the suite where it is.
type recorder struct {
	t      *testing.T
	errors []string
}

type failNow struct{}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) FailNow()        { panic(failNow{}) }
func (r *recorder) Helper()         {}
func (r *recorder) TempDir() string { return r.t.TempDir() }

// run is what Conformance found wrong with f, in one string.
func run(t *testing.T, f family.Family) string {
	r := &recorder{t: t}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if _, ok := v.(failNow); !ok {
					panic(v)
				}
			}
		}()
		Conformance(r, f, minimalRules, family.Env{Root: "/repo"}, family.Row{Name: "r", Model: "m"})
	}()
	return strings.Join(r.errors, "\n")
}

// The suite passes the smallest family and fails each way one can break the contract,
// naming what to do.
func TestConformanceCanFail(t *testing.T) {
	ok := minimal{backend: "familytest-minimal"}
	assert.Empty(t, run(t, ok))
	for name, c := range map[string]struct {
		f    minimal
		want string
	}{
		"no backend":                 {minimal{}, "Spec.Backend is empty"},
		"unregistered backend":       {minimal{backend: "nobody-registered-me"}, `backend "nobody-registered-me" declares its evidence rules`},
		"no identity":                {minimal{backend: ok.backend, noIdentity: true}, "Spec.Identity needs a Path and a Check"},
		"empty serve":                {minimal{backend: ok.backend, emptyServe: true}, "Serve gave an empty command and no error"},
		"no builder":                 {minimal{backend: ok.backend, noBuilder: true}, "Tools names the builder program"},
		"timing the checker refuses": {minimal{backend: ok.backend, timing: "took_ms"}, "Spec.Timing response body took_ms is a Task-time source the checker"},
		"case names no bundle":       {minimal{backend: ok.backend, bundleByCase: true}, "CorrectnessCase.Bundle is set exactly when the Spec has no Build"},
	} {
		got := run(t, c.f)
		require.NotEmpty(t, got, name)
		assert.Contains(t, got, c.want, name)
	}
	_, err := os.Stat("/repo/build.py")
	assert.True(t, os.IsNotExist(err), "the suite runs no command: it only builds them")
}

// The reference servers' identity: the model listed under the row's name names the
// checkpoint the server serves; a list without it, or not JSON, is refused.
func TestModelsWithCheckpoint(t *testing.T) {
	check := family.ModelsWithCheckpoint.Check
	spec := family.ServeSpec{Model: "qualkit/refedit-v1"}
	got, err := check([]byte(`{"object": "list", "data": [{"id": "other"}, {"id": "qualkit/refedit-v1", "checkpoint": "acme/edit-v1"}]}`), spec)
	require.NoError(t, err)
	assert.Equal(t, "acme/edit-v1", got, "the checkpoint as the server states it: the harness compares it with the row's model")
	_, err = check([]byte(`{"data": [{"id": "other", "checkpoint": "qualkit/refedit-v1"}]}`), spec)
	assert.ErrorContains(t, err, `the server lists no model "qualkit/refedit-v1" in GET /v1/models: {"data"`)
	_, err = check([]byte(`<html>`), spec)
	assert.ErrorContains(t, err, "not JSON")
}
