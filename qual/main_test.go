// Package qual holds the qualification tables: one table-driven test per checkpoint
// group, each row walked through the harness stages. TestMain owns the flags and the
// evidence folder of the run.
package qual

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"qualkit/internal/harness"
)

var (
	evidenceRoot     = flag.String("qualkit.evidence", "", "evidence root (default <repo>/evidence)")
	notQualification = flag.Bool("qualkit.not-qualification", os.Getenv("QUALKIT_NOT_QUALIFICATION") == "1",
		"explicitly NOT a qualification run: rows whose host requirements are absent are skipped and reported \"not-run\" (env QUALKIT_NOT_QUALIFICATION=1)")
	runtimeFlag = flag.String("qualkit.runtime", envOr("RUNTIME", harness.RuntimeAuto), "serving runtime: auto, process or container (env RUNTIME)")
	rebuild     = flag.Bool("qualkit.rebuild", false, "rebuild bundles even when the cache key matches")
	venv        = flag.String("qualkit.venv", "", "project venv with aiperf and pytest (default <repo>/.venv)")
	doctor      = flag.Bool("qualkit.doctor", false, "print every row's readiness (preflight only) and exit without running anything")
)

// tables lists every qualification table, for -qualkit.doctor.
func tables() []harness.Table {
	return []harness.Table{refeditRows, qwenImageEditRows, qwenReferenceRows}
}

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
	flag.Parse()
	// The reaper image cannot be pulled on our machines; the harness removes what it
	// starts (and sweeps what dead runs left), so testcontainers' reaper stays off.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := harness.FindRoot(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	if *evidenceRoot == "" {
		*evidenceRoot = filepath.Join(root, "evidence")
	}
	if *venv == "" {
		*venv = filepath.Join(root, ".venv")
	}
	cfg := harness.SuiteConfig{
		Root: root, EvidenceRoot: *evidenceRoot, RunID: harness.NewRunID(time.Now()),
		Python:        filepath.Join(*venv, "bin", "python"),
		AIPerf:        harness.AIPerf{Bin: filepath.Join(*venv, "bin", "aiperf"), Tokenizer: filepath.Join(*venv, "qualkit-tokenizer")},
		Qualification: !*notQualification, Runtime: *runtimeFlag, Rebuild: *rebuild,
	}
	baseConfig = cfg
	suite, err = harness.NewSuite(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	if *doctor {
		return printDoctor(root)
	}
	fmt.Println("qual:", suite.RuntimeNote)
	code := m.Run()
	summary, err := suite.Finish(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual: evidence:", err)
		return 1
	}
	if summary != "" {
		fmt.Printf("\n%s\nevidence: %s\n", summary, suite.Evidence.Dir)
		latest := filepath.Join(*evidenceRoot, "latest")
		os.Remove(latest)
		os.Symlink(suite.Evidence.RunID, latest)
	}
	return code
}

// printDoctor prints, for every row of every table, what it needs and the host lacks.
func printDoctor(root string) int {
	work, err := os.MkdirTemp("", "qualkit-doctor-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	defer os.RemoveAll(work)
	defer suite.Finish(context.Background())
	env := harness.Env{Root: root, Work: work, Python: filepath.Join(*venv, "bin", "python")}
	for _, table := range tables() {
		for _, c := range table {
			rd := suite.Preflight(context.Background(), c, env)
			if err := harness.Missing(rd.Requirements); err != nil {
				fmt.Printf("NOT READY %s (%s): %v\n\n", c.Name, c.Profile, err)
				continue
			}
			fmt.Printf("ready     %s (%s)\n\n", c.Name, c.Profile)
		}
	}
	return 0
}
