//go:build mktestdata

package evidencecheck_test

// TestMakeTestdata makes the committed evidence under testdata/ (see testdata/README.md):
// two real runs of the reference family through the real harness and the real AIPerf,
// on a copy of fixtures/image_edit shrunk so the folders stay small: one qualified row
// (Task time from the response body), and one whose native Task drifts, so identity
// fails (Task time from the server's records file).
//
//	go tool gotestsum --junitfile /tmp/mk.xml -- -tags mktestdata -count=1 \
//	    -run TestMakeTestdata ./internal/evidencecheck/ -args -out /tmp/mk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	xdraw "golang.org/x/image/draw"

	"qualkit/families/refedit"
	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/harness"
	"qualkit/internal/report"
	"qualkit/internal/schema"
)

var mkOut = flag.String("out", "", "folder for the generated evidence runs")

func TestMakeTestdata(t *testing.T) {
	cfg, row := mkSetup(t)
	cfg.RunID = harness.NewRunID(time.Now()) + "-qualified"
	s, err := harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := row("refedit-v1", func(*refedit.Faulty) {})
	t.Run(c.Name, func(t *testing.T) { s.Qualify(t, c) })
	finish(t, s)

	cfg.RunID = harness.NewRunID(time.Now()) + "-drift"
	s, err = harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The failed row reads its Task time from the records file, so both timing sources
	// are in the testdata.
	// The drift row replays one process per request, so the committed runs hold both
	// native modes: a batch (the qualified run) and one-shot (this one).
	res, _ := s.Run(context.Background(), row("refedit-v1-native-drift", func(f *refedit.Faulty) {
		f.OneShot = true
		f.NativeFault, f.RecordsTiming = "drift", true
	}), t.TempDir(), harness.Reproduce("TestNegativeControls/refedit-v1-native-drift"))
	if res == nil || res.Status != schema.StatusFailed {
		t.Fatalf("the drift row should fail identity: %+v", res)
	}
	finish(t, s)
}

// TestMakeControlsTestdata makes the run *-controls: the qualified row again, with the
// controls stage (results.json schema 3), which the runs above predate.
func TestMakeControlsTestdata(t *testing.T) {
	cfg, row := mkSetup(t)
	cfg.RunID = harness.NewRunID(time.Now()) + "-controls"
	s, err := harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := row("refedit-v1", func(*refedit.Faulty) {})
	t.Run(c.Name, func(t *testing.T) { s.Qualify(t, c) })
	finish(t, s)
}

// mkSetup is the suite configuration and the row maker both generators use.
func mkSetup(t *testing.T) (harness.SuiteConfig, func(string, func(*refedit.Faulty)) harness.Checkpoint) {
	if *mkOut == "" {
		t.Fatal("-out DIR is required")
	}
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	root, err := harness.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	fixtures := shrinkFixtures(t, root)
	gpuread, err := harness.BuildGPURead(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(root, ".venv")
	cfg := harness.SuiteConfig{
		Root: root, EvidenceRoot: *mkOut, Python: filepath.Join(venv, "bin", "python"),
		AIPerf:        harness.AIPerf{Bin: filepath.Join(venv, "bin", "aiperf"), HFHome: filepath.Join(venv, "qualkit-hf")},
		Qualification: true, Runtime: harness.RuntimeAuto,
		Reporter: report.Evidence{Root: root}, GPURead: gpuread,
	}
	row := func(name string, change func(*refedit.Faulty)) harness.Checkpoint {
		// No quality pair: the case's pair runs the full-size photo at 512x512, which these
		// scaled fixtures and 64x64 outputs never send (every real run's self-check
		// re-derives the pair; the negative controls run it).
		// Steps at 50 and 100 blur passes: at 64x64 ten passes cost less than decoding and
		// encoding, and the Task-time ratio would show nothing; sizes near the workload's.
		f := refedit.Faulty{Family: refedit.Default, NoPair: true,
			ControlValues: map[string][2]string{"num_inference_steps": {"50", "100"}, "size": {"64x64", "48x32"}}}
		change(&f)
		return harness.Checkpoint{
			Name: name, Family: "refedit", Model: "qualkit/refedit-v1", Profile: "refedit-v1",
			Reason: "testdata for internal/evidencecheck", Adapter: f, Fixtures: fixtures,
			Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
			Deadline: family.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: time.Minute, Request: time.Minute, Native: time.Minute},
		}
	}

	return cfg, row
}

// TestMakeShardTestdata makes the second shard of the merged-run tests: two more
// qualified rows (refedit-v1-second, refedit-v1-beside), run side by side (two CPU row
// slots) in a run of its own with its own JUnit (a shard's JUnit holds only its run's
// rows):
//
//	go tool gotestsum --junitfile /tmp/mk-second.xml -- -tags mktestdata -count=1 \
//	    -run TestMakeShardTestdata ./internal/evidencecheck/ -args -out /tmp/mk
func TestMakeShardTestdata(t *testing.T) {
	cfg, row := mkSetup(t)
	cfg.RunID = harness.NewRunID(time.Now()) + "-second"
	cfg.CPURows = 2 // two CPU rows side by side: each names the other in its lease
	s, err := harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("rows", func(t *testing.T) {
		for _, name := range []string{"refedit-v1-second", "refedit-v1-beside"} {
			c := row(name, func(*refedit.Faulty) {})
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				s.Qualify(t, c)
			})
		}
	})
	finish(t, s)
}

// finish ends a run as TestMain does: run.json, SUMMARY.md, PR.md, index.html, the
// checksums, and the check (the Reporter's), which must pass.
func finish(t *testing.T, s *harness.Suite) {
	t.Helper()
	if _, _, err := s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// shrinkFixtures copies the fixtures/image_edit workload, its pool images scaled to 96
// pixels wide and the output size set to 64x64, into one self-contained manifest (no
// pool) beside its images, and returns the copy's manifest relative to root.
func shrinkFixtures(t *testing.T, root string) string {
	t.Helper()
	dst := filepath.Join(root, ".cache", "evidencecheck-testdata-fixtures")
	os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	fx, err := fixtures.Load(filepath.Join(root, "fixtures", "image_edit", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	small := json.RawMessage(`"64x64"`)
	fx.Settings["size"] = small
	if fx.Influence.Settings != nil {
		fx.Influence.Settings["size"] = small
	}
	for i, im := range fx.Images {
		f, err := os.Open(fx.ImagePath(im.File))
		if err != nil {
			t.Fatal(err)
		}
		img, _, err := image.Decode(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		b := img.Bounds()
		w, h := 96, b.Dy()*96/b.Dx()
		scaled := image.NewNRGBA(image.Rect(0, 0, w, h))
		xdraw.CatmullRom.Scale(scaled, scaled.Rect, img, b, xdraw.Src, nil)
		out := filepath.Join(dst, im.File)
		of, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(of, scaled); err != nil {
			t.Fatal(err)
		}
		of.Close()
		data, _ := os.ReadFile(out)
		sum := sha256.Sum256(data)
		fx.Images[i].SHA256, fx.Images[i].Bytes, fx.Images[i].Width, fx.Images[i].Height = hex.EncodeToString(sum[:]), int64(len(data)), w, h
		fx.Images[i].Provenance = "scaled to 96 px wide (Catmull-Rom) from fixtures/images/" + im.File + ": " + im.Provenance
	}
	out, _ := json.MarshalIndent(fx, "", "  ")
	if err := os.WriteFile(filepath.Join(dst, "manifest.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, filepath.Join(dst, "manifest.json"))
	return rel
}
