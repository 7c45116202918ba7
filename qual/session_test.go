package qual

import (
	"context"
	"errors"
	"fmt"
	"os"

	"qualkit/internal/serving/reaper"
)

// The test binary's session: its reaper and its temp folder.
//
// Everything a run starts outside Docker writes its temp files under one folder of the
// binary's own (TMPDIR, set before anything runs: t.TempDir's folders, AIPerf's, a go
// build's, pytest's), which the binary removes at its end. Its reaper (package reaper:
// this binary again, joined by a pipe) removes that folder, the evidence reserve, the
// processes, containers and images of the session when the binary ends any other way
// (SIGKILL, go test's -timeout alarm, a forced exit), and waits on no clock: it starts
// once the binary is gone.

// startSession starts the reaper and moves TMPDIR to the session's folder. The folder's
// name is short: AIPerf binds Unix sockets under it (harness.aiperfTempBase keeps a base
// of 32 bytes at most), and a child run's folder is inside its parent test's.
func startSession() (rp *reaper.Reaper, tmp string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("the reaper: %w", err)
	}
	if rp, err = reaper.Start(exe); err != nil {
		return nil, "", err
	}
	if tmp, err = os.MkdirTemp("", "q"); err != nil {
		return nil, "", errors.Join(fmt.Errorf("the session's temp folder: %w", err), rp.Close(context.Background()))
	}
	rp.Remove(tmp)
	os.Setenv("TMPDIR", tmp)
	return rp, tmp, nil
}

// endSession is the binary's normal end: its temp folder goes, then the reaper removes
// what the session still holds (the build steps its runs shared) and exits.
func endSession(rp *reaper.Reaper, tmp string) error {
	err := os.RemoveAll(tmp)
	return errors.Join(err, rp.Close(context.Background()))
}
