package qwenimage

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"qualkit/internal/harness"
)

// TRTMCRepo is where the checkout comes from; e9132e79 is the commit the adapter was
// written against (its manifests and thresholds are in shared/trtmc-main-e9132e79).
const TRTMCRepo = "https://github.com/NVIDIA/TensorRT-Model-Connect.git"

// Requirements lists every piece of the host this row needs beyond what the harness
// checks itself (GPU, container runtime, AIPerf): the TRTMC checkout and what it must
// hold, the pythons of the correctness case, the serving image, the checkpoint at its
// revision in the Hugging Face cache, and a workload the bundle can serve. Host pieces
// are Absent; a wrong setting or input is not (it must be fixed, never skipped).
func (a TRTMC) Requirements(env harness.Env, c harness.Checkpoint) []harness.Requirement {
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
	rs.pythons(a.Config)
	rs.image(a.Config)
	rs.checkpoint(a.Config)
	rs.workload(env, c)
	return rs
}

type reqs []harness.Requirement

func (rs *reqs) absent(what, fix string) {
	*rs = append(*rs, harness.Requirement{What: what, Fix: fix, Absent: true})
}

func (rs *reqs) bad(what, fix string) {
	*rs = append(*rs, harness.Requirement{What: what, Fix: fix})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

const cloneFix = "git clone " + TRTMCRepo + " trtmc && git -C trtmc checkout e9132e79 (or a later main), build it so that trtmc/build/trtmc exists (see its README), then export " +
	EnvCheckout + "=$PWD/trtmc"

const fullCheckoutFix = "point " + EnvCheckout + " at a full, built checkout of NVIDIA/TensorRT-Model-Connect (main e9132e79 or later), not a data-only copy"

func (rs *reqs) checkout(cfg Config) {
	dir := cfg.Checkout
	if dir == "" {
		rs.absent("TRTMC checkout: "+EnvCheckout+" is not set (it provides build/trtmc, the correctness case, and the family's manifest and thresholds)", cloneFix)
		return
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		rs.absent(fmt.Sprintf("TRTMC checkout %s=%s is not a directory", EnvCheckout, dir), cloneFix)
		return
	}
	if !isExecutable(filepath.Join(dir, binaryPath)) {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no executable %s (it builds the bundle, and the correctness case runs it)", dir, binaryPath),
			"build TRTMC in "+dir+" as its README says (CMake into build/, inside its dev container), so that "+filepath.Join(dir, binaryPath)+" exists")
	}
	for _, f := range []struct{ rel, role string }{
		{e2eTestPath, "the family's correctness case"},
		{modelTOMLPath, "the family's e2e definition"},
	} {
		if !isFile(filepath.Join(dir, f.rel)) {
			rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (%s)", dir, f.rel, f.role), fullCheckoutFix)
		}
	}
	rs.manifest(dir)
	if _, err := os.Stat(filepath.Join(dir, thresholdsPath)); err != nil {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the correctness case's quality gates)", dir, thresholdsPath), fullCheckoutFix)
	} else if _, err := ReadThresholds(dir); err != nil {
		rs.bad(err.Error(), "restore the file from git in the TRTMC checkout")
	}
}

func (rs *reqs) manifest(dir string) {
	if _, err := os.Stat(filepath.Join(dir, manifestPath)); err != nil {
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the profile's manifest)", dir, manifestPath), fullCheckoutFix)
		return
	}
	m, err := ReadManifest(dir)
	if err != nil {
		rs.bad(err.Error(), "restore the file from git in the TRTMC checkout")
		return
	}
	if bad := checkManifest(m); len(bad) > 0 {
		rs.bad(fmt.Sprintf("TRTMC manifest %s disagrees with the bundle qualkit builds: %s", filepath.Join(dir, manifestPath), strings.Join(bad, "; ")),
			"check out the TRTMC commit the adapter was written for (e9132e79), or update families/qwen_image to the new manifest")
		return
	}
	tc, _ := m.Testcase()
	img := filepath.Join(dir, familyDir, tc.TestImage)
	w, h, err := imageSize(img)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		rs.absent(fmt.Sprintf("TRTMC checkout %s has no %s (the test image the correctness case edits)", dir, filepath.Join(familyDir, tc.TestImage)), fullCheckoutFix)
	case err != nil:
		rs.bad("TRTMC test image: "+err.Error(), "restore the file from git in the TRTMC checkout")
	case w != ConditionWidth || h != ConditionHeight:
		rs.bad(fmt.Sprintf("TRTMC test image %s is %dx%d, but the bundle's condition grid is %dx%d: the unchanged correctness case would feed it an image of another size",
			img, w, h, ConditionWidth, ConditionHeight),
			"check out the TRTMC commit the adapter was written for (e9132e79), or change the adapter's condition size and the fixtures together")
	}
}

func (rs *reqs) pythons(cfg Config) {
	const fix = "create the checkout's venv (<checkout>/.venv) with TRTMC's test and reference dependencies (pytest<9, torch, transformers 5.2.0, diffusers, ftfy: the set its Dockerfile installs into /opt/venv), or set " +
		EnvPython + " (pytest) and " + EnvHFPython + " (torch, diffusers, ftfy) to absolute paths of interpreters that have them"
	role := "python for TRTMC's correctness case (pytest)"
	if cfg.HFPython == cfg.Python {
		role = "python for TRTMC's correctness case (pytest) and its HF diffusers reference (--hf-python)"
	}
	switch {
	case cfg.Python == "": // then HFPython is empty too (Config.withDefaults)
		rs.absent(fmt.Sprintf("%s: neither %s nor %s is set, and there is no TRTMC checkout to find .venv/bin/python in", role, EnvPython, EnvHFPython), fix)
	case !isExecutable(cfg.Python):
		rs.absent(fmt.Sprintf("%s not found at %s", role, cfg.Python), fix)
	}
	if cfg.HFPython != "" && cfg.HFPython != cfg.Python && !isExecutable(cfg.HFPython) {
		rs.absent(fmt.Sprintf("python for TRTMC's HF diffusers reference (--hf-python, %s) not found at %s", EnvHFPython, cfg.HFPython), fix)
	}
}

func (rs *reqs) image(cfg Config) {
	if cfg.Image != "" {
		return
	}
	const fix = "set " + EnvImage + " to a local image with TRTMC installed with its [serve] extra (trtmc-server on PATH: the server runs there), or set " +
		EnvDockerfile + " to a Dockerfile that builds one (the checkout is its build context)"
	df := cfg.DockerfilePath()
	if cfg.Checkout == "" && !filepath.IsAbs(cfg.Dockerfile) {
		rs.absent("serving image: "+EnvImage+" is not set and, without a TRTMC checkout, there is no Dockerfile to build it from", fix)
		return
	}
	if !isFile(df) {
		rs.absent(fmt.Sprintf("serving image: %s is not set and there is no Dockerfile at %s to build it from", EnvImage, df), fix)
		return
	}
	if r, err := filepath.Rel(cfg.Checkout, df); cfg.Checkout == "" || err != nil || r == ".." || strings.HasPrefix(r, "../") {
		rs.bad(fmt.Sprintf("serving image: the Dockerfile %s is outside the build context, the TRTMC checkout %s", df, cfg.Checkout),
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
	if b, err := os.ReadFile(refMain); err != nil || strings.TrimSpace(string(b)) != Revision {
		got := "absent"
		if err == nil {
			got = fmt.Sprintf("%q", strings.TrimSpace(string(b)))
		}
		rs.absent(fmt.Sprintf("checkpoint: %s is %s, not the pinned revision %s; TRTMC's HF reference loads the cached snapshot that refs/main names (snapshot_download with local_files_only and no revision), so it would compare against another revision or fail offline",
			refMain, got, Revision), refMainFix(refMain)+" (or give qualkit a cache of its own with "+EnvHFCache+", so your main stays as it is)")
	}
}

func refMainFix(refMain string) string {
	return fmt.Sprintf("printf %%s %s > %s", Revision, refMain)
}

// missingWeights lists the files a snapshot's model_index.json implies and the snapshot
// lacks: component folders, and the weight files their safetensors indexes name. A
// snapshot's files are links into blobs/, so a link whose blob never arrived counts too.
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
			seen := map[string]bool{}
			for _, f := range doc.WeightMap {
				if !seen[f] {
					seen[f] = true
					if !isFile(filepath.Join(dir, f)) {
						missing = append(missing, name+"/"+f)
					}
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

func (rs *reqs) workload(env harness.Env, c harness.Checkpoint) {
	fx, err := harness.LoadFixtures(filepath.Join(env.Root, c.Fixtures))
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
	for _, err := range CheckConditionSize(c.Fixtures, fx) {
		var cse *ConditionSizeError
		if errors.As(err, &cse) {
			rs.bad(err.Error(), cse.Fix())
		} else {
			rs.bad(err.Error(), fix)
		}
	}
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

func rel(base, path string) string {
	r, err := filepath.Rel(base, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

func clipList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(", and %d more", len(items)-n)
}
