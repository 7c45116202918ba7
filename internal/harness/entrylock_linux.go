package harness

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// set takes (or converts to) the read or write lock, at once or errEntryBusy.
func (l *entryLock) set(write bool) error {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 0}
	if write {
		lk.Type = unix.F_WRLCK
	}
	err := unix.FcntlFlock(l.f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return errEntryBusy
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", l.f.Name(), err)
	}
	return nil
}
