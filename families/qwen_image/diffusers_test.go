package qwenimage

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

var _ family.Family = Diffusers{}

const diffBundle = "/cache/bundles/77aa/qwen-image-edit-2511-reference-smoke.bundle"

var diffEnv = family.Env{Root: "/repo", Work: "/work/row", Python: "/repo/.venv/bin/python"}

func smokeAdapter() Diffusers {
	return DiffusersFromEnv(DiffusersSmoke(), func(k string) string {
		return map[string]string{EnvDiffusersPython: "/opt/torch/bin/python"}[k]
	})
}

func TestDiffusersBuildArgv(t *testing.T) {
	out := "/cache/bundles/.partial-1/qwen-image-edit-2511-reference-smoke.bundle"
	assert.Equal(t, family.Command{
		Args: []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/pipeline.py", "bundle", "--smoke", "--precision", "fp32", "-o", out},
		Dir:  "/repo",
	}, must(smokeAdapter().build(diffEnv, family.BuildSpec{Out: out, Reference: "/repo/fixtures/x.png"})))

	ck := DiffusersCheckpoint("/hf/hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/" + Revision)
	assert.Equal(t, []string{"python3", "/repo/families/qwen_image/reference/pipeline.py", "bundle",
		"--checkpoint", "/hf/hub/models--Qwen--Qwen-Image-Edit-2511/snapshots/" + Revision, "--revision", Revision,
		"--precision", "bf16", "-o", out}, must(ck.build(diffEnv, family.BuildSpec{Out: out})).Args,
		"python3 from PATH when QUALKIT_QWEN_PYTHON is unset; the checkpoint is served in bf16")
}

func TestDiffusersBuildSettingsToolsAndTiming(t *testing.T) {
	d := smokeAdapter()
	assert.Equal(t, "diffusers", described(d, diffEnv, family.Row{}).Backend)
	assert.Equal(t, map[string]string{"profile": "smoke", "precision": "fp32", "pipeline": "QwenImageEditPlusPipeline", "diffusers": "0.40.0"}, d.buildSettings())
	ck := DiffusersCheckpoint("/snap")
	assert.Equal(t, map[string]string{"profile": "checkpoint", "precision": "bf16", "pipeline": "QwenImageEditPlusPipeline", "diffusers": "0.40.0",
		"snapshot": "/snap", "revision": Revision}, ck.buildSettings())
	tools := must(d.Tools(diffEnv))
	require.Len(t, tools.Commands, 1)
	assert.Equal(t, []string{"/opt/torch/bin/python", "-c", versionsProgram}, tools.Commands[0].Args, "tools only log the versions")
	assert.Equal(t, "/repo/families/qwen_image/reference/pipeline.py", tools.Builder, "the smoke construction lives in pipeline.py, so it keys the bundle cache")
	assert.Equal(t, d.buildSettings(), tools.Settings)
	assert.Equal(t, schema.TimingSource{Body: "timing.task_ms", RecordID: "request_id"}, d.timing())
}

func TestDiffusersCorrectnessArgv(t *testing.T) {
	cc := must(smokeAdapter().Correctness(diffEnv, family.CorrectnessSpec{Bundle: diffBundle, JUnit: "/ev/row/correctness/junit.xml", Artifacts: "/ev/row/correctness/artifacts"}))
	assert.Equal(t, family.CorrectnessCase{
		Command: family.Command{
			Args: []string{"/opt/torch/bin/python", "-m", "pytest", "families/qwen_image/reference/test_parity.py", "-v", "-rs", "-p", "no:cacheprovider",
				"--rootdir", "/repo", "--bundle", diffBundle, "--artifacts-dir", "/ev/row/correctness/artifacts", "--junitxml=/ev/row/correctness/junit.xml"},
			Dir: "/repo",
		},
		JUnit:     "/ev/row/correctness/junit.xml",
		Cases:     []string{"families.qwen_image.reference.test_parity.test_gpu_matches_cpu_float32"},
		Result:    "/ev/row/correctness/artifacts/result.json",
		TestFiles: []string{"/repo/families/qwen_image/reference/test_parity.py"},
	}, cc)
}

func TestDiffusersServeArgv(t *testing.T) {
	cmd := must(smokeAdapter().Serve(diffEnv, family.ServeSpec{Bundle: diffBundle, Model: HFID, Host: "127.0.0.1", Port: 41234, Records: "/ev/row/serve/records.jsonl"}))
	assert.Equal(t, family.Command{
		Args: []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/server.py", diffBundle,
			"--model-name", "Qwen/Qwen-Image-Edit-2511", "--host", "127.0.0.1", "--port", "41234",
			"--records", "/ev/row/serve/records.jsonl", "--device", "cuda"},
		Dir: "/repo",
	}, cmd)
	cpu := smokeAdapter()
	cpu.Device = "cpu"
	assert.Equal(t, "cpu", must(cpu.Serve(diffEnv, family.ServeSpec{})).Args[len(must(cpu.Serve(diffEnv, family.ServeSpec{})).Args)-1])
}

func TestDiffusersNativeArgv(t *testing.T) {
	cmd := must(smokeAdapter().Native(diffEnv, family.NativeSpec{
		Bundle: diffBundle, Image: "/work/row/input-03", Prompt: "-turn it blue", Output: "/ev/row/identity/03-profiling-native.png",
		Settings: map[string]string{"true_cfg_scale": "4.0", "size": "512x512", "seed": "42", "num_inference_steps": "8", "negative_prompt": " "},
	}))
	assert.Equal(t, family.Command{
		Args: []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/native.py", diffBundle,
			"--image", "/work/row/input-03", "--prompt=-turn it blue", "--output", "/ev/row/identity/03-profiling-native.png", "--device", "cuda",
			"--negative-prompt= ", "--num-inference-steps=8", "--seed=42", "--size=512x512", "--true-cfg-scale=4.0"},
		Dir: "/repo",
	}, cmd, "every setting as --flag=VALUE, sorted by field; a prompt starting with '-' stays a value; a space stays a space")

	unknown := must(smokeAdapter().Native(diffEnv, family.NativeSpec{Settings: map[string]string{"guidance_scale": "1.0", "negative_prompt": ""}}))
	assert.Equal(t, []string{"--guidance-scale=1.0", "--negative-prompt="}, unknown.Args[len(unknown.Args)-2:],
		"an unmapped setting still reaches native.py, which refuses it (exit 2) instead of ignoring it")
}

// The Go argv and the Python argparse are one contract: the rendered commands parse.
// With a bundle that does not exist, native.py and server.py get past argument parsing
// and exit 1; a flag they do not know would be exit 2 with "usage:".
func TestDiffusersArgvParsesInThePrograms(t *testing.T) {
	py := pythonWith(t, "")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	env := family.Env{Root: root, Work: t.TempDir()}
	d := Diffusers{Python: py, Smoke: true}
	missing := filepath.Join(env.Work, "no.bundle")

	native := must(d.Native(env, family.NativeSpec{Bundle: missing, Image: "/x.png", Prompt: "-a prompt", Output: filepath.Join(env.Work, "o.png"),
		Settings: map[string]string{"size": "512x512", "seed": "42", "num_inference_steps": "8", "true_cfg_scale": "4.0", "negative_prompt": " "}}))
	code, out := runArgv(t, native)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "no.bundle")
	assert.NotContains(t, out, "usage:")

	bad := must(d.Native(env, family.NativeSpec{Bundle: missing, Image: "/x.png", Prompt: "p", Output: "/o.png", Settings: map[string]string{"guidance_scale": "1"}}))
	code, out = runArgv(t, bad)
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "--guidance-scale")

	serve := must(d.Serve(env, family.ServeSpec{Bundle: missing, Model: HFID, Host: "127.0.0.1", Port: 1, Records: filepath.Join(env.Work, "r.jsonl")}))
	code, out = runArgv(t, serve)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "no.bundle")
}

// The parity case collects exactly one item with the adapter's options, and writes JUnit.
// Without CUDA or diffusers (CI) that item is a skip, which the harness's gate refuses.
func TestDiffusersCorrectnessCollectsOneItem(t *testing.T) {
	py := pythonWith(t, "pytest")
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	env := family.Env{Root: root, Work: t.TempDir()}
	art := filepath.Join(env.Work, "artifacts")
	cc := must(Diffusers{Python: py, Smoke: true}.Correctness(env, family.CorrectnessSpec{Bundle: filepath.Join(env.Work, "no.bundle"), JUnit: filepath.Join(env.Work, "junit.xml"), Artifacts: art}))
	code, out := runArgv(t, cc.Command)
	assert.NotEqual(t, 4, code, "pytest usage error: %s", out)
	counts, err := harness.ReadJUnit(cc.JUnit)
	require.NoError(t, err, out)
	assert.Equal(t, 1, counts.Total, out)
	if counts.Skipped == 1 {
		// No torch here: the one item skips, and the gate fails it by the declared id.
		err := harness.GateCases(counts, cc.Cases)
		assert.ErrorContains(t, err, "1 skipped", "a skipped parity case must fail the correctness stage")
		assert.ErrorContains(t, err, "declared but not executed: "+ParityCaseID)
		assert.Contains(t, counts.Reasons[0], "test_gpu_matches_cpu_float32")
		return
	}
	assert.Equal(t, []string{ParityCaseID}, counts.Cases, "the declared id is the one pytest writes")
}

func TestDiffusersRequirements(t *testing.T) {
	cases := []struct {
		name  string
		probe string // what the fake interpreter prints
		exit  int
		want  []string
	}{
		{"all present", `{"python":"3.12.3","packages":{"torch":"2.11.0","torchvision":"0.26.0","transformers":"5.17.0","diffusers":"0.40.0","pytest":"9.2.0","pillow":"12.0.0","numpy":"2.5.2"},"cuda_available":true,"cuda_devices":1,"torch_cuda":"13.0"}`, 0, nil},
		{"no diffusers, no CUDA", `{"python":"3.12.3","packages":{"torch":"2.11.0","torchvision":"0.26.0","transformers":"5.17.0","diffusers":null,"pytest":"9.2.0","pillow":"12.0.0","numpy":"2.5.2"},"cuda_available":false,"cuda_devices":0,"torch_cuda":null}`, 0,
			[]string{"lacks diffusers", "sees no CUDA device"}},
		{"wrong diffusers", `{"python":"3.12.3","packages":{"torch":"2.11.0","torchvision":"0.26.0","transformers":"5.17.0","diffusers":"0.42.1","pytest":"9.2.0","pillow":"12.0.0","numpy":"2.5.2"},"cuda_available":true,"cuda_devices":1,"torch_cuda":"13.0"}`, 0,
			[]string{"diffusers 0.42.1"}},
		{"interpreter fails", `boom`, 3, []string{"python for the diffusers backend"}},
		{"no torch at all", `{"python":"3.11.7","packages":{"torch":null,"torchvision":null,"transformers":null,"diffusers":null,"pytest":"9.2.0","pillow":"12.0.0","numpy":"2.4.6"},"cuda_error":"ModuleNotFoundError(\"No module named 'torch'\")"}`, 0,
			[]string{"lacks torch, torchvision, transformers, diffusers"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			py := fakePython(t, tc.probe, tc.exit)
			reqs := requirementsOf(Diffusers{Python: py, Smoke: true}, family.Env{Root: t.TempDir()}, family.Row{Name: "reference-smoke", Smoke: true})
			var got []string
			for _, q := range reqs {
				got = append(got, q.What)
				assert.NotEmpty(t, q.Fix, q.What)
				assert.True(t, q.Absent, "host pieces are absent, not broken inputs: %s", q.What)
			}
			require.Len(t, got, len(tc.want), "%v", got)
			for i, w := range tc.want {
				assert.Contains(t, got[i], w)
			}
		})
	}
}

func TestDiffusersRequirementsRowMismatch(t *testing.T) {
	py := fakePython(t, `{"python":"3.12.3","packages":{"torch":"2.11.0","torchvision":"0.26.0","transformers":"5.17.0","diffusers":"0.40.0","pytest":"9.2.0","pillow":"12.0.0","numpy":"2.5.2"},"cuda_available":true}`, 0)
	reqs := requirementsOf(Diffusers{Python: py, Smoke: true}, family.Env{Root: t.TempDir()}, family.Row{Name: "x", Smoke: false})
	require.Len(t, reqs, 1)
	assert.False(t, reqs[0].Absent)
	assert.Contains(t, reqs[0].What, "Smoke=false")

	ck := Diffusers{Python: py, Snapshot: filepath.Join(t.TempDir(), "missing")}
	reqs = requirementsOf(ck, family.Env{Root: t.TempDir()}, family.Row{Name: "ck", Revision: "main"})
	require.Len(t, reqs, 2)
	assert.Contains(t, reqs[0].What, `pins revision "main"`)
	assert.Contains(t, reqs[1].What, "model_index.json missing")
	assert.True(t, reqs[1].Absent)
}

// fakePython is an executable that prints probe and exits with code, whatever its args.
func fakePython(t *testing.T, probe string, code int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "python")
	script := "#!/bin/sh\ncat <<'EOF'\n" + probe + "\nEOF\nexit " + strconv.Itoa(code) + "\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// pythonWith finds an interpreter (the project venv's first) that imports module.
func pythonWith(t *testing.T, module string) string {
	t.Helper()
	if module == "" {
		module = "json"
	}
	for _, py := range []string{"../../.venv/bin/python", "python3"} {
		if err := exec.Command(py, "-c", "import "+module).Run(); err != nil {
			continue
		}
		if strings.Contains(py, "/") {
			abs, err := filepath.Abs(py)
			require.NoError(t, err)
			return abs
		}
		return py
	}
	t.Fatalf("no python with %s: run `make setup`", module)
	return ""
}

func runArgv(t *testing.T, c family.Command) (int, string) {
	t.Helper()
	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	t.Fatalf("run %v: %v", c.Args, err)
	return -1, ""
}

// The parity case reads its image from the repository (parity.json case.image): it must
// exist and be a fixture of the pool, or the case fails only where a GPU runs it (the H200
// found it after the fixtures moved to fixtures/images).
func TestParityCaseImageIsAPooledFixture(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, "families", "qwen_image", "reference", "parity.json"))
	require.NoError(t, err)
	var parity struct {
		Case struct {
			Image string `json:"image"`
		} `json:"case"`
	}
	require.NoError(t, json.Unmarshal(b, &parity))
	require.FileExists(t, filepath.Join(root, parity.Case.Image))
	pool, err := os.ReadFile(filepath.Join(root, "fixtures", "images", "pool.json"))
	require.NoError(t, err)
	assert.Contains(t, string(pool), `"`+filepath.Base(parity.Case.Image)+`"`)
	assert.Equal(t, "fixtures/images", filepath.Dir(parity.Case.Image))
}

// The reference backend's quality criteria come from its own files, and its pair is the
// parity case's, held against the case's CPU image.
func TestDiffusersQualityReadsItsOwnFiles(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	spec, err := qualityOf(DiffusersSmoke(), family.Env{Root: root}, rowOf(harness.Checkpoint{}))
	require.NoError(t, err)
	require.Len(t, spec.Files, 2)
	assert.Equal(t, 0.15, *spec.Criteria.MeanMin)
	assert.Equal(t, 0.85, *spec.Criteria.MeanMax)
	assert.Equal(t, 0.05, *spec.Criteria.StdMin)
	assert.Equal(t, 55.0, *spec.Criteria.PSNRMin)
	assert.Equal(t, 0.999, *spec.Criteria.SSIMMin)
	require.NotNil(t, spec.Pair)
	assert.Equal(t, "cpu.png", spec.Pair.Reference)
	assert.FileExists(t, spec.Pair.Image)
	_, err = qualityOf(Diffusers{Precision: "bf16"}, family.Env{Root: root}, rowOf(harness.Checkpoint{}))
	assert.ErrorContains(t, err, "checkpoint/bf16 psnr_db/ssim minimums are required", "no parity thresholds for the checkpoint: an error, never criteria left out")
}
