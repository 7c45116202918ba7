package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ReserveBytes is the space each run keeps on the evidence file system from its start:
// when the disk fills during the run, the reserve is given back so that the evidence of
// what happened (results.json, the reports, run.json, SHA256SUMS) can still be written.
const ReserveBytes = 16 << 20

// reserve is a file of ReserveBytes beside the run folder (never inside it: it is no
// evidence).
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
	_, err = io.CopyN(f, zeros{}, ReserveBytes)
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

// removeStaleReserves removes the reserves of runs whose process is gone (killed before
// it gave its reserve back): the run id ends with the process id.
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

// release gives the reserve back; it reports whether there was one to give.
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

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// writeEvidence runs write; when it failed because the disk is full, it gives the run's
// reserve back and runs it once more.
func (e *Evidence) writeEvidence(write func() error) error {
	err := write()
	if errors.Is(err, syscall.ENOSPC) && e.reserve != nil && e.reserve.release() {
		err = write()
	}
	return err
}

// diskFull is an error when the evidence file system has (almost) no space left, nil
// otherwise: a stage that failed while it was full failed because of it, whatever the
// tool that met it printed.
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
