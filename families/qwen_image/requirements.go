package qwenimage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/trtmc"
)

// TRTMCRepo is where the checkout comes from.
const TRTMCRepo = "https://github.com/NVIDIA/TensorRT-Model-Connect.git"

// requirements lists, from disk in under a second, what the row needs beyond the
// harness's own checks: the checkout, the image or Dockerfile, the complete checkpoint,
// a servable workload. Host pieces are Absent; a wrong setting is not (never skipped).
func (a TRTMC) requirements(env family.Env, c family.Row) []family.Requirement {
	var rs reqs
	if a.configErr != nil {
		for _, err := range unjoin(a.configErr) {
			rs.bad(err.Error(), "fix the variable (families/qwen_image/README.md lists them all)")
		}
	}
	if c.Model != HFID || c.Profile != Profile || c.Revision != Revision {
		rs.bad(fmt.Sprintf("row %q names %s profile %s at revision %q; the qwen_image TRTMC adapter builds only %s profile %s at %s",
			c.Name, c.Model, c.Profile, c.Revision, HFID, Profile, Revision),
			"set the row's Model, Profile and Revision to the adapter's (qwenimage.HFID, Profile, Revision)")
	}
	rs.checkout(a.Config)
	rs.image(a.Config)
	rs.checkpoint(a.Config)
	rs.workload(env, c)
	rs.disk(a, env)
	return rs
}

type reqs []family.Requirement

func (rs *reqs) absent(what, fix string) {
	*rs = append(*rs, family.Requirement{What: what, Fix: fix, Absent: true})
}
func (rs *reqs) bad(what, fix string) { *rs = append(*rs, family.Requirement{What: what, Fix: fix}) }

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// cloneFix names a checkout that serves the row (perf-serve): main e9132e79 has no HTTP
// server, and trtmc-server serves text generation only (cli.py @ a9ed5f69; registry.py @
// a4ba28be § _validate_ready).
const cloneFix = "git clone " + TRTMCRepo + " trtmc and check out " + servingCheckout + ", then export " +
	EnvCheckout + "=$PWD/trtmc (the harness builds the dev image and the native runtime itself, as source-build.md does)"

const fullCheckoutFix = "point " + EnvCheckout + " at a full git checkout of NVIDIA/TensorRT-Model-Connect, not a data-only copy"

func (rs *reqs) checkout(cfg Config) {
	dir := cfg.Checkout
	if dir == "" {
		rs.absent("TRTMC checkout: "+EnvCheckout+" is not set (it provides the dev Dockerfile, the builder, the correctness case, and the family's manifest and thresholds)", cloneFix)
		return
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		rs.absent(fmt.Sprintf("TRTMC checkout %s=%s is not a directory", EnvCheckout, dir), cloneFix)
		return
	}
	l, err := DetectLayout(dir)
	if err != nil {
		rs.absent(err.Error(), fullCheckoutFix)
		return
	}
	if _, err := readSource(dir); err != nil {
		rs.bad(err.Error(), "use a git checkout: its commit keys the native build and the bundle, and goes into the evidence")
	}
	for _, f := range [][2]string{{l.TestFile, "the family's correctness case"}, {l.E2EModel, "the family's e2e definition (build arguments)"}} {
		if f[0] != "" && !isFile(filepath.Join(dir, f[0])) {
			rs.absent(fmt.Sprintf("TRTMC checkout %s (layout %s) has no %s (%s)", dir, l.Name, f[0], f[1]), fullCheckoutFix)
		}
	}

	rs.manifest(dir, l)
	rs.serving(cfg)
	if _, err := os.Stat(filepath.Join(dir, l.Thresholds)); err != nil {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the correctness case's quality gates)", dir, l.Thresholds), fullCheckoutFix)
	} else if _, err := ReadThresholds(dir, l); err != nil {
		rs.bad(err.Error(), "restore the file from git in the TRTMC checkout")
	}
}

// serving: a checkout with neither contract is a missing piece naming where it looked.
func (rs *reqs) serving(cfg Config) {
	s, err := DetectServing(cfg.Checkout, cfg.Serving)
	if err != nil {
		rs.absent("serving contract: "+err.Error(), servingFix)
		return
	}
	if s.Contract == ServingPerfServe && cfg.timingSet {
		rs.bad("the checkout serves through perf-serve, whose Task time is its records' timing.model_call_ms (app.py @ 3878755c), but a QUALKIT_TRTMC_TIMING_* variable is set",
			"unset the QUALKIT_TRTMC_TIMING_* variables: they configure the edit route only")
	}
}

func (rs *reqs) manifest(dir string, l Layout) {
	if _, err := os.Stat(filepath.Join(dir, l.Manifest)); err != nil {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the profile's manifest)", dir, l.Manifest), fullCheckoutFix)
		return
	}
	m, err := ReadManifest(dir, l)
	if err != nil {
		rs.bad(err.Error(), "restore the file from git in the TRTMC checkout")
		return
	}
	if bad := checkManifest(m, l, trtmc.ReadTasks(dir)); len(bad) > 0 {
		rs.bad(fmt.Sprintf("TRTMC manifest %s disagrees with what the row serves: %s", filepath.Join(dir, l.Manifest), strings.Join(bad, "; ")),
			"check out a TRTMC commit whose manifest matches, or update families/qwen_image to the new manifest")
		return
	}
	if l.Name == LayoutE9132e79 && isFile(filepath.Join(dir, l.E2EModel)) {
		if _, _, err := buildArgs(dir, l, m, "BUNDLE", "TIMING"); err != nil {
			rs.bad(err.Error(), "restore the file from git in the TRTMC checkout")
		}
	}
	img, err := m.conditionImage(dir, l)
	if err != nil {
		rs.bad("TRTMC manifest: "+err.Error(), "restore the file from git in the TRTMC checkout")
		return
	}
	if _, _, err := imageSize(img); errors.Is(err, fs.ErrNotExist) {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the test image the correctness case edits; its size fixes the bundle's condition grid)", dir, img), fullCheckoutFix)
	} else if err != nil {
		rs.bad("TRTMC test image: "+err.Error(), "restore the file from git in the TRTMC checkout")
	}
}

func (rs *reqs) image(cfg Config) {
	if cfg.Image != "" {
		return // the harness finds it (never pulls it) when it prepares the image
	}
	const fix = "run on x86_64 or aarch64 (TRTMC ships Dockerfile.dev.x86 and Dockerfile.dev.aarch64), set " + EnvDockerfile +
		" to a Dockerfile in the checkout, or build an image yourself and set " + EnvImage
	if cfg.Dockerfile == "" {
		rs.absent(fmt.Sprintf("image: %s is not set and TRTMC has no dev Dockerfile for this machine's architecture (%s)", EnvImage, runtime.GOARCH), fix)
		return
	}
	if cfg.Checkout == "" && !filepath.IsAbs(cfg.Dockerfile) {
		rs.absent("image: "+EnvImage+" is not set and, without a TRTMC checkout, there is no dev Dockerfile to build it from", fix)
		return
	}
	df := cfg.DockerfilePath()
	if !isFile(df) {
		rs.absent(fmt.Sprintf("image: %s is not set and there is no Dockerfile at %s to build it from", EnvImage, df), fix)
		return
	}
	if r, err := filepath.Rel(cfg.Checkout, df); cfg.Checkout == "" || err != nil || r == ".." || strings.HasPrefix(r, "../") {
		rs.bad(fmt.Sprintf("image: the Dockerfile %s is outside the build context, the TRTMC checkout %s", df, cfg.Checkout),
			"put the Dockerfile inside the checkout, or build the image yourself and set "+EnvImage)
	}
}

// SnapshotDir is where huggingface_hub keeps the checkpoint's files at the revision.
func SnapshotDir(hfHome string) string {
	return filepath.Join(repoCacheDir(hfHome), "snapshots", Revision)
}

func repoCacheDir(hfHome string) string {
	return filepath.Join(hfHome, "hub", "models--"+strings.ReplaceAll(HFID, "/", "--"))
}

func (rs *reqs) checkpoint(cfg Config) {
	if cfg.HFHome == "" {
		return // ParseConfig said so already
	}
	snap := SnapshotDir(cfg.HFHome)
	refMain := filepath.Join(repoCacheDir(cfg.HFHome), "refs", "main")
	download := fmt.Sprintf("HF_HOME=%s hf download %s --revision %s (about 57.7 GB; huggingface_hub's CLI), or set %s to a cache that holds it",
		cfg.HFHome, HFID, Revision, EnvHFCache)
	index, err := os.ReadFile(filepath.Join(snap, "model_index.json"))
	if err != nil {
		rs.absent(fmt.Sprintf("checkpoint %s at revision %s is not in the Hugging Face cache %s (no %s)", HFID, Revision, cfg.HFHome, filepath.Join(snap, "model_index.json")),
			download+"; then "+refMainFix(refMain))
		return
	}
	if missing, err := missingWeights(snap, index); err != nil {
		rs.bad(fmt.Sprintf("checkpoint %s: %v", snap, err), "remove the snapshot and download it again: "+download)
	} else if len(missing) > 0 {
		rs.absent(fmt.Sprintf("checkpoint %s at revision %s is incomplete in %s: %d file(s) missing (%s)", HFID, Revision, snap, len(missing), clipList(missing, 5)),
			"finish the download (it resumes): "+download)
	}
	if l, err := DetectLayout(cfg.Checkout); err == nil && l.Name == LayoutFamilies {
		return // the newer case is given the snapshot folder itself (TRTMC_QWEN_IMAGE_MODEL_DIR)
	}
	if b, err := os.ReadFile(refMain); err != nil || strings.TrimSpace(string(b)) != Revision {
		got := fmt.Sprintf("%q", strings.TrimSpace(string(b)))
		if err != nil {
			got = "absent"
		}
		rs.absent(fmt.Sprintf("checkpoint: %s is %s, not the pinned revision %s; TRTMC e9132e79's HF reference loads the cached snapshot that refs/main names (snapshot_download with local_files_only and no revision), so it would compare against another revision or fail offline",
			refMain, got, Revision), refMainFix(refMain)+" (or give qualkit a cache of its own with "+EnvHFCache+", so your main stays as it is)")
	}
}

func refMainFix(refMain string) string { return fmt.Sprintf("printf %%s %s > %s", Revision, refMain) }

// missingWeights lists the component folders and weight files (links into blobs/, so an
// unarrived blob counts) a snapshot's model_index.json implies and the snapshot lacks.
func missingWeights(snap string, index []byte) ([]string, error) {
	var comps map[string]json.RawMessage
	if err := json.Unmarshal(index, &comps); err != nil {
		return nil, fmt.Errorf("model_index.json: %w", err)
	}
	names := make([]string, 0, len(comps))
	for name, v := range comps {
		var pair []*string
		if strings.HasPrefix(name, "_") || json.Unmarshal(v, &pair) != nil || len(pair) != 2 || pair[0] == nil {
			continue // metadata (_class_name, ...) or a component the pipeline does not use
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var missing []string
	for _, name := range names {
		dir := filepath.Join(snap, name)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			missing = append(missing, name+"/")
			continue
		}
		indexes, _ := filepath.Glob(filepath.Join(dir, "*.safetensors.index.json"))
		for _, ix := range indexes {
			b, err := os.ReadFile(ix)
			if err != nil {
				missing = append(missing, rel(snap, ix))
				continue
			}
			var doc struct {
				WeightMap map[string]string `json:"weight_map"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				return nil, fmt.Errorf("%s: %w", rel(snap, ix), err)
			}
			for _, f := range doc.WeightMap { // repeats go in the Compact below
				if !isFile(filepath.Join(dir, f)) {
					missing = append(missing, name+"/"+f)
				}
			}
		}
		single, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
		for _, f := range single {
			if !isFile(f) {
				missing = append(missing, rel(snap, f))
			}
		}
	}
	sort.Strings(missing)
	return slices.Compact(missing), nil
}

// workload checks the settings the bundle serves. Images of any size are served: the
// runtime resizes each to the bundle's condition sizes (pipeline.cpp @ d46edb11 §
// preprocess_edit_input_image; model.py @ b40c8184 § build_components), and TRTMC's edit
// suites send other sizes to one bundle (apps/aiperf_qual/config/tasks.yaml @ 058cde12).
func (rs *reqs) workload(env family.Env, c family.Row) {
	fx, err := fixtures.Load(filepath.Join(env.Root, c.Fixtures))
	if err != nil {
		return // the harness's own preflight reports a broken manifest
	}
	fix := "change " + c.Fixtures + " to what the bundle serves (families/qwen_image/README.md)"
	for _, b := range checkSettings(c.Fixtures+" settings", fx.FormSettings()) {
		rs.bad(b, fix)
	}
	if len(fx.Influence.Settings) > 0 {
		for _, b := range checkSettings(c.Fixtures+" influence settings", fx.InfluenceSettings()) {
			rs.bad(b, fix)
		}
	}
}

func rel(base, path string) string {
	if r, err := filepath.Rel(base, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}

func clipList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", and %d more", len(items)-n)
}
