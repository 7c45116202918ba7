package server

import (
	"syscall"
	"time"
)

// threadCPU is the CPU time (user and system) the calling OS thread has used; the
// caller holds its goroutine on the thread (runtime.LockOSThread) between two readings.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
