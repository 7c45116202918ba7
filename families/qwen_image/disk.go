package qwenimage

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"qualkit/internal/family"
)

// EnvBundleCache names the folder for the row's bundles and the builder's temporaries.
const EnvBundleCache = "QUALKIT_TRTMC_BUNDLE_CACHE"

// bundleDir is where the row's bundles go: the harness's cache at e9132e79; in the
// families layout the case's --basetemp under it (test_e2e.py @ f0a1b69f §
// test_official_checkpoint_e2e always builds into tmp_path), built every run.
func (a TRTMC) bundleDir(env family.Env) string {
	return cmp.Or(a.Config.BundleCache, filepath.Join(env.Root, ".cache", "bundles"))
}

// tmpDir is TMPDIR in every container: the builder writes each engine plan to a temp
// file (model.py @ b40c8184 § build_components), else on Docker's root disk.
func (a TRTMC) tmpDir(env family.Env) string { return filepath.Join(a.bundleDir(env), ".tmp") }

// DiskNeed is what one build writes, estimated (never measured) from the checkpoint:
// one BF16 plan per component, each through a temporary file (model.py @ b40c8184 §
// build_components). Bundle is the components' BF16 weights, Temp the largest.
type DiskNeed struct {
	Bundle, Temp int64
	Largest      string // the component Temp is
}

// diskNeed reads the sizes from the snapshot; an error when it has no weights.
func diskNeed(hfHome string) (DiskNeed, error) {
	var n DiskNeed
	for _, comp := range []string{"text_encoder", "transformer", "vae"} {
		files, err := filepath.Glob(filepath.Join(SnapshotDir(hfHome), comp, "*.safetensors"))
		if err != nil {
			return n, err
		}
		var size int64
		for _, f := range files {
			st, err := os.Stat(f) // through the cache's link to its blob
			if err != nil {
				return n, err
			}
			size += st.Size()
		}
		n.Bundle += size
		if size > n.Temp {
			n.Temp, n.Largest = size, comp
		}
	}
	if n.Bundle == 0 {
		return n, errors.New("the snapshot has no *.safetensors")
	}
	return n, nil
}

// freeBytes is the space an unprivileged user may still write on dir's filesystem, from
// its nearest existing folder. A variable: tests set it.
var freeBytes = func(dir string) (int64, string, error) {
	for {
		var st syscall.Statfs_t
		err := syscall.Statfs(dir, &st)
		if err == nil {
			return int64(st.Bavail) * int64(st.Bsize), dir, nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return 0, dir, err
		}
		dir = parent
	}
}

// disk requires the free space one build needs where its bundle and temporaries go.
func (rs *reqs) disk(a TRTMC, env family.Env) {
	need, err := diskNeed(a.Config.HFHome)
	if err != nil {
		return // the checkpoint's own requirement says what is missing
	}
	dir := a.bundleDir(env)
	free, at, err := freeBytes(dir)
	if err != nil {
		rs.absent(fmt.Sprintf("disk: the free space of %s: %v", dir, err), "make the folder readable, or set "+EnvBundleCache+" to another")
		return
	}
	if total := need.Bundle + need.Temp; free < total {
		rs.absent(fmt.Sprintf("disk: %s has %s free (at %s), but one build needs %s there: the bundle, %s (the checkpoint's BF16 weights, which its BF16 engines hold), and the builder's temporaries in %s, %s (its largest plan, %s): model.py @ b40c8184 § build_components",
			dir, gb(free), at, gb(total), gb(need.Bundle), a.tmpDir(env), gb(need.Temp), strings.ReplaceAll(need.Largest, "_", " ")),
			fmt.Sprintf("free %s on that disk, or set %s to an absolute folder on a disk with that much free (bundles and the builder's temporaries go there)", gb(total-free), EnvBundleCache))
	}
}

func gb(b int64) string { return fmt.Sprintf("%.1f GB (%d bytes)", float64(b)/1e9, b) }
