//go:build trtmcperfserve

package qual

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/qwen_image/trtmcdouble"
	"qualkit/internal/harness"
	"qualkit/internal/serving"
)

// TestPerfServeConformance holds the double's Go imitation of trtmc-perf-serve
// (families/qwen_image/trtmcdouble/perfserve.go), which serves the perf-serve row in a clone with
// nothing beside it, to TRTMC's own server (the snapshot QUALKIT_TRTMC_PERF_SERVE names;
// `make test TRTMC_PERF_SERVE=...` and `make qwen-double TRTMC_PERF_SERVE=...` build this
// file in, CI does). Both run in the double's image, on the same bundle, worker and fake
// checkpoint, each with the row's own command line, every path at the same place in its
// container; the same requests, good and bad (trtmcdouble.ConformanceCases), go to each;
// then each is started again with more flags (trtmcdouble.ConformanceFlags: a lane with
// no queue, a fresh worker per request, --set) for a request refused because the lane is
// busy and a worker that fails (the worker holds a request until the test releases it:
// trtmcdouble.EnvHold), and with flags on which neither may start. Any difference in
// status, body, headers, records line, scratch file (the worker's session file among
// them) or exit that trtmcdouble.ImitationDifferences does not list with its reason
// fails, and so does a listed one no longer seen. Then the differences planted in the
// imitation (trtmcdouble.Plants) must each be found, and nothing else.
func TestPerfServeConformance(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	require.NotEmpty(t, os.Getenv(perfServeEnv), "the conformance test needs TRTMC's own perf-serve: give %s", perfServeEnv)
	needDouble(t)
	fx := conformanceFixture(t, root)
	runID := harness.NewRunID(time.Now()) + "-perfserve-conformance"
	t.Cleanup(func() { serving.RemoveRunImages(context.Background(), runID) })
	image := func(co string) serving.Image {
		dockerfile, copyRoots := qwenimage.New(qwenimage.Config{Checkout: filepath.Join(doubleDir(root), co)}).Config.DevImage()
		img, err := serving.PrepareImage(t.Context(), serving.ImageSpec{Dockerfile: dockerfile, CopyRoots: copyRoots}, runID, co, filepath.Join(t.TempDir(), "build.log"))
		require.NoError(t, err, "the image of checkout %s", co)
		return img
	}
	photo, err := os.ReadFile(filepath.Join(root, "fixtures", "images", "photo-640x382.png"))
	require.NoError(t, err)
	run := func(img serving.Image, co string, env []string, startups bool) []trtmcdouble.Exchange {
		got := fx.serve(t, img, co, runID, "the row's flags", nil, env, trtmcdouble.ConformanceCases(photo))
		got = append(got, fx.serve(t, img, co, runID, "with "+strings.Join(trtmcdouble.ConformanceFlags, " "),
			trtmcdouble.ConformanceFlags, env, trtmcdouble.FlagConformanceCases(photo))...)
		if startups {
			for _, flags := range trtmcdouble.StartupConformanceFlags {
				got = append(got, fx.startFails(t, img, co, runID, flags, env))
			}
		}
		return got
	}

	real := run(image("families-trtmc-perf-serve"), "families-trtmc-perf-serve", nil, true)
	imitationImage := image("families-perf-serve")
	imitation := run(imitationImage, "families-perf-serve", nil, true)
	unexplained, stale := trtmcdouble.Unexplained(trtmcdouble.CompareExchanges(real, imitation), trtmcdouble.ImitationDifferences)
	for _, d := range unexplained {
		t.Errorf("the imitation differs from TRTMC's perf-serve: %s", d)
	}
	for _, k := range stale {
		t.Errorf("listed as a difference of the imitation, but no longer seen (remove it from trtmcdouble.ImitationDifferences): %s (%s)", k.Where, k.Reason)
	}

	// The startups carry no plant: the planted run stops before them.
	planted := run(imitationImage, "families-perf-serve", []string{trtmcdouble.EnvPlant + "=" + strings.Join(trtmcdouble.PlantNames(), ",")}, false)
	require.Len(t, planted, len(real)-len(trtmcdouble.StartupConformanceFlags))
	unexplained, _ = trtmcdouble.Unexplained(trtmcdouble.CompareExchanges(real[:len(planted)], planted), trtmcdouble.ImitationDifferences)
	missed, other := trtmcdouble.CheckPlants(unexplained, trtmcdouble.Plants)
	for _, d := range missed {
		t.Errorf("a difference planted in the imitation was not found (%s): %s: %s", trtmcdouble.EnvPlant, d.Case, d.Where)
	}
	for _, d := range other {
		t.Errorf("with the plants, a difference no plant makes: %s", d)
	}
}

// conformanceServer is what both servers are given: the double's bundle, a runtime root
// whose worker is the double's, and the double's checkpoint cache.
type conformanceServer struct {
	root, bundle, runtime, hf string
}

func conformanceFixture(t *testing.T, root string) conformanceServer {
	dir := t.TempDir()
	fx := conformanceServer{root: root, bundle: filepath.Join(dir, "bundle"), runtime: filepath.Join(dir, "runtime"), hf: filepath.Join(doubleDir(root), "hf")}
	h, err := trtmcdouble.NewBundleHeader(trtmcdouble.BundleSpec{Precision: "bf16", MaxCacheLength: 256, ImageWidth: 1024, ImageHeight: 1024, Revision: trtmcdouble.Revision})
	require.NoError(t, err)
	require.NoError(t, trtmcdouble.WriteBundle(filepath.Join(fx.bundle, qwenimage.Profile+".bundle"), h))
	require.NoError(t, os.MkdirAll(fx.runtime, 0o755))
	// The image holds the double's binary; the worker is it under the worker's name.
	require.NoError(t, os.Symlink("/usr/local/bin/trtmcdouble", filepath.Join(fx.runtime, "trtmc_benchmark_worker")))
	require.NoError(t, os.WriteFile(filepath.Join(fx.runtime, "libtrtmc_model_qwen_image.so"), []byte("qualkit contract double\n"), 0o644))
	return fx
}

// conformancePaths are the places of the files in either server's container, by name.
var conformancePaths = map[string]string{"/conf/scratch": "<scratch>", "/conf/records": "<records>", "/conf/bundle": "<bundle>",
	"/conf/runtime": "<runtime root>", "/conf/hf": "<HF_HOME>", "/conf/hold": "<hold>", "/src": "<checkout>"}

// command is checkout co's perf-serve with the row's arguments and extra, in img, and
// the folders it writes to on this machine.
func (fx conformanceServer) command(t *testing.T, img serving.Image, co, runID string, extra, env []string) (serving.Command, serving.Container, int, trtmcdouble.ConformanceServer) {
	out := t.TempDir()
	srv := trtmcdouble.ConformanceServer{Records: filepath.Join(out, "records", "records.jsonl"), Scratch: filepath.Join(out, "scratch"),
		Hold: filepath.Join(out, "hold"), Paths: conformancePaths}
	for _, d := range []string{filepath.Dir(srv.Records), srv.Scratch, srv.Hold} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	port, err := serving.FreePort()
	require.NoError(t, err)
	spec := harness.ServeSpec{Bundle: "/conf/bundle/" + qwenimage.Profile + ".bundle", Model: qwenimage.HFID, Host: "127.0.0.1", Port: port,
		Records: "/conf/records/records.jsonl", Scratch: "/conf/scratch"}
	srv.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	checkout := filepath.Join(doubleDir(fx.root), co)
	args := append([]string{"python3", "-m", "trtmc_perf_serving", "serve"}, qwenimage.PerfServeArgs(spec, "/conf/runtime")...)
	cmd := serving.Command{Args: append(args, extra...),
		Env: append([]string{"HF_HOME=/conf/hf", "HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1", trtmcdouble.EnvHold + "=/conf/hold",
			"PYTHONPATH=/src/apps/perf_serving:/src/apps/benchmark:/src/core/builder:/src"}, env...), Dir: checkout}
	c := serving.Container{Image: img, RunID: runID, Row: co, Mounts: []serving.Mount{
		{Host: checkout, Container: "/src", ReadOnly: true}, {Host: fx.bundle, Container: "/conf/bundle", ReadOnly: true},
		{Host: fx.runtime, Container: "/conf/runtime", ReadOnly: true}, {Host: fx.hf, Container: "/conf/hf", ReadOnly: true},
		{Host: filepath.Dir(srv.Records), Container: "/conf/records"}, {Host: srv.Scratch, Container: "/conf/scratch"},
		{Host: srv.Hold, Container: "/conf/hold"}}}
	return cmd, c, port, srv
}

// serve starts checkout co's perf-serve in img with the row's arguments and extra, runs
// the cases against it and stops it. Every path is the same in either server's container.
func (fx conformanceServer) serve(t *testing.T, img serving.Image, co, runID, name string, extra, env []string, cases []trtmcdouble.ConformanceCase) []trtmcdouble.Exchange {
	t.Helper()
	cmd, c, port, srv := fx.command(t, img, co, runID, extra, env)
	srv.Name = name
	log := filepath.Join(t.TempDir(), "server.log")
	s, err := serving.Start(t.Context(), serving.ServerSpec{Cmd: cmd, Port: port, Ready: 2 * time.Minute, Log: log}, serving.InContainer(c))
	if err != nil {
		b, _ := os.ReadFile(log)
		require.NoError(t, err, "%s's perf-serve did not start:\n%s", co, b)
	}
	defer s.Stop(context.Background())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	got, err := trtmcdouble.RunConformance(ctx, srv, cases)
	require.NoError(t, err)
	return got
}

// startFails runs checkout co's perf-serve with the row's arguments and extra, which it
// must not start with, to its exit: the exchange is its exit status and last line.
func (fx conformanceServer) startFails(t *testing.T, img serving.Image, co, runID string, extra, env []string) trtmcdouble.Exchange {
	t.Helper()
	cmd, c, _, _ := fx.command(t, img, co, runID, extra, env)
	log := filepath.Join(t.TempDir(), "server.log")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec, _ := serving.Run(ctx, cmd, log, serving.InContainer(c))
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return trtmcdouble.Exchange{Case: "serve " + strings.Join(extra, " "), Status: rec.ExitCode, Body: lines[len(lines)-1], Paths: conformancePaths}
}
