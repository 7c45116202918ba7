// Package familytest holds a family to its contract (package family): the suite every
// family's own tests call, with the rows and host they describe.
package familytest

import (
	"path/filepath"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/judge"
	"qualkit/internal/wire"
)

// T is what Conformance needs of a test: *testing.T, or a recorder in the suite's own
// tests, which show that each of its checks can fail.
type T interface {
	require.TestingT
	Helper()
	TempDir() string
}

// Conformance checks that f describes row on env with a valid Spec, that rules (as
// families/all lists them) hold its backend's and accept its Task-time source, and that
// every builder the family has gives an argv or an error, never an empty command.
func Conformance(t T, f family.Family, rules []judge.Rules, env family.Env, row family.Row) family.Spec {
	t.Helper()
	if env.Work == "" {
		env.Work = t.TempDir()
	}
	spec, err := f.Describe(env, row)
	require.NoError(t, err, "Describe")
	require.NoError(t, spec.Validate(), "the Spec Describe gives")
	rl, ok := judge.Find(rules, spec.Backend)
	assert.True(t, ok, "backend %q declares its evidence rules (the family's Rules, listed in families/all)", spec.Backend)
	if ok && rl.TaskTime != nil {
		proto := wire.OpenAIImages
		if spec.Wire != nil {
			proto = spec.Wire.Name()
		}
		allowed := rl.TaskTime(judge.Row{Profile: row.Profile, Protocol: proto}).Sources
		assert.Contains(t, allowed, spec.Timing, "Spec.Timing %s is a Task-time source the checker's rules for %q accept (%v): the checker would fail every run of the row", spec.Timing, spec.Backend, allowed)
	}

	scratch := t.TempDir()
	path := func(name string) string { return filepath.Join(scratch, name) }
	built := func(what string, c family.Command, err error) {
		t.Helper()
		if err == nil {
			assert.NotEmpty(t, c.Args, "%s gave an empty command and no error: return an error saying why it cannot build one", what)
		}
	}
	tools, err := f.Tools(env)
	if err == nil {
		assert.NotEmpty(t, tools.Builder, "Tools names the builder program whose hash keys the bundle cache")
		for i, c := range tools.Commands {
			assert.NotEmpty(t, c.Args, "tool command %d is empty", i+1)
		}
	}
	if spec.Image != nil {
		img, err := spec.Image(env)
		if err == nil {
			assert.True(t, img.Ref != "" || img.Context != "" || img.Dockerfile != "", "Image names a Ref, a Context or a Dockerfile")
		}
	}
	if spec.Build != nil {
		c, err := spec.Build(env, family.BuildSpec{Out: path("x.bundle"), Reference: path("ref.png")})
		built("Build", c, err)
	}
	cc, err := f.Correctness(env, family.CorrectnessSpec{Bundle: path("x.bundle"), JUnit: path("junit.xml"), Artifacts: path("artifacts"), Scratch: path("case")})
	if err == nil {
		built("Correctness", cc.Command, nil)
		assert.NotEmpty(t, cc.Cases, "the correctness case names the JUnit ids it must execute")
		assert.Equal(t, spec.Build == nil, cc.Bundle != "", "CorrectnessCase.Bundle is set exactly when the Spec has no Build")
	}
	c, err := f.Serve(env, family.ServeSpec{Bundle: path("x.bundle"), Model: row.Model, Host: "127.0.0.1", Port: 8000, Records: path("records.jsonl"), Scratch: path("scratch")})
	built("Serve", c, err)
	seed := int64(42)
	c, err = f.Native(env, family.NativeSpec{Bundle: path("x.bundle"), Image: path("in.png"), Prompt: "p", Settings: map[string]string{"seed": "42"}, LatentSeed: &seed, Output: path("out.png")})
	built("Native", c, err)
	if spec.NativeBatch != nil {
		c, err := spec.NativeBatch(env, family.NativeBatchSpec{Bundle: path("x.bundle"), Items: path("items.jsonl"), Report: path("report.jsonl")})
		built("NativeBatch", c, err)
	}
	return spec
}
