package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ReserveBytes is the space each run keeps on the evidence file system, in a file beside
// the run folder: when the disk fills, it is given back so that the evidence of what
// happened can still be written.
const ReserveBytes = 16 << 20

type reserve struct {
	mu   sync.Mutex
	path string // "" once given back
}

func newReserve(root, runID string) (*reserve, error) {
	removeStaleReserves(root)
	path := filepath.Join(root, reservePrefix+runID)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(make([]byte, ReserveBytes))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("the evidence file system has less than the %d MiB a run keeps in reserve for its evidence: %w (free space there, or choose another folder with -qualkit.evidence)", ReserveBytes>>20, err)
	}
	return &reserve{path: path}, nil
}

const reservePrefix = ".qualkit-reserve-"

// removeStaleReserves removes the reserves of runs whose process is gone (by NewRunID's pid).
func removeStaleReserves(root string) {
	paths, _ := filepath.Glob(filepath.Join(root, reservePrefix+"*"))
	for _, p := range paths {
		f := strings.Split(strings.TrimPrefix(filepath.Base(p), reservePrefix), "-") // NewRunID: time-pid[-...]
		if len(f) < 2 {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.Remove(p)
		}
	}
}

// release gives the reserve back, saying whether there was one.
func (r *reserve) release() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.path == "" {
		return false
	}
	os.Remove(r.path)
	r.path = ""
	return true
}

// writeEvidence runs write, and once more with the reserve given back if the disk was full.
func (e *Evidence) writeEvidence(write func() error) error {
	err := write()
	if errors.Is(err, syscall.ENOSPC) && e.reserve != nil && e.reserve.release() {
		err = write()
	}
	return err
}

// diskFull is an error when the evidence file system has (almost) no space left: a
// stage that failed then failed because of it, whatever its tool printed.
func (e *Evidence) diskFull() error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(e.Dir, &st); err != nil {
		return nil
	}
	free := st.Bavail * uint64(st.Bsize)
	if free >= 1<<20 {
		return nil
	}
	return fmt.Errorf("no space left on device: the evidence file system at %s has %d bytes free", e.Dir, free)
}
