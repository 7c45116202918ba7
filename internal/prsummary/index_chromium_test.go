package prsummary

// index.html in a real browser, as a reviewer opens it: Debian's headless Chromium loads
// a passed and a failed run's page from file://. Every picture decodes, every link
// resolves, and a screenshot matches its golden (testdata/browser/*.png) within a
// tolerance for anti-aliasing. scripts/browser.sh installs the browser (make test runs
// it); QUALKIT_CHROMIUM names another. Rewrite the goldens with -update.

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
// --dump-dom prints: each picture's decoded width.
const probe = `<script>window.addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-natural-width", img.naturalWidth);
  document.body.setAttribute("data-loaded", "yes");
});</script>`

// Screenshot geometry and the tolerance: at most tolerancePixels of the pixels may differ
// by more than toleranceLevel in a channel (font hinting and anti-aliasing).
const (
	shotW, shotH    = 1280, 1400
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
		kind, row, status string
	}{
		{"qualified", "refedit-v1", "qualified"},
		{"drift", "refedit-v1-native-drift", "failed"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			// The page as the current code writes it, over a committed run's files.
			dir := writtenRun(t, tc.kind, goldenOptions(t))
			page, err := os.ReadFile(filepath.Join(dir, IndexFile))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			args := []string{"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
				"--force-device-scale-factor=1", "--user-data-dir=" + t.TempDir(), "--allow-file-access-from-files"}

			probed := filepath.Join(dir, "index-probe.html")
			require.NoError(t, os.WriteFile(probed, []byte(strings.Replace(string(page), "</body>", probe+"\n</body>", 1)), 0o644))
			out, err := exec.CommandContext(ctx, bin, append(args, "--virtual-time-budget=10000", "--dump-dom", "file://"+probed)...).Output()
			require.NoError(t, err, "chromium --dump-dom")
			dom := string(out)
			assert.Contains(t, dom, `data-loaded="yes"`, "the page finished loading")
			assert.Contains(t, dom, fmt.Sprintf(`data-row="%s" data-status="%s"`, tc.row, tc.status))
			widths := regexp.MustCompile(`<img [^>]*src="([^"]+)"[^>]*data-natural-width="(\d+)"`).FindAllStringSubmatch(dom, -1)
			require.Len(t, widths, 2, "two pictures: the contact sheet and the latency chart")
			for _, m := range widths {
				w, _ := strconv.Atoi(m[2])
				assert.Greater(t, w, 100, "%s decoded in the browser", m[1])
			}
			assertLinksResolve(t, dir, page)

			shot := filepath.Join(t.TempDir(), tc.kind+".png")
			msg, err := exec.CommandContext(ctx, bin, append(args, fmt.Sprintf("--window-size=%d,%d", shotW, shotH),
				"--screenshot="+shot, "file://"+filepath.Join(dir, IndexFile))...).CombinedOutput()
			require.NoError(t, err, "chromium --screenshot: %s", msg)
			compareScreenshot(t, shot, filepath.Join("testdata", "browser", "index-"+tc.kind+".png"))
		})
	}
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
