// Package qual holds the qualification tables: one table-driven test per checkpoint
// group, each row walked through the harness stages. TestMain owns the flags and the
// evidence folder of the run.
package qual

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"qualkit/internal/attest"
	"qualkit/internal/harness"
	"qualkit/internal/report"
	"qualkit/internal/schema"
	"qualkit/internal/serving/reaper"
)

var (
	evidenceRoot     = flag.String("qualkit.evidence", "", "evidence root; a relative path is inside the repository root (default evidence)")
	notQualification = flag.Bool("qualkit.not-qualification", os.Getenv("QUALKIT_NOT_QUALIFICATION") == "1",
		"explicitly NOT a qualification run: rows whose host requirements are absent are skipped and reported \"not-run\" (env QUALKIT_NOT_QUALIFICATION=1)")
	runtimeFlag = flag.String("qualkit.runtime", envOr("RUNTIME", harness.RuntimeAuto), "serving runtime: auto, process or container (env RUNTIME)")
	rebuild     = flag.Bool("qualkit.rebuild", false, "rebuild bundles even when the cache key matches")
	cpuRows     = flag.Int("qualkit.cpu-rows", 1, "rows without a GPU that run at once; rows with GPUs run side by side as the host's GPUs allow, each on GPUs of its own")
	venv        = flag.String("qualkit.venv", "", "project venv with aiperf and pytest; a relative path is inside the repository root (default .venv)")
	gpuread     = flag.String("qualkit.gpuread", os.Getenv("QUALKIT_GPUREAD"), "the NVML reader program (env QUALKIT_GPUREAD); default: built from internal/gpu/cmd/gpuread")
	doctor      = flag.Bool("qualkit.doctor", false, "print the readiness (preflight only) of every row -run selects, run nothing, and exit 1 if one is not ready")
	jsonOut     = flag.Bool("qualkit.json", false, "with -qualkit.doctor: print JSON for scripts instead of text")
	tablesOut   = flag.Bool("qualkit.tables", false, "print the qualification tables as JSON (what the Makefile and scripts/testgate derive from), run nothing")
	serial      = flag.Bool("qualkit.serial", false, "run each row's work one thing at a time, as before the overlapped order (the server once the correctness case passed, AIPerf once the server is ready, the native batch at identity): to measure what overlapping gains; the gates are the same")
	corrOnly    = flag.Bool("qualkit.correctness-only", false, "run each selected row's preflight, build and unchanged correctness case alone (for a row whose public run met a hardware limit); its rows read correctness-verified, never qualified")
)

// Parallel tests: a test that makes its own suite (isolatedSuite, a child test binary, a
// private Docker engine), and whose leftover checks look only for its own marker and run
// id, calls t.Parallel(): go test runs those after the sequential tests, side by side, so
// that one waiting on a signal or a child does not hold the package up. A test that sets
// the marker with t.Setenv (TestNegativeControls, TestInterruptAtEveryStage,
// TestServerOOMKilled, TestHarnessFaults) cannot; its rows run in parallel subtests.

// suite and baseConfig are set by TestMain before any test runs and read-only afterwards.
var (
	suite      *harness.Suite
	baseConfig harness.SuiteConfig
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func TestMain(m *testing.M) {
	// This binary also plays its own reaper (session.go): then it runs no test.
	if reaper.Requested() {
		os.Exit(reaper.Main())
	}
	flag.Parse()
	// The reaper image cannot be pulled on our machines; the harness removes what it
	// starts (and sweeps what dead runs left), so testcontainers' reaper stays off.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// testcontainers prints a banner about the daemon on first contact; run.json records
	// the daemon actually used, and each container's own lines go to its evidence.
	tclog.SetDefault(tclog.NewNoopLogger())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if *tablesOut {
		return printTables(os.Stdout)
	}
	// go test -list names the tests and runs none: no session, suite or run folder.
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	rp, tmp, err := startSession()
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	code := runSuite(m, rp)
	if err := endSession(rp, tmp); err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		code = max(code, 1)
	}
	return code
}

func runSuite(m *testing.M, rp *reaper.Reaper) int {
	root, err := harness.FindRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	// go test runs this binary in qual/, not where the command was typed: relative paths
	// in flags mean the repository root, where the README's commands are typed.
	*evidenceRoot = inRoot(root, *evidenceRoot, "evidence")
	*venv = inRoot(root, *venv, ".venv")
	if *gpuread == "" {
		if *gpuread, err = harness.BuildGPURead(context.Background(), root); err != nil {
			fmt.Fprintln(os.Stderr, "qual: GPU discovery will fail:", err)
		}
	} else {
		*gpuread = inRoot(root, *gpuread, "")
	}
	// A bundle another run built is reused only when that run is signed by the key the
	// runs are signed with; with no key configured, never (report.Evidence.Vouch).
	key, err := attest.KeyFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	cfg := harness.SuiteConfig{
		Root: root, EvidenceRoot: *evidenceRoot, RunID: harness.NewRunID(time.Now()),
		Python:        filepath.Join(*venv, "bin", "python"),
		AIPerf:        harness.AIPerf{Bin: filepath.Join(*venv, "bin", "aiperf"), HFHome: filepath.Join(*venv, "qualkit-hf")},
		Qualification: !*notQualification, Runtime: *runtimeFlag, Rebuild: *rebuild,
		GPURead: *gpuread, Progress: progressWriter(), CPURows: *cpuRows,
		Reporter: report.Evidence{Root: root, Rows: qualRows(), Key: key}, CorrectnessOnly: *corrOnly, Serial: *serial,
		Reaper: rp,
		Venv:   harness.Venv{Dir: *venv, Lock: filepath.Join(root, "scripts", "constraints.txt"), Known: filepath.Join(root, filepath.FromSlash(harness.VenvRecordsFile))},
	}
	baseConfig = cfg
	if *doctor {
		return printDoctor(root, cfg, os.Stdout)
	}
	suite, err = harness.NewSuite(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	fmt.Println("qual:", suite.RuntimeNote)
	if note := suite.DirtyNote(); note != "" {
		fmt.Println("qual:", note)
	}
	onSignals(suite)
	code := m.Run()
	fmt.Println("qual: finishing the run: its evidence first, then its cleanup")
	summary, sums, err := suite.Finish(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual: evidence:", err)
		return 1
	}
	if summary != "" {
		fmt.Printf("\n%s\nevidence: %s\nsha256 of %s: %s (check the folder against it: make check-evidence DIR=%s SUMS=%s)\n",
			summary, suite.Evidence.Dir, schema.ChecksumFile, sums, suite.Evidence.Dir, sums)
		latest := filepath.Join(*evidenceRoot, "latest")
		os.Remove(latest)
		os.Symlink(suite.Evidence.RunID, latest)
	}
	if code == 0 && suite.Interrupted() != "" {
		code = 1
	}
	return code
}

// forceAfter is how long the rows get to clean up and write their evidence after the
// first signal; a second signal, or this long, forces the exit.
const forceAfter = 60 * time.Second

// onSignals makes SIGINT (Ctrl-C) and SIGTERM (a CI cancel) end the run as a run we
// report: the running rows stop, their servers, processes and containers with them, and
// each writes its evidence (interrupted, at which stage); then run.json is finished and
// the binary exits non-zero. A second signal, or forceAfter, removes this run's
// containers (10 s at most) and exits at once with 130. It listens until the binary exits:
// a signal after the tests, while the evidence is finished, is one too (and had the
// default action back, a second signal there would kill the binary with no exit code).
func onSignals(suite *harness.Suite) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		name := signalName(sig)
		fmt.Fprintf(os.Stderr, "\nqual: %s: stopping the running rows; they clean up and write their evidence (send it again to force the exit)\n", name)
		suite.Interrupt(name)
		select {
		case sig = <-sigs:
			fmt.Fprintf(os.Stderr, "qual: %s again: removing this run's containers and exiting now\n", signalName(sig))
		case <-time.After(forceAfter):
			fmt.Fprintf(os.Stderr, "qual: the rows did not finish within %s of %s: removing this run's containers and exiting now\n", forceAfter, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := suite.Abandon(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "qual:", err)
		}
		cancel()
		os.Exit(130)
	}()
}

func signalName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// inRoot resolves a path flag: empty is def, relative is inside the repository root.
func inRoot(root, p, def string) string {
	if p == "" {
		p = def
	}
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// progressWriter is where the harness prints progress lines that must be seen while a
// long stage runs. With -v (and under gotestsum, which reads -json) the stages' own
// t.Log lines stream; without -v, go test holds a package's output until it ends, so the
// lines go to the terminal directly when there is one.
func progressWriter() io.Writer {
	if testing.Verbose() {
		return nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	return tty
}
