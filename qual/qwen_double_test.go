package qual

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/qwen_image/trtmcdouble"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/family"
	"qualkit/internal/harness"
	"qualkit/internal/merged"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// The TRTMC contract double: small programs of qualkit's own (families/qwen_image/trtmcdouble) that
// hold TRTMC's documented contracts for every command the Qwen row runs, refuse anything
// else, and write TRTMC's formats, in an image built FROM scratch. The real Qwen adapter,
// unchanged, drives it through every stage on every CI run. Its rows read
// passed-contract-double: never qualified, whatever they pass.

// doubleDir is where TestMain prepares the double: .cache/trtmc-double/current links to
// the folder of the double's build (named by its sha256), which holds a checkout of each
// layout and the fake Hugging Face cache.
func doubleDir(root string) string { return filepath.Join(root, ".cache", "trtmc-double", "current") }

// doubleOnce prepares the double once per test binary, for the first test that uses it:
// a run that selects none of them (`-run Qwen` on a GPU host, whose engine never built
// the double's image) never needs the image.
var doubleOnce = sync.OnceValue(func() error {
	root, err := harness.FindRoot(".")
	if err != nil {
		return err
	}
	return prepareDouble(context.Background(), root)
})

// needDouble fails t unless the double is ready.
func needDouble(t *testing.T) {
	t.Helper()
	if err := doubleOnce(); err != nil {
		t.Fatalf("the TRTMC contract double: %v", err)
	}
}

// prepareDouble makes the double ready. The
// folder is named by the sha256 of the double's binary and built under a temporary name,
// then renamed: concurrent test processes never see a half-written one, and an unchanged
// double (its checkouts commit with fixed dates) keeps its commit, its native build and
// its bundles cached.
func prepareDouble(ctx context.Context, root string) error {
	image, err := trtmcdouble.PythonImage(root)
	if err != nil {
		return err
	}
	if err := serving.ImagePresent(ctx, image); err != nil {
		return fmt.Errorf("the TRTMC contract double's Python image %s: %w: make it with `make double-image` (scripts/double-image.sh, once per machine and engine; `make test` and `make qwen-double` run it)", image, err)
	}
	base := filepath.Dir(doubleDir(root))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(base, fmt.Sprintf("trtmcdouble-%d", os.Getpid()))
	defer os.Remove(bin)
	if err := trtmcdouble.Build(ctx, root, bin); err != nil {
		return err
	}
	snapshot := os.Getenv(perfServeEnv)
	sum, err := doubleSHA256(root, bin, snapshot)
	if err != nil {
		return err
	}
	final := filepath.Join(base, sum[:16])
	if _, err := os.Stat(filepath.Join(final, "ready")); err != nil {
		tmp, err := os.MkdirTemp(base, "tmp-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		for _, co := range doubleCheckouts(snapshot) {
			spec := trtmcdouble.CheckoutSpec{Layout: co.layout, Serving: co.serving, PerfServe: co.perfServe, PythonImage: image}
			if err := trtmcdouble.Checkout(ctx, root, filepath.Join(tmp, co.dir), spec); err != nil {
				return err
			}
		}
		if _, err := trtmcdouble.HFCache(filepath.Join(tmp, "hf")); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, "ready"), nil, 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, final); err != nil {
			if _, serr := os.Stat(filepath.Join(final, "ready")); serr != nil {
				return err // not another process's finished copy
			}
		}
	}
	link := filepath.Join(base, fmt.Sprintf("current-%d", os.Getpid()))
	os.Remove(link)
	if err := os.Symlink(filepath.Base(final), link); err != nil {
		return err
	}
	return os.Rename(link, doubleDir(root))
}

// doubleSHA256 names a prepared double: its binary, every file of the checkout trees it
// copies (trtmcdouble.Trees) and of TRTMC's perf-serve snapshot when one is named, so a
// changed tree is never served from a stale cache.
func doubleSHA256(root, bin, snapshot string) (string, error) {
	h := sha256.New()
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	h.Write(b)
	trees := slices.Clone(trtmcdouble.Trees)
	if snapshot != "" {
		trees = append(trees, snapshot)
	}
	for _, tree := range trees {
		if !filepath.IsAbs(tree) {
			tree = filepath.Join(root, tree)
		}
		err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			fmt.Fprintf(h, "\x00%s\x00%d\x00", filepath.ToSlash(rel), len(b))
			h.Write(b)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// perfServeEnv names a snapshot of TRTMC's own perf-serve (make ... TRTMC_PERF_SERVE=DIR
// exports it; CI gives ../shared/trtmc-perf-serve). With it the table gains the row
// that TRTMC's own trtmc_perf_serving serves; without it (a clone with nothing beside
// it) the perf-serve row alone, served by the double's replay of what TRTMC's server
// answered (families/qwen_image/trtmcdouble/testdata/perfserve, TestPerfServeConformance).
const perfServeEnv = "QUALKIT_TRTMC_PERF_SERVE"

// doubleCheckouts are the double's TRTMC-shaped checkouts: the families layout with
// each serving contract (perf-serve twice when TRTMC's own is named: the replay's and
// TRTMC's), and the e9132e79 layout, which (like TRTMC main e9132e79) has no server at all.
func doubleCheckouts(snapshot string) []struct{ dir, layout, serving, perfServe string } {
	cos := []struct{ dir, layout, serving, perfServe string }{
		{"families-perf-serve", trtmcdouble.LayoutFamilies, trtmcdouble.ServingPerfServe, ""},
		{"families-edit-route", trtmcdouble.LayoutFamilies, trtmcdouble.ServingEditRoute, ""},
		{"legacy", trtmcdouble.LayoutLegacy, trtmcdouble.ServingNone, ""},
	}
	if snapshot != "" {
		cos = append(cos, struct{ dir, layout, serving, perfServe string }{"families-trtmc-perf-serve", trtmcdouble.LayoutFamilies, trtmcdouble.ServingPerfServe, snapshot})
	}
	return cos
}

// doubleRow is the Qwen row against the double's checkout co. What differs from the real
// row: Double (the status), no GPU need and the adapter's test hooks (the SM to build for,
// a server that says it is the double). Everything else is the real row's: the adapter
// reads the serving contract from the checkout as it would from TRTMC's.
func doubleRow(name, co string, timing schema.TimingSource, reason string) harness.Checkpoint {
	root, _ := harness.FindRoot(".")
	c := qwenImageEditRows[0]
	c.Name, c.Double, c.Reason = name, true, reason
	c.Adapter = qwenimage.New(qwenimage.Config{
		Checkout: filepath.Join(doubleDir(root), co), HFHome: filepath.Join(doubleDir(root), "hf"),
		Timing: timing, AssumeSM: "90", ContractDouble: true,
	})
	c.Needs.GPU = qwenImageEditRows[0].Needs.GPU
	c.Needs.GPU.Count = 0 // the test hook: the double needs no GPU
	c.Needs.GPU.MinMemoryBytes, c.Needs.GPU.MinComputeCapability = 0, ""
	c.Deadline = family.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: 2 * time.Minute, Request: time.Minute, Native: time.Minute}
	return c
}

// qwenDoubleRows are the two serving contracts CI drives, on today's families/ layout:
// perf-serve's task route (the server public TRTMC has), and the stage-7 edit route on
// trtmc-server started as its native binary.
var qwenDoubleRows = harness.NewTable(append([]harness.Checkpoint{
	doubleRow("qwen-double-perf-serve", "families-perf-serve", schema.TimingSource{},
		"the real Qwen adapter against the TRTMC contract double (families layout, trtmc-perf-serve replayed from the exchanges recorded from TRTMC's own): POST /v1/tasks/generate_image through AIPerf's raw endpoint, the PNG from the kept scratch folder, Task time from the records"),
	doubleRow("qwen-double-edit-route", "families-edit-route", schema.TimingSource{Body: qwenimage.DefaultTimingBody},
		"the real Qwen adapter against the TRTMC contract double (families layout, native trtmc-server): POST /v1/images/edits as the stage-7 report describes it, image as data[0].b64_json, Task time from trtmc_timing.model_call_ms in the body"),
}, trtmcPerfServeRows()...)...)

// trtmcPerfServeRows is the row TRTMC's own perf-serve serves, when its snapshot is named.
func trtmcPerfServeRows() []harness.Checkpoint {
	if os.Getenv(perfServeEnv) == "" {
		return nil
	}
	return []harness.Checkpoint{doubleRow("qwen-double-trtmc-perf-serve", "families-trtmc-perf-serve", schema.TimingSource{},
		"the real Qwen adapter against TRTMC's own trtmc_perf_serving (--backend trtmc, the snapshot named by "+perfServeEnv+") with the contract double's worker and bundle: POST /v1/tasks/generate_image through AIPerf's raw endpoint, the PNG from the kept scratch folder, Task time from the records")}
}

// On the e9132e79 layout the double, like TRTMC main e9132e79, has no server: the row
// fails in preflight, in seconds, naming both contracts and where it looked.
func TestTRTMCDoubleE9132e79PredatesTheServer(t *testing.T) {
	needDouble(t)
	c := doubleRow("qwen-double-e9132e79", "legacy", schema.TimingSource{}, "the e9132e79 layout has no server")
	s := isolatedSuite(t, "e9132e79-double", false)
	start := time.Now()
	res, err := s.Run(t.Context(), c, t.TempDir(), harness.Reproduce(t.Name()))
	require.Error(t, err)
	assert.Equal(t, schema.StatusFailed, res.Status)
	st, _ := res.Stage(schema.StagePreflight)
	assert.Equal(t, schema.Fail, st.Status)
	assert.Contains(t, st.Error, "supports neither serving contract the row drives, edit-route nor perf-serve")
	assert.Contains(t, st.Error, "edit-route: no apps/server/python/trtmc_server/app.py")
	assert.Contains(t, st.Error, "perf-serve: no apps/perf_serving/trtmc_perf_serving/app.py")
	assert.Less(t, time.Since(start), time.Minute, "preflight fails in the first minute")
}

// perf-serve keeps each request's input beside its output; the checker holds it to the
// image AIPerf recorded sending. A forger who swaps the kept input for another fixture
// and recomputes every checksum list is caught, by name of both sources.
func TestTRTMCDoublePerfServeInputForgery(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	needDouble(t)
	cfg := baseConfig
	cfg.EvidenceRoot, cfg.RunID = t.TempDir(), harness.NewRunID(time.Now())+"-nc-perf-serve-forgery"
	s, err := harness.NewSuite(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { serving.RemoveRunImages(context.Background(), s.Evidence.RunID) })
	res, err := s.Run(t.Context(), qwenDoubleRows[0], t.TempDir(), harness.Reproduce(t.Name()))
	require.NoError(t, err)
	require.Equal(t, schema.StatusDouble, res.Status)
	_, _, err = s.Finish(context.Background())
	require.NoError(t, err, "the honest run checks out")

	row := filepath.Join(s.Evidence.Dir, qwenDoubleRows[0].Name)
	inputs, err := filepath.Glob(filepath.Join(row, "serve", "scratch", "*", "inputs", "input-0000.png"))
	require.NoError(t, err)
	var aiperf []string // the scratch folders of qualkit's own probes are named qualkit-*
	for _, in := range inputs {
		if !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(in))), "qualkit-") {
			aiperf = append(aiperf, in)
		}
	}
	require.Len(t, aiperf, res.Measured+res.Warmup, "every AIPerf request keeps its input")
	other, err := os.ReadFile(filepath.Join(row, "fixtures", "checker-640x382.png"))
	require.NoError(t, err)
	var forged string
	for _, in := range aiperf {
		if b, _ := os.ReadFile(in); !bytes.Equal(b, other) {
			forged = in
			break
		}
	}
	require.NotEmpty(t, forged)
	require.NoError(t, os.WriteFile(forged, other, 0o644))
	require.NoError(t, merged.WriteSums(row))
	require.NoError(t, merged.WriteSums(s.Evidence.Dir))
	err = evidencecheck.Check(s.Evidence.Dir, "")
	require.Error(t, err)
	rel, _ := filepath.Rel(row, forged)
	assert.Contains(t, err.Error(), filepath.ToSlash(rel))
	assert.Contains(t, err.Error(), "server input")
	assert.Contains(t, err.Error(), "the reference image AIPerf sent")
}

// pytestPin is the pytest TRTMC's image pins (requirements/community-ci.txt @ 264890fb),
// the one the double's Python image installs (families/qwen_image/trtmcdouble/image/requirements.lock).
const pytestPin = "8.4.2"
