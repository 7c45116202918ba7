package qwenimage

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

// The commands of every stage, for each layout and serving contract: argv, environment,
// working directory and the image's mounts, pinned in testdata/commands-<case>.golden.json:
// e9132e79 (no server: serving is refused), the families layout with perf-serve, and with
// the edit route on the native trtmc-server. A change to what the row runs shows up as a
// diff to review (go test ./families/qwen_image -update).
func TestCommandsPerLayout(t *testing.T) {
	for _, tc := range []struct {
		name, layout string
		serving      []string
	}{
		{LayoutE9132e79, LayoutE9132e79, []string{}},
		{LayoutFamilies + "-perf-serve", LayoutFamilies, []string{ServingPerfServe}},
		{LayoutFamilies + "-edit-route", LayoutFamilies, []string{ServingEditRoute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, root, hf := checkoutNoServer(t, tc.layout, tc.serving), t.TempDir(), fakeHFCache(t)
			env := gpuEnv(t, root)
			a := New(Config{Checkout: dir, HFHome: hf})
			n, err := a.native(env)
			require.NoError(t, err)
			bundle := filepath.Join(root, ".cache/bundles/KEY/qwen-image-edit-2511.bundle")
			t0 := must(a.Tools(env))
			tools, builder := t0.Commands, t0.Builder
			cc := must(a.Correctness(env, family.CorrectnessSpec{Bundle: bundle, JUnit: "/ev/correctness/junit.xml", Artifacts: "/ev/correctness/artifacts", Scratch: "/work/correctness"}))
			serve := family.ServeSpec{Bundle: bundle, Model: HFID, Host: "127.0.0.1", Port: 8123, Records: "/ev/serve/records.jsonl", Scratch: "/ev/serve/scratch", MaxRequestBytes: 1 << 20}
			var probes []family.Command
			for _, p := range a.probes(env) {
				probes = append(probes, p.Cmd)
			}
			spec := must(a.Describe(env, rowOf(row())))
			build := any("none: the family's correctness case builds the bundle")
			if spec.Build != nil {
				build = orRefusal(spec.Build(env, family.BuildSpec{Out: filepath.Join(root, ".cache/bundles/KEY/.partial-1/qwen-image-edit-2511.bundle")}))
			}
			doc := map[string]any{
				"tools": tools, "builder": builder, "build_settings": a.buildSettings(env), "build": build,
				"correctness": cc,
				"serve":       orRefusal(a.Serve(env, serve)),
				"identity":    identityOf(a).Path,
				"native": orRefusal(a.Native(env, family.NativeSpec{Bundle: bundle, Image: "/work/native-in/input-00", Prompt: "Make it snow",
					Settings: map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "},
					Output:   "/ev/identity/00-warmup-native.png"})),
				"image":  must(spec.Image(env)),
				"probes": probes,
			}
			b, err := json.MarshalIndent(doc, "", "  ")
			require.NoError(t, err)
			got := strings.NewReplacer(dir, "<checkout>", root, "<root>", hf, "<hf>", n.Key, "<native-key>", n.Source.Commit, "<commit>", env.Work, "<work>").Replace(string(b))
			got = regexp.MustCompile(`"[0-9a-f]{64}"`).ReplaceAllString(got, `"<sha256>"`)
			path := filepath.Join("testdata", "commands-"+tc.name+".golden.json")
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, []byte(got+"\n"), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(want), got+"\n", "the row's commands changed: review, then go test ./families/qwen_image -run TestCommandsPerLayout -update")
		})
	}
}

// perf-serve replays latents from the checkpoint at `profile.model.hf_revision or
// --revision` (cli.py @ 3878755c § serve); a manifest without hf_revision (@ d46edb11)
// and a cache `hf download --revision` filled (no refs/main) would fail every request at
// latent replay, so the row always names its revision.
func TestPerfServeArgsPinTheRevision(t *testing.T) {
	args := PerfServeArgs(family.ServeSpec{Bundle: "/b", Model: HFID, Host: "127.0.0.1", Port: 1}, "/rt")
	i := slices.Index(args, "--revision")
	require.GreaterOrEqual(t, i, 0, "no --revision in %v", args)
	assert.Equal(t, Revision, args[i+1])
	assert.Contains(t, serveFlags(args), "--revision", "the server probe's --help check holds it too")
}

func TestLayoutDetection(t *testing.T) {
	for _, layout := range []string{LayoutE9132e79, LayoutFamilies} {
		l, err := DetectLayout(checkout(t, layout))
		require.NoError(t, err)
		assert.Equal(t, layout, l.Name)
	}
	_, err := DetectLayout(t.TempDir())
	assert.ErrorContains(t, err, "has the manifest of neither known layout")
	both := checkout(t, LayoutE9132e79)
	writeFile(t, filepath.Join(both, layouts[1].Manifest), "{}")
	_, err = DetectLayout(both)
	assert.ErrorContains(t, err, "has the manifest of both layouts")
}

// The e9132e79 build's arguments come from the checkout's manifest and MODEL.toml, the
// way TRTMC's e2e orchestrator derives them: a changed manifest changes the build.
func TestBuildArgsFollowTheManifest(t *testing.T) {
	dir := checkout(t, LayoutE9132e79)
	l := layouts[0]
	m, err := ReadManifest(dir, l)
	require.NoError(t, err)
	args, env, err := buildArgs(dir, l, m, "/out/b.bundle", "/out/t.json")
	require.NoError(t, err)
	assert.Equal(t, []string{"-m", "tensorrt_model_connect.__main__", "build", HFID, "-o", "/out/b.bundle",
		"--max-cache-length", "256", "--model-revision", Revision,
		"--image-height", "1024", "--image-width", "1024", "--video-height", "480", "--video-width", "832", "--video-num-frames", "1",
		"--num-inference-steps", "20", "--precision", "bf16", "--build-timing-json", "/out/t.json"}, args)
	assert.Equal(t, []string{conditionEnv + "=" + filepath.Join(dir, "tests/e2e/models/qwen_image/data/test_img.jpeg")}, env)

	// Without video_num_frames the video inputs and the steps default do not apply.
	path := filepath.Join(dir, l.Manifest)
	b, _ := os.ReadFile(path)
	writeFile(t, path, strings.Replace(string(b), `"video_num_frames": 1,`, "", 1))
	m, err = ReadManifest(dir, l)
	require.NoError(t, err)
	args, _, err = buildArgs(dir, l, m, "/o", "/t")
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(args, " "), "--video")
	assert.Contains(t, strings.Join(args, " "), "--num-inference-steps 20", "the testcase's own value still applies")
}

// The native build is keyed by TRTMC commit, image and SM: any change is a new build.
func TestNativeKey(t *testing.T) {
	dir, root := checkout(t, LayoutFamilies), t.TempDir()
	a := New(Config{Checkout: dir})
	env := gpuEnv(t, root)
	base, err := a.native(env)
	require.NoError(t, err)
	keys := map[string]string{"base": base.Key}
	other := env
	other.ImageID = "sha256:2222"
	n, _ := a.native(other)
	keys["image"] = n.Key
	other = env
	other.GPUs = append(other.GPUs[:0:0], env.GPUs...)
	other.GPUs[0].ComputeCapability = "10.0"
	n, _ = a.native(other)
	keys["sm"] = n.Key
	assert.Equal(t, "100", n.SM)
	writeFile(t, filepath.Join(dir, "new.txt"), "x")
	n, _ = a.native(env)
	keys["dirty"] = n.Key
	assert.NotEmpty(t, n.Source.Dirty)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "next")
	n, _ = a.native(env)
	keys["commit"] = n.Key
	seen := map[string]string{}
	for what, k := range keys {
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s give the same native key", what, prev)
		}
		seen[k] = what
	}

	_, err = a.native(family.Env{Root: root, ImageID: "sha256:1"})
	assert.ErrorContains(t, err, "no GPU chosen for the row")
	hooked := New(Config{Checkout: dir, AssumeSM: "90"})
	n, err = hooked.native(family.Env{Root: root, ImageID: "sha256:1"})
	require.NoError(t, err)
	assert.Equal(t, "90", n.SM, "only the Go test hook builds without a GPU")
}

// orRefusal is cmd, or the builder's refusal where a layout cannot run the stage (the
// stage fails naming it).
func orRefusal(cmd family.Command, err error) any {
	if err != nil {
		return map[string]string{"refused": err.Error()}
	}
	return cmd
}

// Right after the native build: the plugin library must exist and the runtime must be
// built for the row's SM; then the build is stamped and not run again.
func TestCheckTools(t *testing.T) {
	for _, layout := range []string{LayoutE9132e79, LayoutFamilies} {
		t.Run(layout, func(t *testing.T) {
			dir, root := checkout(t, layout), t.TempDir()
			a := New(Config{Checkout: dir})
			env := gpuEnv(t, root)
			l, _ := DetectLayout(dir)
			t0 := must(a.Tools(env))
			cmds, stamp := t0.Commands, t0.Builder
			require.Len(t, cmds, 2, "configure and build")
			n, _ := a.native(env)
			assert.ErrorContains(t, a.checkTools(env), "the native build wrote no trtmc")
			writeFile(t, filepath.Join(n.dir, "trtmc"), "cli")
			assert.ErrorContains(t, a.checkTools(env), "the native build wrote no "+l.PluginLib)
			writeFile(t, filepath.Join(n.dir, l.PluginLib), "plugin")
			assert.ErrorContains(t, a.checkTools(env), "the native build wrote no trtmc_benchmark_worker", "perf-serve's worker")
			writeFile(t, filepath.Join(n.dir, "trtmc_benchmark_worker"), "worker")
			assert.ErrorContains(t, a.checkTools(env), "CMakeCache.txt")
			writeFile(t, filepath.Join(n.dir, "CMakeCache.txt"), "CMAKE_CUDA_ARCHITECTURES:STRING=100-real\n")
			assert.ErrorContains(t, a.checkTools(env), `built for CUDA architectures "100-real", the row's GPU is SM 90`)
			writeFile(t, filepath.Join(n.dir, "CMakeCache.txt"), "# x\nCMAKE_CUDA_ARCHITECTURES:STRING=90-real\n")
			require.NoError(t, a.checkTools(env))
			assert.FileExists(t, stamp)
			t1 := must(a.Tools(env))
			cmds, again := t1.Commands, t1.Builder
			assert.Empty(t, cmds, "a stamped build is not run again")
			assert.Equal(t, stamp, again)
		})
	}
}

func TestNativeFlagsPerLayout(t *testing.T) {
	settings := map[string]string{"size": "1024x768", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "}
	flags, err := NativeFlags(LayoutE9132e79, settings)
	require.NoError(t, err)
	assert.Equal(t, []string{"--negative-prompt", " ", "--cfg-scale", "4.0", "--guidance-scale", "4.0", "--num-inference-steps", "20", "--seed", "42", "--height", "768", "--width", "1024"}, flags)
	flags, err = NativeFlags(LayoutFamilies, settings)
	require.NoError(t, err)
	assert.Contains(t, strings.Join(flags, " "), "--num-steps 20", "apps/cli/cli.cpp spells it --num-steps")
	_, err = NativeFlags(LayoutFamilies, map[string]string{"size": "1024x1024", "strength": "0.5", "eta": "1"})
	assert.ErrorContains(t, err, "setting(s) eta, strength have no TRTMC CLI flag")
	_, err = NativeFlags(LayoutFamilies, map[string]string{"size": "big"})
	assert.ErrorContains(t, err, `size "big" is not WxH`)
	_, err = New(Config{Checkout: checkout(t, LayoutFamilies)}).Native(gpuEnv(t, t.TempDir()), family.NativeSpec{Settings: map[string]string{"strength": "1"}})
	assert.ErrorContains(t, err, "native task: setting(s) strength", "a refused input fails the stage, naming it")
}

func TestIdentityChecks(t *testing.T) {
	spec := family.ServeSpec{Bundle: "/cache/b/qwen-image-edit-2511.bundle", Model: HFID}
	perf := checkout(t, LayoutFamilies)
	type checkFn func([]byte) error
	checker := func(cfg Config, spec family.ServeSpec) (string, checkFn) {
		id := identityOf(New(cfg))
		return id.Path, func(body []byte) error {
			served, err := id.Check(body, spec)
			if err == nil && served != HFID {
				return fmt.Errorf("served %q, want %q", served, HFID)
			}
			return err
		}
	}
	path, info := checker(Config{Checkout: perf}, spec)
	assert.Equal(t, "/v1/serving/info", path, "perf-serve states its backend and bundle")
	good := `{"backend": "trtmc", "bundle": "/cache/b/qwen-image-edit-2511.bundle", "operation": "generate_image", "timing_scope": "public_task_call_wall", "profile": "qwen-image-edit-2511"}`
	assert.NoError(t, info([]byte(good)), "the checkpoint is the profile manifest's hf_id")
	for body, want := range map[string]string{
		`{"backend": "reference"}`:                                                                    `the server says backend "reference", not trtmc`,
		strings.Replace(good, "/cache/b/", "/other/", 1):                                              `the server serves bundle "/other/qwen-image-edit-2511.bundle"`,
		strings.Replace(good, `"generate_image"`, `"generate_text"`, 1):                               `operation "generate_text", not generate_image`,
		strings.Replace(good, `"profile": "qwen-image-edit-2511"`, `"profile": "qwen-image-2512"`, 1): `the server serves profile "qwen-image-2512", the row builds qwen-image-edit-2511`,
		strings.Replace(good, "public_task_call_wall", "public_pipeline_call_wall", 1):                "is not the Task call",
		strings.Replace(good, "{", `{"qualkit_contract_double": true, `, 1):                           "is qualkit's TRTMC contract double, not TRTMC",
		`<html>`: "not JSON",
	} {
		assert.ErrorContains(t, info([]byte(body)), want)
	}
	// perf-serve names the bundle by its resolved path (catalog.py @ 0dd9052f): a row
	// bundle reached through a link is the same bundle.
	dir := t.TempDir()
	real := filepath.Join(dir, "test_official_checkpoint_e2e_q0")
	require.NoError(t, os.MkdirAll(filepath.Join(real, Profile+".bundle"), 0o755))
	require.NoError(t, os.Symlink(real, filepath.Join(dir, "test_official_checkpoint_e2e_qcurrent")))
	_, linked := checker(Config{Checkout: perf}, family.ServeSpec{Bundle: filepath.Join(dir, "test_official_checkpoint_e2e_qcurrent", Profile+".bundle"), Model: HFID})
	assert.NoError(t, linked([]byte(strings.Replace(good, "/cache/b", real, 1))), "the resolved path of the row's bundle")
	assert.ErrorContains(t, linked([]byte(good)), "the server serves bundle")

	// The double's environment, as TRTMC's own perf-serve run with the double's worker
	// states it: its stand-in torch in the platform block.
	standIn := strings.Replace(good, "{", `{"platform": {"packages": {"torch": "0.0.0+qualkit.contract.double"}}, `, 1)
	assert.ErrorContains(t, info([]byte(standIn)), "its platform's torch is qualkit's stand-in")
	_, double := checker(Config{Checkout: perf, ContractDouble: true}, spec)
	assert.NoError(t, double([]byte(standIn)))
	assert.NoError(t, double([]byte(strings.Replace(good, "{", `{"qualkit_contract_double": true, `, 1))))
	assert.ErrorContains(t, double([]byte(good)), "does not say it is the double")

	path, models := checker(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute)}, spec)
	assert.Equal(t, "/v1/models", path, "trtmc-server has no /v1/serving/info")
	assert.NoError(t, models([]byte(`{"object": "list", "data": [{"id": "Qwen/Qwen-Image-Edit-2511", "owned_by": "tensorrt-model-connect"}]}`)))
	assert.ErrorContains(t, models([]byte(`{"data": [{"id": "Qwen/Qwen-Image-Edit-2511", "owned_by": "trtmc"}]}`)), `no model "Qwen/Qwen-Image-Edit-2511" owned by tensorrt-model-connect`)
}

// Each contract's server command line, as TRTMC's sources define it, and its protocol.
func TestServeCommandPerContract(t *testing.T) {
	env := gpuEnv(t, t.TempDir())
	spec := family.ServeSpec{Bundle: "/b", Model: HFID, Host: "127.0.0.1", Port: 1, Records: "/r", Scratch: "/s", MaxRequestBytes: 3 << 20}

	perf := New(Config{Checkout: checkout(t, LayoutFamilies)})
	cmd := must(perf.Serve(env, spec))
	assert.Equal(t, []string{"python3", "-m", "trtmc_perf_serving", "serve"}, cmd.Args[:4])
	args := strings.Join(cmd.Args, " ")
	assert.Contains(t, args, "--backend trtmc --profile qwen-image-edit-2511 --revision "+Revision+" --manifest-root families --bundle /b")
	assert.Contains(t, args, "--records /r --scratch /s --keep-artifacts")
	assert.Regexp(t, `--worker \S+/trtmc_benchmark_worker`, args)
	assert.Equal(t, wire.TRTMCTask, described(perf, env, rowOf(row())).Wire.Name())
	assert.Equal(t, schema.TimingSource{Records: DefaultTimingRecords, RecordID: DefaultTimingRecordID}, described(perf, env, rowOf(row())).Timing)

	edit := New(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute)})
	cmd = must(edit.Serve(env, spec))
	assert.Equal(t, "trtmc-server", filepath.Base(cmd.Args[0]), "the native binary, which passes --worker-binary itself")
	assert.NotEqual(t, "trtmc-server", cmd.Args[0], "never from PATH: the build folder's")
	args = strings.Join(cmd.Args, " ")
	assert.Contains(t, args, "--max-body-bytes 6291456", "twice the largest request")
	assert.NotContains(t, args, "--worker-binary")
	assert.NotContains(t, args, "--scratch", "trtmc-server has no --scratch")
	assert.Equal(t, wire.OpenAIImages, described(edit, env, rowOf(row())).Wire.Name())
	spec.MaxRequestBytes = 10
	assert.Contains(t, strings.Join(must(edit.Serve(env, spec)).Args, " "), "--max-body-bytes 4194304", "never below the floor")

	none := New(Config{Checkout: checkoutNoServer(t, LayoutE9132e79, nil)})
	_, err := none.Serve(env, spec)
	assert.ErrorContains(t, err, "supports neither serving contract")
}

// Preflight reads the contract from the checkout's source and names why; a checkout
// with both serves the edit route unless told otherwise.
func TestDetectServing(t *testing.T) {
	both := checkout(t, LayoutFamilies, ServingPerfServe, ServingEditRoute)
	s, err := DetectServing(both, "")
	require.NoError(t, err)
	assert.Equal(t, ServingEditRoute, s.Contract)
	assert.Contains(t, s.Why, "the route /v1/images/edits in apps/server/python/trtmc_server/app.py")
	s, err = DetectServing(both, ServingPerfServe)
	require.NoError(t, err)
	assert.Equal(t, ServingPerfServe, s.Contract)

	_, err = DetectServing(checkout(t, LayoutFamilies), ServingEditRoute)
	assert.ErrorContains(t, err, "QUALKIT_TRTMC_SERVING=edit-route, but checkout")

	dir := checkout(t, LayoutFamilies, ServingEditRoute)
	require.NoError(t, os.Remove(filepath.Join(dir, "apps/server/main.cpp")))
	_, err = DetectServing(dir, "")
	assert.ErrorContains(t, err, "apps/server/python/trtmc_server/app.py has the route but apps/server/main.cpp is missing")

	dir = checkout(t, LayoutFamilies, ServingEditRoute)
	writeFile(t, filepath.Join(dir, "apps/server/python/trtmc_server/app.py"), "@app.post(\"/v1/chat/completions\")\n")
	_, err = DetectServing(dir, "")
	assert.ErrorContains(t, err, "declares no /v1/images/edits route")
}

// In the families layout the case builds its own bundle first: its deadline grows by
// TRTMC's own build timeout (orchestrator.py @ e9132e79, build_timeout_s 3600).
func TestStageDeadlinesPerLayout(t *testing.T) {
	row := family.Deadlines{Build: 2 * time.Hour, Correctness: time.Hour}
	fam := New(Config{Checkout: checkout(t, LayoutFamilies)}).stageDeadlines(row)
	assert.Equal(t, 2*time.Hour, fam.Correctness)
	assert.Equal(t, 2*time.Hour, fam.Build)
	old := New(Config{Checkout: checkout(t, LayoutE9132e79)}).stageDeadlines(row)
	assert.Equal(t, time.Hour, old.Correctness, "at e9132e79 the harness builds the bundle, in the build stage")
	c := harness.Checkpoint{Deadline: row, Adapter: New(Config{Checkout: checkout(t, LayoutFamilies)})}
	assert.Equal(t, 2*time.Hour, c.Deadlines().Correctness, "the harness runs the row with the family's deadlines")

	// perf-serve gives its worker 900 s to load (backends/trtmc.py @ 7b798a32), which
	// nothing on its command line raises: the row waits no longer for its readiness.
	row.Ready = 30 * time.Minute
	assert.Equal(t, 16*time.Minute, New(Config{Checkout: checkout(t, LayoutFamilies)}).stageDeadlines(row).Ready)
	row.Ready = 2 * time.Minute
	assert.Equal(t, 2*time.Minute, New(Config{Checkout: checkout(t, LayoutFamilies)}).stageDeadlines(row).Ready, "a shorter deadline stays")
	edit := New(Config{Checkout: checkout(t, LayoutFamilies, ServingEditRoute)}).stageDeadlines(family.Deadlines{Ready: 30 * time.Minute})
	assert.Equal(t, 30*time.Minute, edit.Ready, "trtmc-server's --startup-timeout is the row's own (1800 s)")
}

// TestFamiliesCaseVerdictIsTheEvidencePlugins: a families checkout with TRTMC's e2e
// evidence plugin (tools/e2e_evidence.py @ e2c6fa14, imported by test_e2e.py @ f0a1b69f)
// has its case's verdict read where the plugin writes it, "passed" meaning passed, and
// is given the 40-hex commit the plugin requires; a checkout without it names none.
func TestFamiliesCaseVerdictIsTheEvidencePlugins(t *testing.T) {
	dir, root := checkout(t, LayoutFamilies), t.TempDir()
	env := gpuEnv(t, root)
	a := New(Config{Checkout: dir, HFHome: fakeHFCache(t)})
	spec := family.CorrectnessSpec{JUnit: "/ev/correctness/junit.xml", Artifacts: "/ev/correctness/artifacts", Scratch: "/work/correctness"}
	cc := must(a.Correctness(env, spec))
	assert.Equal(t, "/ev/correctness/artifacts/evidence/qwen_image/qwen-image-edit-2511/evidence.json", cc.Result)
	assert.Equal(t, "passed", cc.ResultPass)
	n, err := a.native(env)
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{40}$`, n.Source.Commit)
	assert.Contains(t, cc.Command.Env, "TRTMC_E2E_SOURCE_REVISION="+n.Source.Commit)

	require.NoError(t, os.Remove(filepath.Join(dir, evidencePlugin)))
	cc = must(a.Correctness(env, spec))
	assert.Empty(t, cc.Result, "an older checkout writes no evidence")
}
