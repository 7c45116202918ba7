package server

import (
	"context"
	"time"
)

// worker is the single slot every edit runs in and the bounded queue in front of it.
// Admission is counted when the request arrives (running + waiting <= 1 + depth), so
// whether the queue is full never depends on goroutine scheduling.
type worker struct {
	admitted chan struct{} // capacity 1 + depth
	slot     chan struct{} // capacity 1: held while an edit runs
}

func newWorker(depth int) *worker {
	return &worker{admitted: make(chan struct{}, 1+depth), slot: make(chan struct{}, 1)}
}

// admit reserves a place in the queue; false means it is full. Call leave after.
func (w *worker) admit() bool {
	select {
	case w.admitted <- struct{}{}:
		return true
	default:
		return false
	}
}

func (w *worker) leave() { <-w.admitted }

// run waits for the slot (waiters are served in arrival order), runs task in it, and
// returns how long it waited. A cancelled ctx ends the wait without running task.
func (w *worker) run(ctx context.Context, task func()) (time.Duration, error) {
	start := time.Now()
	select {
	case w.slot <- struct{}{}:
	case <-ctx.Done():
		return time.Since(start), ctx.Err()
	}
	defer func() { <-w.slot }()
	waited := time.Since(start)
	task()
	return waited, nil
}
