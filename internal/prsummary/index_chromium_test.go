package prsummary

// index.html in a real browser, as a reviewer opens it: Debian's headless Chromium loads
// a passed run's page, failed runs' pages (one whose row failed at its last stage, one
// whose row left two stages not run) and a merged run's page (merged_chromium_test.go)
// from file://. Every picture decodes, every link resolves, every stage of a stage strip
// is painted by its state, and a screenshot matches its golden (testdata/browser/*.png)
// within a tolerance for anti-aliasing. scripts/browser.sh installs the browser (make
// test runs it); QUALKIT_CHROMIUM names another. Rewrite the goldens with -update.

import (
	"context"
	"encoding/xml"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probe runs after load and writes what the browser saw into the DOM that
// --dump-dom prints: each picture's decoded width, and the colour each stage of a stage
// strip is painted in.
const probe = `<script>window.addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-natural-width", img.naturalWidth);
  for (const el of document.querySelectorAll(".stage")) el.setAttribute("data-color", getComputedStyle(el).color);
  document.body.setAttribute("data-rows-right", Math.ceil(document.getElementById("rows").getBoundingClientRect().right));
  document.body.setAttribute("data-loaded", "yes");
});</script>`

// Screenshot geometry and the tolerance: at most tolerancePixels of the pixels may differ
// by more than toleranceLevel in a channel (font hinting and anti-aliasing).
const (
	shotW, shotH    = 1280, 1400
	rowsMaxW        = 1400 // the rows table, long reasons included, fits a window this wide
	toleranceLevel  = 48
	tolerancePixels = 0.005
)

func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short (make check): no browser; make test runs it")
	}
	for _, name := range []string{os.Getenv("QUALKIT_CHROMIUM"), "chromium-headless-shell", "chromium"} {
		if name == "" {
			continue
		}
		if bin, err := exec.LookPath(name); err == nil {
			return bin
		}
	}
	t.Fatal("no headless Chromium: bash scripts/browser.sh installs Debian's chromium-headless-shell (as root), or name one with QUALKIT_CHROMIUM")
	return ""
}

func TestIndexInChromium(t *testing.T) {
	bin := chromium(t)
	for _, tc := range []struct {
		kind string
		dir  func(t *testing.T) string
		rows map[string]string
	}{
		{"qualified", func(t *testing.T) string { return writtenRun(t, "qualified", goldenOptions(t)) }, map[string]string{"refedit-v1": "qualified"}},
		{"drift", func(t *testing.T) string { return writtenRun(t, "drift", goldenOptions(t)) }, map[string]string{"refedit-v1-native-drift": "failed"}},
		// A row that failed at quality: its stage strip shows the two stages after it not run.
		{"failed-stages", failedAtQuality, map[string]string{"refedit-v1-native-drift": "failed"}},
		// A row that failed preflight on a broken fixture: its whole reason, fix first.
		{"broken-fixture", failedAtPreflight, map[string]string{"refedit-v1-native-drift": "failed"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			// The page as the current code writes it, over a committed run's files.
			dom := InBrowser(t, bin, tc.dir(t), IndexFile, tc.rows, filepath.Join("testdata", "browser", "index-"+tc.kind+".png"))
			if tc.kind == "failed-stages" {
				for st, want := range map[string]string{"identity": "not-run", "influence": "not-run", "quality": "fail", "benchmark": "pass"} {
					assert.Contains(t, dom, `data-stage="`+st+`" data-stage-status="`+want+`"`)
				}
			}
		})
	}
}

// InBrowser opens the page file of dir in Chromium, as a reviewer does: it must load,
// show each of rows with its status, decode two pictures per row, link only to files of
// dir, paint each stage of its stage strips by its state (passed green, failed red, not
// run grey: never red), and look like the golden screenshot. It returns the DOM the
// browser built.
func InBrowser(t *testing.T, bin, dir, file string, rows map[string]string, golden string) string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, file))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--force-device-scale-factor=1", "--user-data-dir=" + t.TempDir(), "--allow-file-access-from-files"}

	probed := filepath.Join(dir, "index-probe.html")
	require.NoError(t, os.WriteFile(probed, []byte(strings.Replace(string(page), "</body>", probe+"\n</body>", 1)), 0o644))
	defer os.Remove(probed)
	out, err := exec.CommandContext(ctx, bin, append(args, fmt.Sprintf("--window-size=%d,%d", rowsMaxW, shotH), "--virtual-time-budget=10000",
		"--dump-dom", "file://"+probed)...).Output()
	require.NoError(t, err, "chromium --dump-dom")
	dom := string(out)
	assert.Contains(t, dom, `data-loaded="yes"`, "the page finished loading")
	m := regexp.MustCompile(`data-rows-right="(\d+)"`).FindStringSubmatch(dom)
	require.NotNil(t, m, "the rows table, measured")
	right, _ := strconv.Atoi(m[1])
	assert.LessOrEqual(t, right, rowsMaxW, "the rows table fits a %d px window", rowsMaxW)
	for row, status := range rows {
		assert.Contains(t, dom, fmt.Sprintf(`data-row="%s" data-status="%s"`, row, status))
	}
	widths := regexp.MustCompile(`<img [^>]*src="([^"]+)"[^>]*data-natural-width="(\d+)"`).FindAllStringSubmatch(dom, -1)
	require.Len(t, widths, 2*len(rows), "two pictures per row: the contact sheet and the latency chart")
	for _, m := range widths {
		w, _ := strconv.Atoi(m[2])
		assert.Greater(t, w, 100, "%s decoded in the browser", m[1])
	}
	assertLinksResolve(t, dir, page)
	assertStageColours(t, dom)

	shot := filepath.Join(t.TempDir(), "shot.png")
	msg, err := exec.CommandContext(ctx, bin, append(args, fmt.Sprintf("--window-size=%d,%d", shotW, shotH),
		"--screenshot="+shot, "file://"+filepath.Join(dir, file))...).CombinedOutput()
	require.NoError(t, err, "chromium --screenshot: %s", msg)
	compareScreenshot(t, shot, golden)
	return dom
}

var stageColour = regexp.MustCompile(`data-stage-status="([a-z-]+)"[^>]*data-color="rgb\((\d+), (\d+), (\d+)\)"`)

// assertStageColours: every stage the page strips was painted by the browser, a passed
// one green, a failed one red, a stage not run grey.
func assertStageColours(t *testing.T, dom string) {
	t.Helper()
	require.NotEmpty(t, stageColour.FindAllString(dom, -1), "stage strips, painted")
	assert.Empty(t, stageColourProblems(dom))
}

func stageColourProblems(dom string) []string {
	var out []string
	for _, m := range stageColour.FindAllStringSubmatch(dom, -1) {
		r, _ := strconv.Atoi(m[2])
		g, _ := strconv.Atoi(m[3])
		b, _ := strconv.Atoi(m[4])
		ok := false
		switch m[1] {
		case "pass":
			ok = g > r+40 // green
		case "fail":
			ok = r > g+80 // red
		case "not-run":
			ok = max(r, g, b)-min(r, g, b) < 40 // grey, not red
		}
		if !ok {
			out = append(out, fmt.Sprintf("stage %s painted rgb(%d, %d, %d)", m[1], r, g, b))
		}
	}
	return out
}

// The colour check can fail: a stage not run painted as the version-2 page painted a
// not-run status (red), or a failed stage painted green.
func TestStageColourCheckCatchesARedNotRun(t *testing.T) {
	ok := `<span data-stage-status="pass" data-color="rgb(17, 99, 41)"></span><span data-stage-status="fail" data-color="rgb(164, 14, 38)"></span><span data-stage-status="not-run" data-color="rgb(110, 119, 129)"></span>`
	assert.Empty(t, stageColourProblems(ok))
	bad := `<span data-stage-status="not-run" data-color="rgb(192, 28, 28)"></span><span data-stage-status="fail" data-color="rgb(17, 99, 41)"></span>`
	assert.Equal(t, []string{"stage not-run painted rgb(192, 28, 28)", "stage fail painted rgb(17, 99, 41)"}, stageColourProblems(bad))
}

// assertLinksResolve: every link of the page leads to a file of the run folder.
func assertLinksResolve(t *testing.T, dir string, page []byte) {
	dec := xml.NewDecoder(strings.NewReader(string(page)))
	for tok, err := dec.Token(); err == nil; tok, err = dec.Token() {
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "a" {
			for _, a := range el.Attr {
				if a.Name.Local == "href" && !strings.HasPrefix(a.Value, "#") {
					_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(a.Value)))
					assert.NoError(t, err, "link %s", a.Value)
				}
			}
		}
	}
}

// compareScreenshot requires shot to match golden within the tolerance, or rewrites the
// golden with -update. A mismatch keeps the screenshot beside the golden (.got.png).
func compareScreenshot(t *testing.T, shot, golden string) {
	t.Helper()
	if *update {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
		require.NoError(t, os.WriteFile(golden, b, 0o644))
	}
	got, want := decodeRGBA(t, shot), decodeRGBA(t, golden)
	require.Equal(t, want.Bounds(), got.Bounds(), "screenshot size")
	off, total := screenshotDiff(got, want)
	if !withinTolerance(off, total) {
		keep := strings.TrimSuffix(golden, ".png") + ".got.png"
		b, _ := os.ReadFile(shot)
		os.WriteFile(keep, b, 0o644)
		t.Fatalf("%s: %d of %d pixels differ by more than %d levels (%.2f %%, tolerance %.2f %%); the screenshot is %s (rerun with -update if the page changed on purpose)",
			golden, off, total, toleranceLevel, 100*float64(off)/float64(total), 100*tolerancePixels, keep)
	}
	t.Logf("%s: %d of %d pixels differ by more than %d levels", golden, off, total, toleranceLevel)
}

// screenshotDiff counts the pixels of two same-size images that differ by more than
// toleranceLevel in a colour channel.
func screenshotDiff(got, want *image.RGBA) (off, total int) {
	for i := 0; i < len(got.Pix); i += 4 {
		for c := 0; c < 3; c++ {
			if d := int(got.Pix[i+c]) - int(want.Pix[i+c]); d > toleranceLevel || d < -toleranceLevel {
				off++
				break
			}
		}
	}
	return off, got.Bounds().Dx() * got.Bounds().Dy()
}

func withinTolerance(off, total int) bool { return float64(off) <= tolerancePixels*float64(total) }

// The comparison can fail: a page whose status cell turned from red to green (a few
// hundred pixels) is within the tolerance only if it is tiny, and a block of changed
// text is not.
func TestScreenshotToleranceCatchesAChangedPage(t *testing.T) {
	want := decodeRGBA(t, filepath.Join("testdata", "browser", "index-drift.png"))
	got := image.NewRGBA(want.Rect)
	copy(got.Pix, want.Pix)
	off, _ := screenshotDiff(got, want)
	require.Zero(t, off)
	// The table's first rows, painted over: what a changed headline or status does.
	draw.Draw(got, image.Rect(0, 120, shotW, 260), image.NewUniform(image.Black), image.Point{}, draw.Src)
	off, total := screenshotDiff(got, want)
	assert.False(t, withinTolerance(off, total), "%d of %d pixels changed", off, total)
}

func decodeRGBA(t *testing.T, path string) *image.RGBA {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err, "run go test ./internal/prsummary -run TestIndexInChromium -update")
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	out := image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), img.Bounds().Dy()))
	draw.Draw(out, out.Rect, img, img.Bounds().Min, draw.Src)
	return out
}
