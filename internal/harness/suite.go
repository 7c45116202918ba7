package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

const (
	RuntimeAuto      = "auto"      // container when a Docker daemon answers, else process; printed and recorded
	RuntimeProcess   = "process"   // a local process group
	RuntimeContainer = "container" // a container through the Docker engine
)

type SuiteConfig struct {
	Root, EvidenceRoot, RunID, Python string // Root: the repository's
	AIPerf                            AIPerf
	// Qualification is false only when told: then rows whose host lacks what they need are skipped.
	Qualification bool
	Runtime       string
	Rebuild       bool
	GPURead       string    // the NVML reader (internal/gpu/cmd/gpuread); BuildGPURead makes one
	Progress      io.Writer // stage progress lines beside the subtests' logs (the terminal); nil: none
	Heartbeat     time.Duration
	// CPURows is how many rows without a GPU run at once (0 is 1); rows with GPUs run
	// side by side as the host's GPUs allow, each leasing its GPUs for its whole life.
	CPURows int
	Venv    Venv // the project venv, whose installed set goes into the provenance; zero: none
	// CorrectnessOnly runs preflight, build and the correctness case alone: the seed's
	// rule for a row that met a hardware limit in a public run. Never qualified.
	CorrectnessOnly bool
	// Serial runs one thing at a time (-qualkit.serial), to measure what overlapping gains.
	Serial bool
	// Reaper removes what the run made outside Docker (process groups, the reserve) when
	// the process ends without doing so (killed, go test's -timeout); nil: nothing.
	Reaper Reaper
	// Reporter derives and checks the reviewer's files (pictures, PR.md, index.html);
	// nil derives nothing, and such a run folder fails the evidence checker.
	Reporter Reporter
}

// Reaper is package reaper's, as a run asks it.
type Reaper interface {
	serving.GroupTracker
	Remove(path string)
}

// Reporter derives reports from the evidence and checks it. It lives outside the harness
// (internal/report), so that the harness never imports the checker that audits it.
type Reporter interface {
	Row(rowDir string) error   // a row's derived files, before its SHA256SUMS
	Run(runDir string) error   // the run's derived files, before its SHA256SUMS
	Check(runDir string) error // the finished run folder, as a reviewer would
	// Vouch checks another process's finished run before a bundle it built is reused:
	// whole, with its anchors outside the folder and, with a key, its signature.
	Vouch(runDir string) error
}

// Suite is one qualification run.
type Suite struct {
	cfg        SuiteConfig
	Evidence   *Evidence
	started    time.Time
	hostStart  hostReading
	provenance schema.Provenance // the tree at the start of the run
	venvSet    []string

	daemon      *schema.DaemonInfo
	dockerErr   error
	RuntimeNote string
	swept       []string

	ctx         context.Context // every row's parent: Interrupt cancels it
	cancel      context.CancelCauseFunc
	interrupted string // "SIGINT at +41.2 s"

	mu      sync.Mutex
	results []*schema.Result
	rowRuns map[string]int // runs of each row (-count=N): newRow names the folders
	skips   []string

	vouchMu sync.Mutex
	vouched map[string]error // each run folder checked as a reused bundle's voucher

	pool     *gpu.Pool // the GPUs (read once, by the first row that needs one) and CPU row slots
	poolGPUs sync.Once

	keys  keyLocks // what rows side by side do one at a time: a family's tools, preparing an image
	built sync.Map // bundle cache keys this run built
}

func NewSuite(cfg SuiteConfig) (*Suite, error) {
	switch cfg.Runtime {
	case RuntimeAuto, RuntimeProcess, RuntimeContainer:
	default:
		return nil, fmt.Errorf("runtime %q: choose %s, %s or %s", cfg.Runtime, RuntimeAuto, RuntimeProcess, RuntimeContainer)
	}
	ev, err := NewEvidence(cfg.EvidenceRoot, cfg.RunID)
	if err != nil {
		return nil, err
	}
	if cfg.Reaper != nil && ev.reserve != nil {
		cfg.Reaper.Remove(ev.reserve.path)
	}
	s := &Suite{cfg: cfg, Evidence: ev, started: time.Now(), hostStart: readHost(), pool: gpu.NewPool(nil, cfg.CPURows),
		rowRuns: map[string]int{}, vouched: map[string]error{}}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.provenance, s.venvSet = venvProvenance(cfg.Venv, readProvenance(context.Background(), cfg.Root))
	s.resolveRuntime(context.Background())
	return s, nil
}

// resolveRuntime finds the Docker daemon unless asked for processes, and sweeps dead runs.
func (s *Suite) resolveRuntime(ctx context.Context) {
	if s.cfg.Runtime == RuntimeProcess {
		s.RuntimeNote = "runtime: process (RUNTIME=process)"
		return
	}
	d, err := serving.Docker(ctx)
	if err != nil {
		s.dockerErr = err
		if s.cfg.Runtime == RuntimeContainer {
			s.RuntimeNote = "runtime: container (RUNTIME=container), but no Docker daemon: rows will fail preflight"
		} else {
			s.RuntimeNote = "runtime: auto -> process for CPU rows (no Docker daemon reachable); rows that need a container fail preflight"
		}
		return
	}
	s.daemon = &d
	s.swept, _ = serving.SweepLeftovers(ctx, s.Evidence.RunID)
	s.RuntimeNote = fmt.Sprintf("runtime: %s -> container (Docker %s at %s)", s.cfg.Runtime, d.ServerVersion, d.Endpoint)
}

// rowRuntime is the runtime one row gets. Rows that need a container, and GPU rows under
// auto, get one or fail: never a silent fall back to a process.
func (s *Suite) rowRuntime(c Checkpoint) string {
	switch {
	case c.Needs.Container || s.cfg.Runtime == RuntimeContainer:
		return RuntimeContainer
	case s.cfg.Runtime == RuntimeProcess:
		return RuntimeProcess
	case c.Needs.GPU != (gpu.Needs{}) || s.daemon != nil:
		return RuntimeContainer
	}
	return RuntimeProcess
}

func (s *Suite) Provenance() schema.Provenance { return s.provenance }

// Interrupt cancels every row's context with the cause Interrupted{sig}; the first call counts.
func (s *Suite) Interrupt(sig string) {
	s.mu.Lock()
	if s.interrupted == "" {
		s.interrupted = fmt.Sprintf("%s at +%.1f s", sig, time.Since(s.started).Seconds())
	}
	s.mu.Unlock()
	s.cancel(Interrupted{Signal: sig})
}

// Interrupted is what run.json will say stopped the run ("SIGINT at +41.2 s"), or "".
func (s *Suite) Interrupted() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.interrupted
}

// Abandon removes every container and image this run started: the last resort when a
// second signal forces the process out before the rows cleaned up.
func (s *Suite) Abandon(ctx context.Context) error {
	s.Evidence.Close()
	if s.daemon == nil {
		return nil
	}
	return serving.RemoveRunContainers(ctx, s.Evidence.RunID)
}

// Finish writes the run's own files and SHA256SUMS once every row reported, has the
// Reporter check the folder, and returns the summary and the sha256 of SHA256SUMS.
func (s *Suite) Finish(ctx context.Context) (summary, sumsSHA string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.Evidence.Close()
	if len(s.results) == 0 {
		// No row was selected (go test -run matched none): leave no empty run folder.
		return "", "", os.RemoveAll(s.Evidence.Dir)
	}
	info := schema.RunInfo{
		RunID: s.Evidence.RunID, Started: s.started.UTC(), Finished: time.Now().UTC(),
		Qualification: s.cfg.Qualification, Runtime: s.cfg.Runtime,
		GoVersion: goruntime.Version(), OS: goruntime.GOOS, Arch: goruntime.GOARCH, CPUs: goruntime.NumCPU(),
		Skips:       append([]string{}, s.skips...),
		RuntimeNote: s.RuntimeNote, Docker: s.daemon, Swept: s.swept,
		HarnessCommit: s.provenance.Commit, HarnessDirty: s.provenance.Dirty, Changes: s.provenance.Changes,
		VenvSHA256: s.provenance.VenvSHA256, VenvSet: s.venvSet, Interrupted: s.interrupted,
		CorrectnessOnly: s.cfg.CorrectnessOnly,
	}
	if s.dockerErr != nil {
		info.DockerError = s.dockerErr.Error()
	}
	// Evidence first, cleanup second: an image the engine refuses to remove now (a build
	// cut mid-way leaves "dependent child images") is recorded and left to the sweeps.
	if s.daemon != nil {
		if err := serving.RemoveRunImages(ctx, s.Evidence.RunID); err != nil {
			info.CleanupLeft = append(info.CleanupLeft, err.Error())
			fmt.Fprintf(os.Stderr, "qual: %v: left to the next run's sweep\n", err)
		}
	}
	info.Hostname, _ = os.Hostname()
	info.Load = hostLoad(s.hostStart, readHost())
	info.AIPerfVersion, _ = s.cfg.AIPerf.CheckVersion(ctx)

	sort.Slice(s.results, func(i, j int) bool { return s.results[i].Row < s.results[j].Row })
	for _, r := range s.results {
		if r.Status == schema.StatusQualified && len(s.skips) > 0 {
			return "", "", fmt.Errorf("row %s reported qualified in a run with %d skip(s)", r.Row, len(s.skips))
		}
		info.Rows = append(info.Rows, r.Row)
	}
	summary = RunSummary(info, s.results)
	write := func() error {
		if err := recordHost(s.Evidence.Dir, &info); err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(s.Evidence.Dir, schema.RunFile), info); err != nil {
			return err
		}
		if err := writeWhole(filepath.Join(s.Evidence.Dir, schema.SummaryFile), []byte(summary)); err != nil {
			return err
		}
		if rep := s.cfg.Reporter; rep != nil {
			if err := rep.Run(s.Evidence.Dir); err != nil {
				return fmt.Errorf("derived reports of the run: %w", err)
			}
		}
		sumsSHA, err = WriteChecksums(s.Evidence.Dir)
		return err
	}
	if err := s.Evidence.writeEvidence(write); err != nil {
		return "", "", err
	}
	if rep := s.cfg.Reporter; rep != nil {
		if err := rep.Check(s.Evidence.Dir); err != nil {
			return summary, sumsSHA, fmt.Errorf("evidence check: %w", err)
		}
	}
	return summary, sumsSHA, nil
}

// RunSummary is the run's SUMMARY.md: the rows' table, each row's command, and the skips.
func RunSummary(info schema.RunInfo, results []*schema.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# qualkit run %s\n\n%s", info.RunID, schema.RowMarkdownHeader())
	for _, r := range results {
		b.WriteString(MarkdownRow(r))
	}
	b.WriteString("\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- `%s`: `%s`\n", r.Row, r.Command)
	}
	if len(info.Skips) > 0 {
		b.WriteString("\nNot a qualification run: skipped rows:\n")
		for _, sk := range info.Skips {
			b.WriteString("- " + sk + "\n")
		}
	}
	return b.String()
}

// BuildGPURead builds the gpuread program into <root>/.cache/bin and returns its path:
// qualkit's only cgo code, built apart so that the test binaries compile without cgo.
func BuildGPURead(ctx context.Context, root string) (string, error) {
	out := filepath.Join(root, ".cache", "bin", "gpuread")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./internal/gpu/cmd/gpuread")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the NVML reader (go build ./internal/gpu/cmd/gpuread): %v: %s; "+
			"build it where Go and a C compiler exist and name it with -qualkit.gpuread or QUALKIT_GPUREAD", err, wire.Clip(bytes.TrimSpace(b), 600))
	}
	return out, nil
}

// DirtyNote says, before any row runs, why no row of this run can read qualified ("" for a clean tree).
func (s *Suite) DirtyNote() string {
	if !s.provenance.Dirty {
		return ""
	}
	return dirtyReason(s.provenance)
}

func dirtyReason(p schema.Provenance) string {
	const shown = 5
	var names []string
	for _, ch := range p.Changes[:min(shown, len(p.Changes))] {
		names = append(names, strings.TrimSpace(ch))
	}
	if len(p.Changes) > shown {
		names = append(names, fmt.Sprintf("and %d more", len(p.Changes)-shown))
	}
	return fmt.Sprintf("the harness tree has changes no commit holds (%s: %s): commit them, or move them out of the tree, and rerun to qualify",
		p.Commit, strings.Join(names, ", "))
}

// readProvenance is the commit at root and whether its tree holds anything a commit does
// not (modified, staged or untracked files); no git checkout, or a failing git, is dirty.
func readProvenance(ctx context.Context, root string) schema.Provenance {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return schema.Provenance{Commit: "unknown (not a git checkout: " + root + ")", Dirty: true}
	}
	p := schema.Provenance{Commit: strings.TrimSpace(string(out))}
	st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		p.Dirty, p.Changes = true, []string{"git status failed: " + err.Error()}
		return p
	}
	for _, line := range strings.Split(strings.TrimRight(string(st), "\n"), "\n") {
		if line == "" {
			continue
		}
		p.Dirty = true
		if len(p.Changes) < schema.MaxChanges {
			p.Changes = append(p.Changes, line)
		}
	}
	return p
}

// FindRoot is the nearest folder at or above dir that holds go.mod.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// recordHost copies /proc/cpuinfo and /proc/meminfo into the run folder dir, the raw
// source of what info states of them (the checker reads them again); none without /proc.
func recordHost(dir string, info *schema.RunInfo) error {
	for proc, file := range map[string]string{"/proc/cpuinfo": schema.HostCPUInfoFile, "/proc/meminfo": schema.HostMemInfoFile} {
		b, err := os.ReadFile(proc)
		if err != nil {
			continue
		}
		if err := writeWhole(filepath.Join(dir, file), b); err != nil {
			return err
		}
		if file == schema.HostCPUInfoFile {
			info.CPUModel = CPUModel(b)
		} else {
			info.MemTotalBytes = memInfo(b, "MemTotal")
		}
	}
	return nil
}

// CPUModel is the first "model name" of a /proc/cpuinfo ("" on most arm64 kernels).
func CPUModel(cpuinfo []byte) string {
	for line := range strings.Lines(string(cpuinfo)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memInfo is a field of /proc/meminfo (MemTotal, MemAvailable) in bytes; 0 for none.
func memInfo(meminfo []byte, field string) int64 {
	for line := range strings.Lines(string(meminfo)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

type hostReading struct {
	loadavg [3]float64
	stealS  float64 // cumulative since boot, every CPU
	ok      bool
}

// readHost reads /proc/loadavg and /proc/stat; ok is false where either is unreadable.
func readHost() (h hostReading) {
	la, err1 := os.ReadFile("/proc/loadavg")
	st, err2 := os.ReadFile("/proc/stat")
	var err3, err4 error
	h.loadavg, err3 = LoadAvg(la)
	h.stealS, err4 = StealSeconds(st)
	h.ok = err1 == nil && err2 == nil && err3 == nil && err4 == nil
	return h
}

// hostLoad is the load over a run from its first and last readings (nil unless both read).
func hostLoad(start, end hostReading) *schema.HostLoad {
	if !start.ok || !end.ok {
		return nil
	}
	return &schema.HostLoad{LoadAvgStart: start.loadavg, LoadAvgEnd: end.loadavg, StealS: round3(max(0, end.stealS-start.stealS))}
}

// LoadAvg is the three load averages of a /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
func LoadAvg(b []byte) ([3]float64, error) {
	var out [3]float64
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return out, fmt.Errorf("/proc/loadavg: want three load averages, got %q", b)
	}
	for i := range out {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return out, fmt.Errorf("/proc/loadavg: %w", err)
		}
		out[i] = v
	}
	return out, nil
}

// StealSeconds is the steal time of /proc/stat's aggregate cpu line (its eighth value),
// in seconds: CPU time a hypervisor gave to others while this host wanted it.
func StealSeconds(b []byte) (float64, error) {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return 0, nil // a kernel before 2.6.11 states no steal
		}
		v, err := strconv.ParseUint(f[8], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat steal: %w", err)
		}
		return float64(v) / 100, nil // USER_HZ: 100 on every Linux architecture Go runs on
	}
	return 0, fmt.Errorf("/proc/stat: no cpu line")
}
