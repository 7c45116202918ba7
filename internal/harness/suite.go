package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness/gpu"
	"qualkit/internal/prsummary"
	"qualkit/internal/schema"
)

// Runtime choices for serving.
const (
	RuntimeAuto      = "auto"      // container when a Docker daemon answers, else process; printed and recorded
	RuntimeProcess   = "process"   // a local process group
	RuntimeContainer = "container" // a container through the Docker engine
)

// SuiteConfig is what TestMain parses from flags.
type SuiteConfig struct {
	Root          string // repository root
	EvidenceRoot  string
	RunID         string
	Python        string
	AIPerf        AIPerf
	Qualification bool // false only when told explicitly: then rows whose host requirements are absent may be skipped
	Runtime       string
	Rebuild       bool
	// GPURead is the gpuread program (internal/harness/gpu/cmd/gpuread) that reads the
	// host's GPUs through NVML; BuildGPURead makes one.
	GPURead string
	// Progress receives the progress lines of running stages beside the stage
	// subtests' logs (the terminal, when go test buffers its output); nil: only the logs.
	Progress io.Writer
	// Heartbeat is the longest a running stage stays silent; 0 is DefaultHeartbeat.
	Heartbeat time.Duration
}

// Suite is one qualification run: shared settings, the evidence folder and every row's result.
type Suite struct {
	cfg      SuiteConfig
	Evidence *Evidence
	started  time.Time

	// The serving runtime, resolved once: the daemon actually used (nil without one),
	// why it could not be reached, and a line saying what was chosen and why.
	daemon      *schema.DaemonInfo
	dockerErr   error
	RuntimeNote string
	swept       []string

	mu      sync.Mutex
	results []*schema.Result
	skips   []string
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
	s := &Suite{cfg: cfg, Evidence: ev, started: time.Now()}
	s.resolveRuntime(context.Background())
	return s, nil
}

// resolveRuntime finds the Docker daemon unless the run asked for processes, sweeps what
// dead runs left behind, and says which runtime rows will get. An explicit choice is
// never overridden; auto falls back to a process only for rows that allow one.
func (s *Suite) resolveRuntime(ctx context.Context) {
	if s.cfg.Runtime == RuntimeProcess {
		s.RuntimeNote = "runtime: process (RUNTIME=process)"
		return
	}
	d, err := Docker(ctx)
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
	s.swept, _ = SweepLeftovers(ctx, s.Evidence.RunID)
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

func (s *Suite) register(r *schema.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = append(s.results, r)
}

func (s *Suite) recordSkip(row, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skips = append(s.skips, row+": "+reason)
}

// Finish settles every row's final status (a run with any skip qualifies nothing),
// rewrites the row reports, writes run.json, SUMMARY.md and SHA256SUMS, and returns the
// summary table.
func (s *Suite) Finish(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.results) == 0 {
		// No row was selected (go test -run matched none): leave no empty run folder.
		return "", os.RemoveAll(s.Evidence.Dir)
	}
	info := schema.RunInfo{
		RunID: s.Evidence.RunID, Started: s.started.UTC(), Finished: time.Now().UTC(),
		Qualification: s.cfg.Qualification, Runtime: s.cfg.Runtime,
		GoVersion: goruntime.Version(), OS: goruntime.GOOS, Arch: goruntime.GOARCH, CPUs: goruntime.NumCPU(),
		Skips:       append([]string{}, s.skips...),
		RuntimeNote: s.RuntimeNote, Docker: s.daemon, Swept: s.swept,
	}
	if s.dockerErr != nil {
		info.DockerError = s.dockerErr.Error()
	}
	if s.daemon != nil {
		if err := RemoveRunImages(ctx, s.Evidence.RunID); err != nil {
			return "", fmt.Errorf("remove this run's images: %w", err)
		}
	}
	info.Hostname, _ = os.Hostname()
	info.HarnessCommit, info.HarnessDirty = gitCommit(ctx, s.cfg.Root)
	info.AIPerfVersion, _ = s.cfg.AIPerf.CheckVersion(ctx)

	sort.Slice(s.results, func(i, j int) bool { return s.results[i].Row < s.results[j].Row })
	var table strings.Builder
	table.WriteString(MarkdownHeader)
	for _, r := range s.results {
		if r.Status == schema.StatusQualified && len(s.skips) > 0 {
			r.Status, r.Reason = schema.StatusPassedNQ, fmt.Sprintf("the run skipped %d row(s), so it qualifies nothing", len(s.skips))
		}
		info.Rows = append(info.Rows, r.Row)
		if err := s.Evidence.WriteJSON(filepath.Join(r.Row, "results.json"), r); err != nil {
			return "", err
		}
		md := MarkdownRow(r)
		if err := os.WriteFile(filepath.Join(s.Evidence.Dir, r.Row, "row.md"), []byte(MarkdownHeader+md), 0o644); err != nil {
			return "", err
		}
		table.WriteString(md)
	}
	// run.json first: the pictures are titled with its run id.
	if err := s.Evidence.WriteJSON("run.json", info); err != nil {
		return "", err
	}
	for _, r := range s.results {
		if err := evidencecheck.WritePictures(filepath.Join(s.Evidence.Dir, r.Row)); err != nil && !errors.Is(err, evidencecheck.ErrNoRawExport) {
			return "", fmt.Errorf("pictures %s: %w", r.Row, err)
		}
	}
	summary := fmt.Sprintf("# qualkit run %s\n\n%s\n", info.RunID, table.String())
	for _, r := range s.results {
		summary += fmt.Sprintf("- `%s`: `%s`\n", r.Row, r.Command)
	}
	if len(s.skips) > 0 {
		summary += "\nNot a qualification run: skipped rows:\n"
		for _, sk := range s.skips {
			summary += "- " + sk + "\n"
		}
	}
	if err := os.WriteFile(filepath.Join(s.Evidence.Dir, "SUMMARY.md"), []byte(summary), 0o644); err != nil {
		return "", err
	}
	if err := prsummary.Write(s.Evidence.Dir, prsummary.Options{Root: s.cfg.Root, HTML: true}); err != nil {
		return "", fmt.Errorf("PR summary: %w", err)
	}
	if err := s.Evidence.WriteChecksums(); err != nil {
		return "", err
	}
	// The run checks its own evidence the way a reviewer would, from the raw files.
	if err := evidencecheck.Check(s.Evidence.Dir, ""); err != nil {
		return summary, fmt.Errorf("evidence check: %w", err)
	}
	return summary, nil
}

// BuildGPURead builds the gpuread program into <root>/.cache/bin and returns its path.
// It is the only cgo code qualkit has: building it apart, with its compiler output kept
// out of sight, lets the test binaries compile without cgo. Go's build cache makes a
// rebuild of an unchanged program take well under a second.
func BuildGPURead(ctx context.Context, root string) (string, error) {
	out := filepath.Join(root, ".cache", "bin", "gpuread")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./internal/harness/gpu/cmd/gpuread")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the NVML reader (go build ./internal/harness/gpu/cmd/gpuread): %v: %s; "+
			"build it where Go and a C compiler exist and name it with -qualkit.gpuread or QUALKIT_GPUREAD", err, clip(bytes.TrimSpace(b), 600))
	}
	return out, nil
}

func gitCommit(ctx context.Context, root string) (string, bool) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)", false
	}
	st, _ := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	return strings.TrimSpace(string(out)), len(strings.TrimSpace(string(st))) > 0
}

// FindRoot walks up from dir to the folder holding go.mod.
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
