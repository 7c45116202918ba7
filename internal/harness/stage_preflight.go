package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// Missing joins requirements into one message listing every missing piece and its fix.
func Missing(reqs []family.Requirement) error {
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

// Readiness is what preflight found: every unmet requirement, the fixtures and the GPUs.
type Readiness struct {
	Requirements []family.Requirement `json:"requirements"`
	Probes       []ProbeResult        `json:"probes,omitempty"`
	GPU          *gpu.Reading         `json:"gpu_reading,omitempty"`
	GPUError     string               `json:"gpu_error,omitempty"`
	Selected     []gpu.Device         `json:"gpus_selected,omitempty"`
	Found        []string             `json:"found,omitempty"` // Spec.Found
	fx           *fixtures.Workload
}

// Preflight lists what the row needs and the host lacks, starting nothing (make doctor).
func (s *Suite) Preflight(ctx context.Context, c Checkpoint, env family.Env) Readiness {
	spec, err := describe(c, env)
	rd := s.preflightHost(ctx, c, env, spec, err)
	if len(rd.Selected) > 0 {
		env.GPUs = rd.Selected
		if again, err := c.Adapter.Describe(env, c.Row()); err == nil {
			spec = again
		}
	}
	s.preflightChecks(ctx, c, env, spec, &rd)
	return rd
}

// preflightHost is what the build may need of preflight: the family's findings, the
// fixtures, the runtime and the GPUs. No program runs here but the NVML reader.
func (s *Suite) preflightHost(ctx context.Context, c Checkpoint, env family.Env, spec family.Spec, describeErr error) Readiness {
	rd := Readiness{Found: spec.Found}
	need := func(absent bool, what, fix string) {
		rd.Requirements = append(rd.Requirements, family.Requirement{What: what, Fix: fix, Absent: absent})
	}
	if describeErr != nil {
		need(false, describeErr.Error(), "fix the family adapter (its Describe and Spec: internal/family)")
	}
	for _, e := range os.Environ() {
		name, value, _ := strings.Cut(e, "=")
		if why := steers(name); why != "" && value != "" {
			need(false, name+" is set in this environment: "+why+", and the run's evidence would not show it (commands.jsonl records only what the harness sets)",
				"unset "+name+" for the run (`env -u "+name+" make test`)")
		}
	}
	fx, err := fixtures.Load(filepath.Join(s.cfg.Root, c.Fixtures))
	if err != nil {
		need(false, err.Error(), "restore the fixtures from git (`git checkout -- fixtures/`)")
	} else if _, ok := fx.Settings["size"]; !ok {
		need(false, "fixtures settings have no \"size\": the output size gate needs it", "add settings.size to "+c.Fixtures)
	}
	rd.fx = fx
	if _, err := os.Stat(s.cfg.Python); err != nil {
		need(true, "python for the correctness case not found at "+s.cfg.Python, "make setup")
	}
	if c.Needs.Container && s.cfg.Runtime == RuntimeProcess {
		need(false, "row "+c.Name+" can only be served from a container, and the run asked for RUNTIME=process",
			"run with RUNTIME=container (or auto) on a host with a Docker engine")
	}
	if s.rowRuntime(c) == RuntimeContainer {
		ok := spec.Image != nil
		var img family.ContainerImage
		if ok {
			var err error
			img, err = spec.Image(env)
			ok = err == nil && (img.Ref != "" || img.Context != "" || img.Dockerfile != "")
		}
		switch {
		case s.dockerErr != nil:
			need(true, "row "+c.Name+" is served from a container, and no Docker daemon answers: "+s.dockerErr.Error(),
				"install and start Docker (`apt-get install docker.io && dockerd &`), or RUNTIME=process for rows that allow it")
		case !ok:
			need(false, "family "+c.Family+" gives no container image, and row "+c.Name+" is to be served from a container",
				"give the family's Spec an Image, or run with RUNTIME=process")
		case c.Needs.GPU != (gpu.Needs{}) && !s.daemon.NvidiaRuntime:
			need(true, fmt.Sprintf("the Docker daemon at %s has no nvidia runtime (runtimes: %v): GPU containers cannot start", s.daemon.Endpoint, s.daemon.Runtimes),
				"install the NVIDIA Container Toolkit and run `nvidia-ctk runtime configure --runtime=docker`, then restart dockerd")
		}
		if ok && s.dockerErr == nil && img.Ref != "" && img.Dockerfile == "" && img.Context == "" && len(img.CopyRoots) == 0 {
			if err := serving.ImagePresent(ctx, img.Ref); err != nil {
				fix := img.RefFix
				if fix == "" {
					fix = "build the image (the family's README says how) or `docker load` it; qualkit never pulls"
				}
				need(true, fmt.Sprintf("image %s is not in the Docker engine at %s (qualkit never pulls): %v", img.Ref, s.daemon.Endpoint, err), fix)
			}
		}
	}
	reading, gpuErr := gpu.Read(ctx, s.cfg.GPURead)
	if gpuErr != nil {
		rd.GPUError = gpuErr.Error()
	} else {
		rd.GPU = &reading
	}
	if c.Needs.GPU != (gpu.Needs{}) {
		switch {
		case gpuErr != nil:
			need(true, fmt.Sprintf("the row needs %s; GPU discovery failed: %v", c.Needs.GPU, gpuErr),
				"run on a host with NVIDIA GPUs and the NVIDIA driver (libnvidia-ml.so.1)")
		default:
			sel, err := gpu.Select(reading, c.Needs.GPU)
			if err != nil {
				need(true, err.Error(), "free or add GPUs that match, or run on a larger host")
			}
			rd.Selected = sel
		}
	}
	return rd
}

// steeringEnv is each inherited variable that would change, unseen, what the Pythons a
// run starts execute or check (every command inherits the environment); a name ending in
// _ stands for all that begin with it; set empty, each is ignored. Those that change no
// code (PYTHONUNBUFFERED) pass; a venv ignores the user site (PYTHONUSERBASE), and a
// script the interactive ones.
var steeringEnv = []struct{ name, why string }{
	{"AIPERF_", "AIPerf reads it (the harness sets AIPerf's settings itself: aiperfBounds)"},
	{"PYTHONPATH", "its modules come before the venv's in every Python the run starts"},
	{"PYTHONHOME", "it moves every Python's standard library"},
	{"PYTHONOPTIMIZE", "it strips every assert from the correctness case and AIPerf"},
	{"PYTHONINSPECT", "every Python script would wait at a prompt when it ends"},
	{"LD_PRELOAD", "its libraries load into every program the run starts"},
	{"LD_AUDIT", "its libraries load into every program the run starts"},
}

// steers says why name is in steeringEnv, or "".
func steers(name string) string {
	for _, v := range steeringEnv {
		if name == v.name || strings.HasSuffix(v.name, "_") && strings.HasPrefix(name, v.name) {
			return v.why
		}
	}
	return ""
}

// preflightChecks are preflight's slow parts, which the build needs none of: AIPerf's
// version and the family's own checks, side by side.
func (s *Suite) preflightChecks(ctx context.Context, c Checkpoint, env family.Env, spec family.Spec, rd *Readiness) {
	var aiperfErr error
	var familyReqs []family.Requirement
	var wg sync.WaitGroup
	wg.Go(func() { _, aiperfErr = s.cfg.AIPerf.CheckVersion(ctx) })
	if spec.Requirements != nil {
		wg.Go(func() { familyReqs = spec.Requirements(env) })
	}
	wg.Wait()
	if aiperfErr != nil {
		rd.Requirements = append(rd.Requirements, family.Requirement{What: aiperfErr.Error(), Fix: "make setup", Absent: true})
	}
	rd.Requirements = append(rd.Requirements, familyReqs...)
}

// preflight checks the host has what the row needs, and begins the build beside its
// slow checks when the order allows (with its own progress then).
func (r *row) preflight(ctx context.Context) (*fixtures.Workload, *future[bundle], *progress, error) {
	began := time.Now()
	rd := r.s.preflightHost(ctx, r.c, r.env, r.spec, r.describe())
	if r.lease != nil && len(r.lease.Devices) > 0 {
		rd.Selected = r.lease.Devices
	}
	r.env.GPUs = rd.Selected
	if rd.GPU != nil {
		r.env.CUDADriverVersion = rd.GPU.CUDADriverVersion
	}
	if len(rd.Selected) > 0 {
		if err := r.describe(); err != nil {
			rd.Requirements = append(rd.Requirements, family.Requirement{What: err.Error(), Fix: "fix the family adapter (its Describe and Spec: internal/family)"})
		}
	}
	var build *future[bundle]
	var buildProg *progress
	if len(rd.Requirements) == 0 {
		early := r.buildEarly()
		if early {
			buildProg = r.newProgress(schema.StageBuild, nil, true)
			r.prog.printf("build: started now, beside preflight's slow checks")
		}
		build = start(ctx, early, func(ctx context.Context) (bundle, error) {
			p := buildProg
			if p == nil {
				p = r.prog // the build stage's: the build begins when it waits
			}
			return r.build(ctx, p, rd.fx)
		})
		r.stops.add(func() { build.stop(func(b bundle) { b.entry.unlock() }) })
	}
	r.s.preflightChecks(ctx, r.c, r.env, r.spec, &rd)
	if len(rd.Requirements) == 0 {
		rd.Probes = r.probe(ctx)
		for _, p := range rd.Probes {
			if p.Error != "" {
				rd.Requirements = append(rd.Requirements, family.Requirement{What: p.What + ": " + p.Error, Fix: p.Fix})
			}
		}
	}
	if err := r.ev.WriteJSON(schema.PreflightFile, map[string]any{"readiness": rd, "qualification_run": r.s.cfg.Qualification,
		"wall_s": time.Since(began).Seconds()}); err != nil {
		return nil, build, buildProg, err
	}
	for _, f := range rd.Found {
		r.prog.printf("preflight: %s", f)
	}
	r.prog.printf("preflight took %.1f s", time.Since(began).Seconds())
	if err := Missing(rd.Requirements); err != nil {
		build.stop(nil)
		if !r.s.cfg.Qualification && !slices.ContainsFunc(rd.Requirements, func(q family.Requirement) bool { return !q.Absent }) {
			r.st.skip = strings.Join(strings.Fields(err.Error()), " ")
			r.s.mu.Lock()
			r.s.skips = append(r.s.skips, r.c.Name+": "+r.st.skip)
			r.s.mu.Unlock()
			return nil, build, buildProg, nil
		}
		return nil, build, buildProg, err
	}
	fx := rd.fx
	for _, im := range fx.Images {
		b, err := os.ReadFile(fx.ImagePath(im.File))
		if err == nil {
			err = os.WriteFile(r.ev.Path(schema.Fixture(im.File)), b, 0o644)
		}
		if err != nil {
			return nil, build, buildProg, err
		}
	}
	r.planOverlap(rd)
	r.prog.printf("order: build early %v (%s); AIPerf early %v (%s); native preload %v (%s)", r.plan.buildEarly, r.plan.buildWhy,
		r.plan.aiperfEarly, r.plan.aiperfWhy, r.plan.preload, r.plan.preloadWhy)
	return fx, build, buildProg, r.ev.WriteJSON(schema.FixturesManifest, fx)
}

type ProbeResult struct {
	Name  string  `json:"name"`
	What  string  `json:"what"`
	Log   string  `json:"log"`
	WallS float64 `json:"wall_s"`
	Error string  `json:"error,omitempty"`
	Fix   string  `json:"fix,omitempty"`
}

// probe runs the family's probes where the row's programs run: in its image (prepared
// here, so a broken image fails preflight) or as processes.
func (r *row) probe(ctx context.Context) []ProbeResult {
	if r.spec.Probes == nil {
		return nil
	}
	if r.inImage(schema.StagePreflight) {
		if _, err := r.image(ctx, schema.StagePreflight); err != nil {
			return []ProbeResult{{Name: "image", What: "the family's image", Error: err.Error(),
				Fix: "fix the image build (its log is " + r.ev.Path(schema.ImageBuildLog) + ")"}}
		}
	}
	var out []ProbeResult
	for _, p := range r.spec.Probes(r.env) {
		res := ProbeResult{Name: p.Name, What: p.What, Log: schema.ProbeLog(p.Name), Fix: p.Fix}
		start := time.Now()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		_, runErr := r.job(pctx, r.prog, p.Cmd, res.Log, r.env.GPUs)
		cancel()
		res.WallS = time.Since(start).Seconds()
		output, _ := os.ReadFile(r.ev.Path(res.Log))
		if err := p.Check(output, runErr); err != nil {
			res.Error = err.Error()
		}
		out = append(out, res)
	}
	return out
}
