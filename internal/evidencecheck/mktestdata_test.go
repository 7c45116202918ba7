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
	"bytes"
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
	"qualkit/internal/harness"
	"qualkit/internal/report"
	"qualkit/internal/schema"
)

var mkOut = flag.String("out", "", "folder for the generated evidence runs")

func TestMakeTestdata(t *testing.T) {
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
		AIPerf:        harness.AIPerf{Bin: filepath.Join(venv, "bin", "aiperf"), Tokenizer: filepath.Join(venv, "qualkit-tokenizer")},
		Qualification: true, Runtime: harness.RuntimeAuto,
		Reporter: report.Evidence{Root: root}, GPURead: gpuread,
	}
	row := func(name string, change func(*refedit.Family)) harness.Checkpoint {
		f := refedit.Default
		change(&f)
		return harness.Checkpoint{
			Name: name, Family: "refedit", Model: "qualkit/refedit-v1", Profile: "refedit-v1",
			Reason: "testdata for internal/evidencecheck", Adapter: f, Fixtures: fixtures,
			Bench:    harness.Bench{Measured: 5, Warmup: 1, Seed: 0},
			Deadline: harness.Deadlines{Build: 5 * time.Minute, Correctness: 5 * time.Minute, Ready: time.Minute, Request: time.Minute, Native: time.Minute},
		}
	}

	cfg.RunID = harness.NewRunID(time.Now()) + "-qualified"
	s, err := harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := row("refedit-v1", func(*refedit.Family) {})
	t.Run(c.Name, func(t *testing.T) { s.Qualify(t, c) })
	finish(t, s)

	cfg.RunID = harness.NewRunID(time.Now()) + "-drift"
	s, err = harness.NewSuite(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The failed row reads its Task time from the records file, so both timing sources
	// are in the testdata.
	res, _ := s.Run(context.Background(), row("refedit-v1-native-drift", func(f *refedit.Family) {
		f.NativeFault, f.RecordsTiming = "drift", true
	}), t.TempDir())
	if res == nil || res.Status != schema.StatusFailed {
		t.Fatalf("the drift row should fail identity: %+v", res)
	}
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

// shrinkFixtures copies fixtures/image_edit with every image scaled to 96 pixels wide
// and the output size set to 64x64, and returns the copy's manifest relative to root.
func shrinkFixtures(t *testing.T, root string) string {
	t.Helper()
	src := filepath.Join(root, "fixtures", "image_edit")
	dst := filepath.Join(root, ".cache", "evidencecheck-testdata-fixtures")
	os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(src, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1.0 stays 1.0: the settings' spelling is what AIPerf sends
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	m["settings"].(map[string]any)["size"] = "64x64"
	if inf, ok := m["influence"].(map[string]any)["settings"].(map[string]any); ok {
		inf["size"] = "64x64"
	}
	m["description"] = "A shrunk copy of fixtures/image_edit for internal/evidencecheck testdata: every image scaled to 96 px wide, output size 64x64."
	for _, v := range m["images"].([]any) {
		im := v.(map[string]any)
		f, err := os.Open(filepath.Join(src, im["file"].(string)))
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
		small := image.NewNRGBA(image.Rect(0, 0, w, h))
		xdraw.CatmullRom.Scale(small, small.Rect, img, b, xdraw.Src, nil)
		out := filepath.Join(dst, im["file"].(string))
		of, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := png.Encode(of, small); err != nil {
			t.Fatal(err)
		}
		of.Close()
		data, _ := os.ReadFile(out)
		sum := sha256.Sum256(data)
		im["sha256"], im["bytes"], im["width"], im["height"] = hex.EncodeToString(sum[:]), len(data), w, h
		im["provenance"] = "scaled to 96 px wide (Catmull-Rom) from fixtures/image_edit/" + im["file"].(string) + ": " + im["provenance"].(string)
	}
	out, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dst, "manifest.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(root, filepath.Join(dst, "manifest.json"))
	return rel
}
