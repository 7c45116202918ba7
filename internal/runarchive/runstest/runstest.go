// Package runstest gives tests the committed evidence runs, unpacked: the archives keep
// them small in the tree (docs/evidence.md), each test gets a fresh copy to read or edit.
package runstest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"qualkit/internal/runarchive"
)

// Archives, relative to the repository root.
const (
	// DocsArchive holds the runs docs/evidence/*/README.md describe.
	DocsArchive = "docs/evidence/runs" + runarchive.Ext
	// TestdataArchive holds the checker's small runs (internal/evidencecheck/testdata/README.md).
	TestdataArchive = "internal/evidencecheck/testdata/runs" + runarchive.Ext
)

// Root is the repository root: the nearest folder above the working directory with go.mod.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("runstest: no go.mod above the working directory")
		}
		dir = parent
	}
}

var shared struct {
	sync.Mutex
	dirs map[string]string // archive -> its one extraction
}

// Shared is archive extracted once per test binary, for tests that only read it (or copy
// from it before they edit): the package's TestMain removes it with RemoveShared.
func Shared(tb testing.TB, archive string) string {
	tb.Helper()
	shared.Lock()
	defer shared.Unlock()
	if d, ok := shared.dirs[archive]; ok {
		return d
	}
	tmp, err := os.MkdirTemp("", "qualkit-runs-")
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(tmp, "runs")
	if err := runarchive.Extract(filepath.Join(Root(tb), archive), dst); err != nil {
		os.RemoveAll(tmp)
		tb.Fatal(err)
	}
	if shared.dirs == nil {
		shared.dirs = map[string]string{}
	}
	shared.dirs[archive] = dst
	return dst
}

// RemoveShared removes what Shared extracted.
func RemoveShared() {
	shared.Lock()
	defer shared.Unlock()
	for _, d := range shared.dirs {
		os.RemoveAll(filepath.Dir(d))
	}
	shared.dirs = nil
}
