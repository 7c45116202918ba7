//go:build trtmcperfserve

package qual

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/harness"
	"qualkit/internal/harness/serving"
	"qualkit/internal/trtmcdouble"
)

// TestPerfServeConformance holds the double's Go imitation of trtmc-perf-serve
// (internal/trtmcdouble/perfserve.go), which serves the perf-serve row in a clone with
// nothing beside it, to TRTMC's own server (the snapshot QUALKIT_TRTMC_PERF_SERVE names;
// `make test TRTMC_PERF_SERVE=...` builds this file in, CI does). Both run in the double's
// image, on the same bundle, worker and fake checkpoint, each with the row's own command
// line, every path at the same place in its container; the same requests, good and bad
// (trtmcdouble.ConformanceCases), go to each; any difference in status, body, headers,
// records line or scratch layout that trtmcdouble.ImitationDifferences does not list
// with its reason fails, and so does a listed one no longer seen. Then a difference
// planted in the imitation (QUALKIT_DOUBLE_PLANT) must be found.
func TestPerfServeConformance(t *testing.T) {
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	require.NotEmpty(t, os.Getenv(perfServeEnv), "the conformance test needs TRTMC's own perf-serve: give %s", perfServeEnv)
	fx := conformanceFixture(t, root)
	runID := harness.NewRunID(time.Now()) + "-perfserve-conformance"
	t.Cleanup(func() { serving.RemoveRunImages(context.Background(), runID) })
	image := func(co string) serving.Image {
		ci := qwenimage.New(qwenimage.Config{Checkout: filepath.Join(doubleDir(root), co)}).Image(harness.Env{Root: root})
		img, err := serving.PrepareImage(t.Context(), serving.ImageSpec{Dockerfile: ci.Dockerfile, CopyRoots: ci.CopyRoots}, runID, co, filepath.Join(t.TempDir(), "build.log"))
		require.NoError(t, err, "the image of checkout %s", co)
		return img
	}
	photo, err := os.ReadFile(filepath.Join(root, "fixtures", "images", "photo-640x382.png"))
	require.NoError(t, err)
	cases := trtmcdouble.ConformanceCases(photo)

	real := fx.serve(t, image("families-trtmc-perf-serve"), "families-trtmc-perf-serve", runID, nil, cases)
	imitationImage := image("families-perf-serve")
	imitation := fx.serve(t, imitationImage, "families-perf-serve", runID, nil, cases)
	unexplained, stale := trtmcdouble.Unexplained(trtmcdouble.CompareExchanges(real, imitation), trtmcdouble.ImitationDifferences)
	for _, d := range unexplained {
		t.Errorf("the imitation differs from TRTMC's perf-serve: %s", d)
	}
	for _, k := range stale {
		t.Errorf("listed as a difference of the imitation, but no longer seen (remove it from trtmcdouble.ImitationDifferences): %s (%s)", k.Where, k.Reason)
	}

	planted := fx.serve(t, imitationImage, "families-perf-serve", runID, []string{trtmcdouble.EnvPlant + "=error-type"}, cases)
	unexplained, _ = trtmcdouble.Unexplained(trtmcdouble.CompareExchanges(real, planted), trtmcdouble.ImitationDifferences)
	require.NotEmpty(t, unexplained, "a difference planted in the imitation (error type = code) must fail the comparison")
	for _, d := range unexplained {
		require.Contains(t, d.String(), "body", "only the planted difference: %s", d)
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

// serve starts checkout co's perf-serve in img with the row's arguments, runs the cases
// against it and stops it. Every path is the same in either server's container.
func (fx conformanceServer) serve(t *testing.T, img serving.Image, co, runID string, env []string, cases []trtmcdouble.ConformanceCase) []trtmcdouble.Exchange {
	t.Helper()
	out := t.TempDir()
	records, scratch := filepath.Join(out, "records"), filepath.Join(out, "scratch")
	require.NoError(t, os.MkdirAll(records, 0o755))
	require.NoError(t, os.MkdirAll(scratch, 0o755))
	port, err := serving.FreePort()
	require.NoError(t, err)
	spec := harness.ServeSpec{Bundle: "/conf/bundle/" + qwenimage.Profile + ".bundle", Model: qwenimage.HFID, Host: "127.0.0.1", Port: port,
		Records: "/conf/records/records.jsonl", Scratch: "/conf/scratch"}
	checkout := filepath.Join(doubleDir(fx.root), co)
	cmd := serving.Command{Args: append([]string{"python3", "-m", "trtmc_perf_serving", "serve"}, qwenimage.PerfServeArgs(spec, "/conf/runtime")...),
		Env: append([]string{"HF_HOME=/conf/hf", "HF_HUB_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1",
			"PYTHONPATH=/src/apps/perf_serving:/src/apps/benchmark:/src/core/builder:/src"}, env...), Dir: checkout}
	c := serving.Container{Image: img, RunID: runID, Row: co, Mounts: []serving.Mount{
		{Host: checkout, Container: "/src", ReadOnly: true}, {Host: fx.bundle, Container: "/conf/bundle", ReadOnly: true},
		{Host: fx.runtime, Container: "/conf/runtime", ReadOnly: true}, {Host: fx.hf, Container: "/conf/hf", ReadOnly: true},
		{Host: records, Container: "/conf/records"}, {Host: scratch, Container: "/conf/scratch"}}}
	log := filepath.Join(out, "server.log")
	srv, err := serving.Start(t.Context(), serving.ServerSpec{Cmd: cmd, Port: port, Ready: 2 * time.Minute, Log: log}, serving.InContainer(c))
	if err != nil {
		b, _ := os.ReadFile(log)
		require.NoError(t, err, "%s's perf-serve did not start:\n%s", co, b)
	}
	defer srv.Stop(context.Background())
	got, err := trtmcdouble.RunConformance(t.Context(), srv.URL(), filepath.Join(records, "records.jsonl"), scratch, cases)
	require.NoError(t, err)
	return got
}
