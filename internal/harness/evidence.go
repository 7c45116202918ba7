package harness

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"qualkit/internal/attest"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// Evidence is one run's evidence folder: evidence/<run id>/, one subfolder per row.
type Evidence struct {
	Dir, RunID string
	reserve    *reserve // kept for the evidence when the disk fills
}

// NewEvidence creates the run folder and proves it writable before any stage runs.
func NewEvidence(root, runID string) (*Evidence, error) {
	dir := filepath.Join(root, runID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence folder %s: %w (choose a writable folder with -qualkit.evidence)", dir, err)
	}
	probe := filepath.Join(dir, ".write-probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		return nil, fmt.Errorf("evidence folder %s is not writable: %w (choose another with -qualkit.evidence)", dir, err)
	}
	os.Remove(probe)
	res, err := newReserve(root, runID)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("evidence folder %s: %w", dir, err)
	}
	return &Evidence{Dir: dir, RunID: runID, reserve: res}, nil
}

// Close gives the run's reserve back: once the run's files are written, or abandoned.
func (e *Evidence) Close() {
	if e.reserve != nil {
		e.reserve.release()
	}
}

// NewRunID is a sortable run id: UTC time, process id and a random part (time and pid
// collide across PID namespaces, two CI runners on one engine).
func NewRunID(now time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", now.UTC().Format("20060102T150405Z"), os.Getpid(), hex.EncodeToString(b))
}

func (e *Evidence) Row(name string) (*RowEvidence, error) {
	dir := filepath.Join(e.Dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("row evidence %s: %w", dir, err)
	}
	return &RowEvidence{Dir: dir}, nil
}

// WriteChecksums writes dir/SHA256SUMS over every file under dir (sha256sum format,
// sorted) and returns its sha256: the anchor that, kept outside the folder, proves every file.
func WriteChecksums(dir string) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == schema.ChecksumFile || rel == attest.File || !d.Type().IsRegular() {
			return nil
		}
		sum, err := schema.FileSHA256(path)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("checksum evidence %s: %w", dir, err)
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	list := []byte(strings.Join(lines, "\n") + "\n")
	if err := os.WriteFile(filepath.Join(dir, schema.ChecksumFile), list, 0o644); err != nil {
		return "", fmt.Errorf("checksum evidence %s: %w", dir, err)
	}
	return bytesSHA256(list), nil
}

// RowEvidence is one row's folder; it records every command to commands.jsonl.
type RowEvidence struct {
	Dir     string
	mu      sync.Mutex
	pending [][]byte // records the full disk had no room for
}

// Path is an absolute path inside the row folder, its parent created.
func (r *RowEvidence) Path(rel string) string {
	p := filepath.Join(r.Dir, rel)
	os.MkdirAll(filepath.Dir(p), 0o755)
	return p
}

// relInside is path relative to base when it lies inside base, else path as given.
func relInside(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func (r *RowEvidence) WriteJSON(rel string, v any) error { return writeJSON(r.Path(rel), v) }

func (r *RowEvidence) WriteFile(rel string, data []byte) error {
	return writeWhole(r.Path(rel), data)
}

// Record appends one command record to commands.jsonl (the row's serving.Recorder). A
// record the disk had no room for is written by the next Record or Flush: whole lines,
// no command lost.
func (r *RowEvidence) Record(rec schema.CommandRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec.Env = serving.RedactEnv(rec.Env)
	rec.Log = relInside(r.Dir, rec.Log)
	b, _ := json.Marshal(rec)
	r.pending = append(r.pending, append(b, '\n'))
	return r.flush()
}

func (r *RowEvidence) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flush()
}

func (r *RowEvidence) flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	f, err := os.OpenFile(r.Path(schema.CommandsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := f.Write(bytes.Join(r.pending, nil)); err != nil {
		f.Truncate(st.Size()) // no torn line
		return fmt.Errorf("commands.jsonl: %w", err)
	}
	r.pending = nil
	return nil
}

func writeJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return writeWhole(path, append(b, '\n'))
}

// writeWhole writes data to path through a temporary file renamed into place: never a torn file.
func writeWhole(path string, data []byte) error {
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func bytesSHA256(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

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
