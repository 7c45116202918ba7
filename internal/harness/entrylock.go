package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// entryLock locks a bundle cache entry (.cache/bundles/<key>), shared by every process
// of the checkout: a row holds the read lock on <key>.lock until it ends, and removing or
// rebuilding the entry takes the write lock (else a run that did not trust an entry
// removed it while another's correctness case read it). On Linux they are open file
// description locks: rows of one process exclude each other as processes do, a dead
// process drops them, and a write lock becomes a read lock atomically.
type entryLock struct{ f *os.File }

// errEntryBusy: another holder keeps the entry from being locked as asked.
var errEntryBusy = errors.New("the bundle cache entry is in use by another run")

// lockEntry opens path (creating it) and takes its read lock (write: its write lock).
// With wait it retries until ctx ends, else it fails at once with errEntryBusy.
func lockEntry(ctx context.Context, path string, write, wait bool) (*entryLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &entryLock{f: f}
	for {
		err := l.set(write)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errEntryBusy) || !wait {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the bundle cache entry %s, which another run is building: %w", path, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// share turns a write lock into a read lock, with no moment between them unlocked.
func (l *entryLock) share() error { return l.set(false) }

// unlock drops the lock (closing the file drops it); nil-safe.
func (l *entryLock) unlock() {
	if l != nil && l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
