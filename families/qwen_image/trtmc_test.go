package qwenimage

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/harness"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from this run")

// The commands of every stage, for each layout: argv, environment, working directory and
// the image's mounts, pinned in testdata/commands-<layout>.golden.json. A change to what
// the row runs shows up as a diff to review (go test ./families/qwen_image -update).
func TestCommandsPerLayout(t *testing.T) {
	for _, layout := range []string{LayoutE9132e79, LayoutFamilies} {
		t.Run(layout, func(t *testing.T) {
			dir, root, hf := checkout(t, layout), t.TempDir(), fakeHFCache(t)
			env := gpuEnv(t, root)
			a := New(Config{Checkout: dir, HFHome: hf})
			n, err := a.native(env)
			require.NoError(t, err)
			bundle := filepath.Join(root, ".cache/bundles/KEY/qwen-image-edit-2511.bundle")
			tools, builder := a.Tools(env)
			cc := a.Correctness(env, harness.CorrectnessSpec{Bundle: bundle, JUnit: "/ev/correctness/junit.xml", Artifacts: "/ev/correctness/artifacts", Scratch: "/work/correctness"})
			serve := harness.ServeSpec{Bundle: bundle, Model: HFID, Host: "127.0.0.1", Port: 8123, Records: "/ev/serve/records.jsonl", Scratch: "/ev/serve/scratch"}
			var probes []harness.Command
			for _, p := range a.Probes(env) {
				probes = append(probes, p.Cmd)
			}
			doc := map[string]any{
				"tools": tools, "builder": builder, "build_settings": a.BuildSettings(env),
				"build":       a.Build(env, harness.BuildSpec{Out: filepath.Join(root, ".cache/bundles/KEY/.partial-1/qwen-image-edit-2511.bundle")}),
				"correctness": cc,
				"serve":       a.Serve(env, serve),
				"identity":    a.Identity(serve).Path,
				"native": a.Native(env, harness.NativeSpec{Bundle: bundle, Image: "/work/native-in/input-00", Prompt: "Make it snow",
					Settings: map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "},
					Output:   "/ev/identity/00-warmup-native.png"}),
				"image":  a.Image(env),
				"probes": probes,
			}
			b, err := json.MarshalIndent(doc, "", "  ")
			require.NoError(t, err)
			got := strings.NewReplacer(dir, "<checkout>", root, "<root>", hf, "<hf>", n.Key, "<native-key>", n.Source.Commit, "<commit>", env.Work, "<work>").Replace(string(b))
			got = regexp.MustCompile(`"[0-9a-f]{64}"`).ReplaceAllString(got, `"<sha256>"`)
			path := filepath.Join("testdata", "commands-"+layout+".golden.json")
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

	_, err = a.native(harness.Env{Root: root, ImageID: "sha256:1"})
	assert.ErrorContains(t, err, "no GPU chosen for the row")
	hooked := New(Config{Checkout: dir, AssumeSM: "90"})
	n, err = hooked.native(harness.Env{Root: root, ImageID: "sha256:1"})
	require.NoError(t, err)
	assert.Equal(t, "90", n.SM, "only the Go test hook builds without a GPU")
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
			cmds, stamp := a.Tools(env)
			require.Len(t, cmds, 2, "configure and build")
			n, _ := a.native(env)
			assert.ErrorContains(t, a.CheckTools(env), "the native build wrote no trtmc")
			writeFile(t, filepath.Join(n.dir, "trtmc"), "cli")
			assert.ErrorContains(t, a.CheckTools(env), "the native build wrote no "+l.PluginLib)
			writeFile(t, filepath.Join(n.dir, l.PluginLib), "plugin")
			assert.ErrorContains(t, a.CheckTools(env), "CMakeCache.txt")
			writeFile(t, filepath.Join(n.dir, "CMakeCache.txt"), "CMAKE_CUDA_ARCHITECTURES:STRING=100-real\n")
			assert.ErrorContains(t, a.CheckTools(env), `built for CUDA architectures "100-real", the row's GPU is SM 90`)
			writeFile(t, filepath.Join(n.dir, "CMakeCache.txt"), "# x\nCMAKE_CUDA_ARCHITECTURES:STRING=90-real\n")
			require.NoError(t, a.CheckTools(env))
			assert.FileExists(t, stamp)
			cmds, again := a.Tools(env)
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
	cmd := New(Config{Checkout: checkout(t, LayoutFamilies)}).Native(gpuEnv(t, t.TempDir()), harness.NativeSpec{Settings: map[string]string{"strength": "1"}})
	assert.Contains(t, cmd.Args[0], "qualkit-refused: native task: setting(s) strength", "a refused input fails the command loudly")
}

func TestIdentityChecks(t *testing.T) {
	spec := harness.ServeSpec{Bundle: "/cache/b/qwen-image-edit-2511.bundle", Model: HFID}
	info := New(Config{}).Identity(spec)
	assert.Equal(t, "/v1/serving/info", info.Path)
	assert.NoError(t, info.Check([]byte(`{"backend": "trtmc", "bundle": "/cache/b/qwen-image-edit-2511.bundle", "operation": "generate_image"}`)))
	assert.ErrorContains(t, info.Check([]byte(`{"backend": "reference"}`)), `the server says backend "reference", not trtmc`)
	assert.ErrorContains(t, info.Check([]byte(`{"backend": "trtmc", "bundle": "/other.bundle"}`)), "the server serves bundle /other.bundle")
	assert.ErrorContains(t, info.Check([]byte(`{"backend": "trtmc", "qualkit_contract_double": true}`)), "is qualkit's TRTMC contract double, not TRTMC")
	assert.ErrorContains(t, info.Check([]byte(`<html>`)), "not JSON")
	double := New(Config{ContractDouble: true}).Identity(spec)
	assert.NoError(t, double.Check([]byte(`{"backend": "trtmc", "qualkit_contract_double": true}`)))
	assert.ErrorContains(t, double.Check([]byte(`{"backend": "trtmc"}`)), "does not say it is the double")

	models := New(Config{Identity: IdentityModels}).Identity(spec)
	assert.Equal(t, "/v1/models", models.Path)
	assert.NoError(t, models.Check([]byte(`{"object": "list", "data": [{"id": "Qwen/Qwen-Image-Edit-2511", "owned_by": "trtmc"}]}`)))
	assert.ErrorContains(t, models.Check([]byte(`{"data": [{"id": "other", "owned_by": "trtmc"}]}`)), `no model "Qwen/Qwen-Image-Edit-2511" owned by trtmc`)
}

func TestOutputAndServeShapes(t *testing.T) {
	dir := checkout(t, LayoutFamilies)
	env := gpuEnv(t, t.TempDir())
	spec := harness.ServeSpec{Bundle: "/b", Model: HFID, Host: "127.0.0.1", Port: 1, Records: "/r", Scratch: "/s"}
	b64 := New(Config{Checkout: dir})
	assert.Equal(t, harness.OutputSource{B64JSON: true}, b64.Output())
	assert.NotContains(t, b64.Serve(env, spec).Args, "--keep-artifacts")
	art := New(Config{Checkout: dir, Response: ResponseArtifact})
	assert.Equal(t, harness.OutputSource{URL: true}, art.Output())
	args := strings.Join(art.Serve(env, spec).Args, " ")
	assert.Contains(t, args, "--scratch /s --keep-artifacts")
	assert.Contains(t, art.serveFlags(), "--keep-artifacts", "the server's --help must show it")
}
