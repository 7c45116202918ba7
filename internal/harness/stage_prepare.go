package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"qualkit/internal/harness/gpu"
	"qualkit/internal/schema"
)

// Requirement is one thing a row needs of the host and does not have.
type Requirement struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
	// Absent marks a host requirement (hardware, installed software) rather than a
	// broken input: only those may be skipped, and only in a non-qualification run.
	Absent bool `json:"absent"`
}

// Missing joins requirements into one message listing every missing piece and its fix.
func Missing(reqs []Requirement) error {
	if len(reqs) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d requirement(s) not met:", len(reqs))
	for _, q := range reqs {
		fmt.Fprintf(&b, "\n  - %s\n    fix: %s", q.What, q.Fix)
	}
	return fmt.Errorf("%s", b.String())
}

// Readiness is what preflight found: every unmet requirement, the fixtures, and the
// GPUs (the NVML reading, and the devices chosen for the row by UUID).
type Readiness struct {
	Requirements []Requirement `json:"requirements"`
	GPU          *gpu.Reading  `json:"gpu_reading,omitempty"`
	GPUError     string        `json:"gpu_error,omitempty"`
	Selected     []gpu.Device  `json:"gpus_selected,omitempty"`
	fixtures     *Fixtures
}

// Preflight lists what the row needs and the host lacks, without starting anything.
// `make doctor` prints it for every row.
func (s *Suite) Preflight(ctx context.Context, c Checkpoint, env Env) Readiness {
	var rd Readiness
	need := func(absent bool, what, fix string) {
		rd.Requirements = append(rd.Requirements, Requirement{What: what, Fix: fix, Absent: absent})
	}
	fx, err := LoadFixtures(filepath.Join(s.cfg.Root, c.Fixtures))
	if err != nil {
		need(false, err.Error(), "restore the fixtures from git (`git checkout -- fixtures/`)")
	} else if _, ok := fx.Settings["size"]; !ok {
		need(false, "fixtures settings have no \"size\": the output size gate needs it", "add settings.size to "+c.Fixtures)
	}
	rd.fixtures = fx
	if _, err := s.cfg.AIPerf.CheckVersion(ctx); err != nil {
		need(true, err.Error(), "make setup")
	}
	if _, err := os.Stat(s.cfg.Python); err != nil {
		need(true, "python for the correctness case not found at "+s.cfg.Python, "make setup")
	}
	if err := c.Adapter.Timing().Validate(); err != nil {
		need(false, err.Error(), "fix the family adapter's Timing()")
	}
	if c.Needs.Container && s.cfg.Runtime == RuntimeProcess {
		need(false, "row "+c.Name+" can only be served from a container, and the run asked for RUNTIME=process",
			"run with RUNTIME=container (or auto) on a host with a Docker engine")
	}
	if s.rowRuntime(c) == RuntimeContainer {
		switch _, ok := c.Adapter.(Containerized); {
		case s.dockerErr != nil:
			need(true, "row "+c.Name+" is served from a container, and no Docker daemon answers: "+s.dockerErr.Error(),
				"install and start Docker (`apt-get install docker.io && dockerd &`), or RUNTIME=process for rows that allow it")
		case !ok:
			need(false, "family "+c.Family+" gives no container image, and row "+c.Name+" is to be served from a container",
				"give the family an Image() or run with RUNTIME=process")
		case c.Needs.GPU != (gpu.Needs{}) && !s.daemon.NvidiaRuntime:
			need(true, fmt.Sprintf("the Docker daemon at %s has no nvidia runtime (runtimes: %v): GPU containers cannot start", s.daemon.Endpoint, s.daemon.Runtimes),
				"install the NVIDIA Container Toolkit and run `nvidia-ctk runtime configure --runtime=docker`, then restart dockerd")
		}
	}
	reading, err := gpu.Read(ctx, s.cfg.GPURead)
	if err != nil {
		rd.GPUError = err.Error()
	} else {
		rd.GPU = &reading
	}
	if c.Needs.GPU != (gpu.Needs{}) {
		switch {
		case err != nil:
			need(true, fmt.Sprintf("the row needs %s; GPU discovery failed: %v", c.Needs.GPU, err),
				"run on a host with NVIDIA GPUs and the NVIDIA driver (libnvidia-ml.so.1)")
		default:
			sel, err := gpu.Select(reading, c.Needs.GPU)
			if err != nil {
				need(true, err.Error(), "free or add GPUs that match, or run on a larger host")
			}
			rd.Selected = sel
		}
	}
	if req, ok := c.Adapter.(Requirer); ok {
		rd.Requirements = append(rd.Requirements, req.Requirements(env, c)...)
	}
	return rd
}

func (r *row) preflight(ctx context.Context) error {
	rd := r.s.Preflight(ctx, r.c, r.env)
	r.ev.WriteJSON("preflight.json", map[string]any{"readiness": rd, "qualification_run": r.s.cfg.Qualification})
	if err := Missing(rd.Requirements); err != nil {
		if !r.s.cfg.Qualification && allAbsent(rd.Requirements) {
			r.skipReason = strings.Join(strings.Fields(err.Error()), " ")
			r.s.recordSkip(r.c.Name, r.skipReason)
			return nil
		}
		return err
	}
	fx := rd.fixtures
	r.fx, r.gpus = fx, rd.Selected
	for _, im := range fx.Images {
		if err := copyFile(r.ev.Path(filepath.Join("fixtures", im.File)), fx.ImagePath(im.File)); err != nil {
			return err
		}
	}
	r.result.Settings = fx.FormSettings()
	return r.ev.WriteJSON("fixtures/manifest.json", fx)
}

func allAbsent(reqs []Requirement) bool {
	for _, q := range reqs {
		if !q.Absent {
			return false
		}
	}
	return true
}

// build makes the family's programs, then the bundle, reusing a cached bundle only when
// its key (checkpoint, revision, profile, build settings, builder hash) matches.
func (r *row) build(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Build)
	defer cancel()
	tools, builder := r.c.Adapter.Tools(r.env)
	for _, cmd := range tools {
		if _, err := r.run(ctx, "build", cmd, "build/tools.log"); err != nil {
			return fmt.Errorf("family tools: %w", err)
		}
	}
	builderSHA, err := pathSHA256(builder)
	if err != nil {
		return fmt.Errorf("builder %s: %w", builder, err)
	}
	settings := r.c.Adapter.BuildSettings()
	key := cacheKey(map[string]any{
		"family": r.c.Family, "backend": r.c.Adapter.Backend(), "model": r.c.Model, "profile": r.c.Profile,
		"revision": r.c.Revision, "build_settings": settings, "builder_sha256": builderSHA,
	})
	info := &schema.BundleInfo{CacheKey: key, Builder: builderSHA, Settings: settings}
	r.result.Bundle = info
	dir := filepath.Join(r.s.cfg.Root, ".cache", "bundles", key)
	final := filepath.Join(dir, r.c.Profile+".bundle")
	meta := filepath.Join(dir, "bundle.json")

	if !r.s.cfg.Rebuild {
		if sha, ok := cachedBundle(meta, final); ok {
			info.Path, info.SHA256, info.Cached = final, sha, true
		}
	}
	if !info.Cached {
		os.RemoveAll(dir)
		partial := filepath.Join(dir, fmt.Sprintf(".partial-%d", os.Getpid()))
		if err := os.MkdirAll(partial, 0o755); err != nil {
			return err
		}
		defer os.RemoveAll(partial)
		out := filepath.Join(partial, r.c.Profile+".bundle")
		ref := r.fx.ImagePath(r.fx.Pairs[0].Image)
		start := time.Now()
		cmd := r.c.Adapter.Build(r.env, BuildSpec{Out: out, Reference: ref})
		cmd.Env = append(cmd.Env, r.gpuEnv()...)
		if _, err := r.run(ctx, "build", cmd, "build/build.log"); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
		info.BuildS = time.Since(start).Seconds()
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("build exited 0 but wrote no bundle at %s", out)
		}
		if err := os.Rename(out, final); err != nil {
			return err
		}
		if info.SHA256, err = pathSHA256(final); err != nil {
			return err
		}
		info.Path = final
		if err := writeJSON(meta, info); err != nil {
			return err
		}
	}
	info.Bytes = pathSize(final)
	r.bundle, r.bundleSHA = final, info.SHA256
	return r.ev.WriteJSON("build/bundle.json", info)
}

func cachedBundle(meta, bundle string) (string, bool) {
	b, err := os.ReadFile(meta)
	if err != nil {
		return "", false
	}
	var info schema.BundleInfo
	if json.Unmarshal(b, &info) != nil {
		return "", false
	}
	sha, err := pathSHA256(bundle)
	return sha, err == nil && sha == info.SHA256
}

func cacheKey(v any) string {
	b, _ := json.Marshal(v) // map keys are sorted, so the key is canonical
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:32]
}

// pathSHA256 hashes a file, or a directory as the sorted list of its files' hashes.
func pathSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return fileSHA256(path)
	}
	var lines []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sum, err := fileSHA256(p)
		rel, _ := filepath.Rel(path, p)
		lines = append(lines, filepath.ToSlash(rel)+"\x00"+sum)
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(lines)
	return bytesSHA256([]byte(strings.Join(lines, "\n"))), nil
}

func pathSize(path string) int64 {
	var n int64
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// caseFiles hashes a correctness case's test files and, for each, every conftest.py
// from its folder up to root (pytest's rootdir), as pytest would load them.
func caseFiles(tests []string, root string) ([]schema.FileHash, error) {
	var out []schema.FileHash
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		out = append(out, schema.FileHash{Path: p, SHA256: sum})
		return nil
	}
	for _, t := range tests {
		if !filepath.IsAbs(t) && root != "" {
			t = filepath.Join(root, t)
		}
		if err := add(t); err != nil {
			return nil, err
		}
		for dir := filepath.Dir(t); ; dir = filepath.Dir(dir) {
			if c := filepath.Join(dir, "conftest.py"); isRegular(c) {
				if err := add(c); err != nil {
					return nil, err
				}
			}
			if dir == root || root == "" || filepath.Dir(dir) == dir || !strings.HasPrefix(dir, root) {
				break
			}
		}
	}
	return out, nil
}

// treeHashes lists every regular file under dir with its sha256, paths relative to base.
func treeHashes(base, dir string) ([]schema.FileHash, error) {
	out := []schema.FileHash{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: the evidence keeps only files", p)
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, schema.FileHash{Path: filepath.ToSlash(rel), SHA256: sum})
		return nil
	})
	return out, err
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// correctness runs the family's own case, unchanged, on the exact bundle, and proves the
// bundle was not touched while it ran.
func (r *row) correctness(ctx context.Context) error {
	artifacts := filepath.Join(r.ev.Dir, "correctness", "artifacts")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return err
	}
	cc := r.c.Adapter.Correctness(r.env, CorrectnessSpec{Bundle: r.bundle, JUnit: r.ev.Path("correctness/junit.xml"), Artifacts: artifacts})
	corr := &schema.Correctness{Declared: cc.Cases}
	r.result.Correctness = corr
	if len(cc.Cases) == 0 {
		return GateCases(schema.CaseCounts{}, nil)
	}
	if cc.Result != "" {
		rel, err := filepath.Rel(r.ev.Dir, cc.Result)
		if err != nil || !strings.HasPrefix(filepath.ToSlash(rel), "correctness/artifacts/") {
			return fmt.Errorf("the family's correctness result file %s is not under the case's artifacts folder %s", cc.Result, artifacts)
		}
		corr.ResultFile = filepath.ToSlash(rel)
	}
	// The case's own code as it ran: its test files and the conftest.py files pytest
	// loads for them.
	var err error
	if corr.CaseFiles, err = caseFiles(cc.TestFiles, cc.Command.Dir); err != nil {
		return fmt.Errorf("correctness case files: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Correctness)
	defer cancel()
	cc.Command.Env = append(cc.Command.Env, r.gpuEnv()...)
	_, runErr := r.run(ctx, "correctness", cc.Command, "correctness/output.log")
	if corr.Artifacts, err = treeHashes(r.ev.Dir, artifacts); err != nil {
		return fmt.Errorf("correctness artifacts: %w", err)
	}
	after, err := pathSHA256(r.bundle)
	if err != nil {
		return fmt.Errorf("bundle after correctness: %w", err)
	}
	if after != r.bundleSHA {
		return fmt.Errorf("bundle changed while the correctness case ran: sha256 %s before, %s after", r.bundleSHA, after)
	}
	counts, err := ReadJUnit(cc.JUnit)
	if err != nil {
		if runErr != nil {
			return fmt.Errorf("%w (and the case wrote no readable JUnit: %v)", runErr, err)
		}
		return err
	}
	corr.CaseCounts = counts
	if err := GateCases(counts, cc.Cases); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("every case passed but the command failed: %w", runErr)
	}
	if cc.Result != "" {
		return CheckResultFile(cc.Result)
	}
	return nil
}
