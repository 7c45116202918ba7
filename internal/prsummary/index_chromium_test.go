//go:build chromium

package prsummary

// Loads index.html in headless Chromium from file://, as a reviewer opens it:
//
//	apt-get install -y chromium
//	go test -tags chromium -run TestIndexInChromium ./internal/prsummary/
//
// Behind a build tag because a browser is not part of `make test`'s machine (and a
// test that skips without one would break the run's zero-skip rule).

import (
	"context"
	"encoding/xml"
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
// --dump-dom prints: each picture's decoded width, and the page's row statuses.
const probe = `<script>window.addEventListener("load", () => {
  for (const img of document.images) img.setAttribute("data-natural-width", img.naturalWidth);
  document.body.setAttribute("data-loaded", "yes");
});</script>`

func TestIndexInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	require.NoError(t, err, "install it: apt-get install -y chromium")
	src := committedRun(t, "qualified")
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	page, err := os.ReadFile(filepath.Join(dir, IndexFile))
	require.NoError(t, err)
	probed := filepath.Join(dir, "index-probe.html")
	require.NoError(t, os.WriteFile(probed, []byte(strings.Replace(string(page), "</body>", probe+"\n</body>", 1)), 0o644))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	profile := t.TempDir()
	shot := filepath.Join(t.TempDir(), "index.png")
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + profile, "--allow-file-access-from-files", "--virtual-time-budget=10000"}
	out, err := exec.CommandContext(ctx, bin, append(args, "--dump-dom", "file://"+probed)...).Output()
	require.NoError(t, err, "chromium --dump-dom")
	dom := string(out)
	assert.Contains(t, dom, `data-loaded="yes"`, "the page finished loading")
	assert.Regexp(t, `data-row="refedit-v1" data-status="qualified"`, dom)

	widths := regexp.MustCompile(`<img [^>]*src="([^"]+)"[^>]*data-natural-width="(\d+)"`).FindAllStringSubmatch(dom, -1)
	require.Len(t, widths, 2, "two pictures: the contact sheet and the latency chart")
	for _, m := range widths {
		w, _ := strconv.Atoi(m[2])
		assert.Greater(t, w, 100, "%s decoded in the browser", m[1])
	}
	// Every link the browser sees resolves to a file of the folder.
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

	_, err = exec.CommandContext(ctx, bin, append(args, "--window-size=1200,1600", "--screenshot="+shot, "file://"+filepath.Join(dir, IndexFile))...).CombinedOutput()
	require.NoError(t, err, "chromium --screenshot")
	st, err := os.Stat(shot)
	require.NoError(t, err)
	assert.Greater(t, st.Size(), int64(10_000), "the screenshot shows a page")
	if keep := os.Getenv("QUALKIT_INDEX_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(keep, b, 0o644)
	}
}
