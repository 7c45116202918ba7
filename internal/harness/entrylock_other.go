//go:build !linux

package harness

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// set takes (or converts to) the read or write lock, at once or errEntryBusy. flock, where
// Linux's open file description locks do not exist: it converts a write lock to a read
// lock by dropping it first, so a writer may slip in between.
func (l *entryLock) set(write bool) error {
	how := unix.LOCK_SH | unix.LOCK_NB
	if write {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	err := unix.Flock(int(l.f.Fd()), how)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errEntryBusy
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", l.f.Name(), err)
	}
	return nil
}
