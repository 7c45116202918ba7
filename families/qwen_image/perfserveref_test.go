package qwenimage

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

func perfServeRefAdapter(checkout string) PerfServeReference {
	return PerfServeReferenceFromEnv(func(k string) string {
		return map[string]string{EnvDiffusersPython: "/opt/torch/bin/python", EnvPerfServe: checkout}[k]
	})
}

var psrEnv = family.Env{Root: "/repo", Work: "/work/row", Python: "/repo/.venv/bin/python"}

// Every command of the row, as it runs: perf-serve staged into the row's work folder and
// served from there with --backend reference on the saved pipeline, deterministic, in the
// bundle's precision; the native Task the same backend from the same tree.
func TestPerfServeReferenceCommands(t *testing.T) {
	a := perfServeRefAdapter("/shared/trtmc-perf-serve")
	spec := described(a, psrEnv, family.Row{Name: "r", Smoke: true})
	assert.Equal(t, "trtmc-perf-serve-reference", spec.Backend)
	require.NoError(t, spec.Validate())

	tools := must(a.Tools(psrEnv))
	cmds, builder := tools.Commands, tools.Builder
	require.Len(t, cmds, 2)
	assert.Equal(t, []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/perfserve_stage.py",
		"--source", "/shared/trtmc-perf-serve", "--shim", "/repo/families/qwen_image/trtmcdouble/checkout/perf-serve-shim", "--out", "/work/row/perf-serve"}, cmds[1].Args)
	assert.Equal(t, "/repo/families/qwen_image/reference/pipeline.py", builder)

	out := "/cache/partial/qwen-image-edit-2511-perf-serve-reference-smoke.bundle"
	assert.Equal(t, []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/pipeline.py", "bundle", "--smoke",
		"--precision", "fp32", "-o", out, "--save-pipeline"}, must(a.build(psrEnv, family.BuildSpec{Out: out})).Args)

	cc := must(a.Correctness(psrEnv, family.CorrectnessSpec{Bundle: "/b", JUnit: "/ev/j.xml", Artifacts: "/ev/art", Scratch: "/work/row/correctness"}))
	assert.Equal(t, []string{"--parity=/repo/families/qwen_image/reference/parity-128.json", "--latents-file=/work/row/correctness/initial-latents.f32"},
		cc.Command.Args[len(cc.Command.Args)-2:], "the parity case of the row's workload, keeping the noise it drew")
	assert.Equal(t, []string{ParityCaseID}, cc.Cases)

	serve := family.ServeSpec{Bundle: "/b", Model: "m", Host: "127.0.0.1", Port: 8123, Records: "/ev/serve/records.jsonl", Scratch: "/ev/serve/scratch"}
	assert.Equal(t, family.Command{
		Args: []string{"/opt/torch/bin/python", "-m", "trtmc_perf_serving", "serve", "--backend", "reference", "--profile", Profile,
			"--manifest-root", "families", "--reference-model", "/b", "--precision", "fp32", "--deterministic", "--model-name", "m",
			"--host", "127.0.0.1", "--port", "8123", "--records", "/ev/serve/records.jsonl", "--scratch", "/ev/serve/scratch",
			"--keep-artifacts", "--request-timeout", "1800"},
		Env: []string{"PYTHONPATH=apps/perf_serving:apps/benchmark", "CUBLAS_WORKSPACE_CONFIG=:4096:8", "HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1"},
		Dir: "/work/row/perf-serve",
	}, must(a.Serve(psrEnv, serve)))

	seed := int64(42)
	native := must(a.Native(psrEnv, family.NativeSpec{Bundle: "/b", Image: "/in.png", Prompt: "p", Settings: map[string]string{"seed": "42"}, LatentSeed: &seed, Output: "/ev/identity/00-warmup-native.png"}))
	assert.Equal(t, []string{"/opt/torch/bin/python", "/repo/families/qwen_image/reference/perfserve_native.py", "/b",
		"--checkout", "/work/row/perf-serve", "--profile", Profile, "--precision", "fp32", "--deterministic", "--scratch", "/work/row/native-scratch",
		"--item", `{"id":"00-warmup-native","image":"/in.png","latent_seed":42,"prompt":"p","settings":{"seed":"42"}}`, "--output", "/ev/identity/00-warmup-native.png"}, native.Args)
	assert.Equal(t, "/work/row/perf-serve", native.Dir)
	batch := must(a.nativeBatch(psrEnv, family.NativeBatchSpec{Bundle: "/b", Items: "/w/items.jsonl", Report: "/w/report.jsonl", WaitItems: 300e9}))
	assert.Equal(t, []string{"--batch", "/w/items.jsonl", "--report", "/w/report.jsonl", "--wait-items=300"}, batch.Args[len(batch.Args)-5:])

	assert.Equal(t, schema.TimingSource{Records: "timing.model_call_ms", RecordID: "request_id"}, spec.Timing)
	assert.Equal(t, wire.Task{LatentSeed: true}, spec.Wire)
	assert.True(t, spec.NativeBatch != nil && spec.BatchWaits)
	assert.Contains(t, spec.ModelsWhenReady, "cli.py @ 3878755c")
}

// The identity answer: perf-serve's /v1/serving/info (the reference backend's describe()
// merged with the server's info, app.py @ 3878755c § info) must name the reference
// backend on the row's bundle, in its precision, with deterministic numerics; any other
// answer fails the serve stage, naming what differs.
func TestPerfServeReferenceIdentity(t *testing.T) {
	a := perfServeRefAdapter("/c")
	bundle := t.TempDir()
	writeFile(t, filepath.Join(bundle, "bundle.json"), `{"model": "Qwen/Qwen-Image-Edit-2511"}`)
	good := map[string]any{"backend": "reference", "operation": "generate_image", "model": bundle, "precision": "fp32",
		"adapter": "Diffusion", "timing_scope": "task-call-wall", "numerics": map[string]any{"deterministic": true, "tf32": false},
		"platform": map[string]any{"packages": map[string]any{"torch": "2.11.0"}, "cuda": "13.0"}}
	id := identityOf(a)
	check := func(body []byte) error {
		_, err := id.Check(body, family.ServeSpec{Bundle: bundle})
		return err
	}
	body := func(change func(map[string]any)) []byte {
		m := map[string]any{}
		b, _ := json.Marshal(good)
		json.Unmarshal(b, &m)
		change(m)
		b, _ = json.Marshal(m)
		return b
	}
	assert.Equal(t, "/v1/serving/info", id.Path)
	require.NoError(t, check(body(func(map[string]any) {})))
	served, err := id.Check(body(func(map[string]any) {}), family.ServeSpec{Bundle: bundle})
	require.NoError(t, err)
	assert.Equal(t, HFID, served, "the checkpoint the bundle's bundle.json names: the harness holds it to the row's")
	for name, c := range map[string]struct {
		change func(map[string]any)
		want   string
	}{
		"trtmc backend":     {func(m map[string]any) { m["backend"] = "trtmc" }, `backend "trtmc", not reference`},
		"another model":     {func(m map[string]any) { m["model"] = "/other" }, `serves model "/other"`},
		"bf16":              {func(m map[string]any) { m["precision"] = "bf16" }, "runs bf16, the row's bundle is fp32"},
		"not deterministic": {func(m map[string]any) { m["numerics"] = map[string]any{"deterministic": false} }, "not deterministic"},
		"timing scope":      {func(m map[string]any) { m["timing_scope"] = "public_task_call_wall" }, "timing scope"},
		"another operation": {func(m map[string]any) { m["operation"] = "generate" }, `operation "generate"`},
		"the double":        {func(m map[string]any) { m["qualkit_contract_double"] = true }, "contract double"},
	} {
		err := check(body(c.change))
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), c.want, name)
		}
	}
	assert.Error(t, check([]byte("<html>")))
}

func TestPerfServeReferenceRequirements(t *testing.T) {
	row := harness.Checkpoint{Name: "r", Smoke: true}
	noCheckout := perfServeRefAdapter("")
	noCheckout.Pipeline.BaseImage = "img" // the interpreter's checks are the diffusers reference's own tests
	reqs := noCheckout.requirements(psrEnv, rowOf(row))
	require.Len(t, reqs, 1)
	assert.Contains(t, reqs[0].What, EnvPerfServe+" is not set")
	assert.True(t, reqs[0].Absent)
	assert.NotEmpty(t, reqs[0].Fix)

	empty := perfServeRefAdapter(t.TempDir())
	empty.Pipeline.BaseImage = "img"
	reqs = empty.requirements(psrEnv, rowOf(harness.Checkpoint{Name: "r"}))
	require.Len(t, reqs, len(perfServeFiles)+1, "every file missing, and not a smoke row")
	assert.Contains(t, whats(reqs)[0], "lacks apps/perf_serving/trtmc_perf_serving/app.py")
	assert.Contains(t, reqs[len(reqs)-1].What, `row "r" has Smoke=false`)

	// A TRTMC_PERF_SERVE folder holding the snapshot in snapshot/, as ../shared's does.
	dir := t.TempDir()
	for _, f := range perfServeFiles {
		writeFile(t, filepath.Join(dir, "snapshot", f), "x\n")
	}
	full := perfServeRefAdapter(dir)
	full.Pipeline.BaseImage = "img"
	assert.Empty(t, full.requirements(psrEnv, rowOf(row)))
	assert.Equal(t, filepath.Join(dir, "snapshot"), full.root())
	assert.Contains(t, full.found()[0], "snapshot (no __main__.py: qualkit's shim")
}

// The pair: the parity case's own (parity-128.json, the workload's first pair), held to
// the noise the case kept, which perf-serve's records must state it replayed.
func TestPerfServeReferenceQuality(t *testing.T) {
	q, err := qualityOf(perfServeRefAdapter("/c"), family.Env{Root: repoRoot}, rowOf(harness.Checkpoint{Smoke: true}))
	require.NoError(t, err)
	require.NotNil(t, q.Pair)
	assert.Equal(t, "cpu.png", q.Pair.Reference)
	assert.Equal(t, "initial-latents.f32", q.Pair.CaseLatents)
	assert.Equal(t, "observation.initial_latents_sha256", q.Pair.ServedLatents)
	assert.Equal(t, filepath.Join(repoRoot, "families/qwen_image/reference/parity-128.json"), q.Files[1])
	var p struct {
		Case struct{ Settings map[string]string } `json:"case"`
	}
	b, err := os.ReadFile(q.Files[1])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &p))
	var fx struct{ Settings map[string]any }
	b, err = os.ReadFile(filepath.Join(repoRoot, "fixtures/qwen_perf_serve_reference/manifest.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &fx))
	assert.Equal(t, fx.Settings["size"], p.Case.Settings["size"], "the parity case runs the workload's size")
}

// perfserve_native.py maps the item's canonical settings back to the request fields the
// wire protocol wrote: its table must be wire.Task's.
func TestPerfServeNativeFields(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, DiffusersReference, "perfserve_native.py"))
	require.NoError(t, err)
	block := regexp.MustCompile(`(?s)TASK_FIELDS = \{(.*?)\n\}`).FindSubmatch(b)
	require.NotNil(t, block, "perfserve_native.py has its TASK_FIELDS table")
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`"([a-z_]+)": "([a-z_]+)"`).FindAllSubmatch(block[1], -1) {
		got[string(m[1])] = string(m[2])
	}
	assert.Equal(t, wire.TaskFields(), got)
}

// perfserve_stage.py stages what perf-serve needs: from a snapshot (no __main__.py) with
// qualkit's shim beside TRTMC's package; from a checkout that has __main__.py, without it.
func TestPerfServeStage(t *testing.T) {
	py, err := exec.LookPath("python3")
	require.NoError(t, err)
	shaped := func(withMain bool) string {
		dir := t.TempDir()
		for _, f := range []string{"apps/perf_serving/trtmc_perf_serving/app.py", "apps/benchmark/trtmc_benchmark/catalog.py",
			"families/qwen_image/tests/manifests/" + Profile + ".json", "LICENSE"} {
			writeFile(t, filepath.Join(dir, f), f+"\n")
		}
		if withMain {
			writeFile(t, filepath.Join(dir, "apps/perf_serving/trtmc_perf_serving/__main__.py"), "# TRTMC's\n")
		}
		return dir
	}
	stage := func(src string) (map[string]any, error) {
		out := filepath.Join(t.TempDir(), "staged")
		b, err := exec.Command(py, filepath.Join(repoRoot, DiffusersReference, "perfserve_stage.py"), "--source", src,
			"--shim", filepath.Join(repoRoot, perfServeShim), "--out", out).Output()
		if err != nil {
			return nil, err
		}
		var res map[string]any
		require.NoError(t, json.Unmarshal(b, &res))
		return res, nil
	}
	snap, err := stage(shaped(false))
	require.NoError(t, err)
	assert.Equal(t, true, snap["qualkit_shim"])
	files := snap["files"].(map[string]any)
	assert.Contains(t, files, "apps/perf_serving/trtmc_perf_serving/__main__.py")
	assert.Contains(t, files, "apps/perf_serving/trtmc_perf_serving/qualkit_gaps.py")
	assert.Contains(t, files, "TRTMC-SNAPSHOT/LICENSE")
	assert.Contains(t, files, "families/qwen_image/tests/manifests/"+Profile+".json")

	co, err := stage(shaped(true))
	require.NoError(t, err)
	assert.Equal(t, false, co["qualkit_shim"])
	assert.NotContains(t, co["files"].(map[string]any), "apps/perf_serving/trtmc_perf_serving/qualkit_gaps.py")

	_, err = stage(t.TempDir())
	assert.Error(t, err, "a folder without perf-serve is refused")
}
