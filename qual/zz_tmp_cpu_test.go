package qual

import (
	"os"
	"testing"
	"time"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/harness"
)

type cpuDiffusers struct{ qwenimage.Diffusers }

func (c cpuDiffusers) Correctness(env harness.Env, spec harness.CorrectnessSpec) harness.CorrectnessCase {
	cc := c.Diffusers.Correctness(env, spec)
	cc.Command.Args = []string{c.Python, "-m", "pytest", "families/qwen_image/reference/selftest/test_metrics.py::test_gates", "-p", "no:cacheprovider", "--junitxml=" + spec.JUnit}
	cc.Result = ""
	return cc
}

func (c cpuDiffusers) Requirements(harness.Env, harness.Checkpoint) []harness.Requirement { return nil }

func TestTmpCPU(t *testing.T) {
	d := qwenimage.DiffusersSmoke()
	d = qwenimage.DiffusersFromEnv(d, os.Getenv)
	d.Device = "cpu"
	c := harness.Checkpoint{Name: "reference-smoke-cpu", Family: "qwen_image", Model: qwenimage.HFID, Profile: "tmp-cpu", Smoke: true, Reason: "tmp",
		Adapter: cpuDiffusers{d}, Fixtures: "fixtures/zz_tmp_cpu/manifest.json", Bench: harness.Bench{Measured: 5, Warmup: 1},
		Deadline: harness.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: 5 * time.Minute, Request: 5 * time.Minute, Native: 5 * time.Minute}}
	suite.Qualify(t, c)
}
