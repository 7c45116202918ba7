package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdWorker makes every edit wait in the worker slot until release is closed, and
// reports on started each time one enters the slot.
func holdWorker(s *Server) (started <-chan struct{}, release func()) {
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	s.beforeTask = func() {
		in <- struct{}{}
		<-gate
	}
	var once sync.Once
	return in, func() { once.Do(func() { close(gate) }) }
}

func TestQueueFullIs429(t *testing.T) {
	s, recs := newTestServer(t, func(c *Config) { c.QueueDepth = 1 })
	started, release := holdWorker(s)
	t.Cleanup(release)
	img := testPNG(t, 4, 4)

	results := make(chan *httptest.ResponseRecorder, 2)
	go func() { results <- postEdit(t, s, "running", standardParts(img, "invert")...) }()
	<-started // the first edit holds the worker
	go func() { results <- postEdit(t, s, "waiting", standardParts(img, "invert")...) }()
	require.Eventually(t, func() bool { return len(s.worker.admitted) == 2 }, 5*time.Second, time.Millisecond,
		"the second edit is admitted and waits")

	rr := postEdit(t, s, "rejected", standardParts(img, "invert")...)
	assert.Equal(t, http.StatusTooManyRequests, rr.Code)
	assert.Equal(t, "1", rr.Header().Get("Retry-After"))
	e := decodeError(t, rr)
	assert.Contains(t, e.Error.Message, "queue is full")
	assert.Equal(t, "rejected", e.RequestID)

	release()
	for range 2 {
		done := <-results
		assert.Equal(t, http.StatusOK, done.Code, done.Body.String())
	}
	byID := map[string]int{}
	for _, r := range recs.lines(t) {
		byID[r.RequestID] = r.Status
	}
	assert.Equal(t, map[string]int{"running": 200, "waiting": 200, "rejected": 429}, byID)
}

func TestQueueDepthZeroRejectsWhileBusy(t *testing.T) {
	s, _ := newTestServer(t, func(c *Config) { c.QueueDepth = 0 })
	started, release := holdWorker(s)
	t.Cleanup(release)
	img := testPNG(t, 4, 4)
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- postEdit(t, s, "", standardParts(img, "invert")...) }()
	<-started
	assert.Equal(t, http.StatusTooManyRequests, postEdit(t, s, "", standardParts(img, "invert")...).Code)
	release()
	assert.Equal(t, http.StatusOK, (<-first).Code)
	// Idle again: accepted.
	assert.Equal(t, http.StatusOK, postEdit(t, s, "", standardParts(img, "invert")...).Code)
}

func TestQueueMeasuresTheWait(t *testing.T) {
	s, _ := newTestServer(t, nil)
	started, release := holdWorker(s)
	img := testPNG(t, 4, 4)
	first := make(chan *httptest.ResponseRecorder, 1)
	second := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- postEdit(t, s, "", standardParts(img, "invert")...) }()
	<-started
	go func() { second <- postEdit(t, s, "", standardParts(img, "invert")...) }()
	require.Eventually(t, func() bool { return len(s.worker.admitted) == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	release()
	<-first
	rr := <-second
	require.Equal(t, http.StatusOK, rr.Code)
	var resp editResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	assert.GreaterOrEqual(t, resp.Timing.QueueMS, 20.0)
	assert.Greater(t, resp.Timing.HandlerMS, resp.Timing.QueueMS+resp.Timing.TaskMS-0.001)
}

func TestClientGoneWhileQueuedIsRecorded(t *testing.T) {
	s, recs := newTestServer(t, nil)
	started, release := holdWorker(s)
	t.Cleanup(release)
	img := testPNG(t, 4, 4)
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- postEdit(t, s, "first", standardParts(img, "invert")...) }()
	<-started

	body, ct := multipartBody(t, standardParts(img, "invert")...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, EditRoute, body).WithContext(ctx)
	req.Header.Set("Content-Type", ct)
	req.Header.Set(RequestIDHeader, "gone")
	s.ServeHTTP(httptest.NewRecorder(), req)

	release()
	assert.Equal(t, http.StatusOK, (<-first).Code)
	var gone *Record
	for _, r := range recs.lines(t) {
		if r.RequestID == "gone" {
			gone = &r
		}
	}
	require.NotNil(t, gone)
	assert.Equal(t, statusClientClosed, gone.Status)
	assert.Zero(t, len(s.worker.admitted), "the queue is free again")
	assert.Zero(t, len(s.worker.slot), "the worker is free again")
}

func TestPanicInTaskIs500AndFreesTheWorker(t *testing.T) {
	s, recs := newTestServer(t, nil)
	s.beforeTask = func() { panic("boom") }
	img := testPNG(t, 4, 4)
	rr := postEdit(t, s, "boom", standardParts(img, "invert")...)
	assert.Equal(t, http.StatusInternalServerError, rr.Code)
	e := decodeError(t, rr)
	assert.Equal(t, "server_error", e.Error.Type)
	assert.Equal(t, "boom", e.RequestID)
	lines := recs.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, http.StatusInternalServerError, lines[0].Status)

	s.beforeTask = nil
	assert.Equal(t, http.StatusOK, postEdit(t, s, "", standardParts(img, "invert")...).Code)
	assert.Zero(t, len(s.worker.admitted))
	assert.Zero(t, len(s.worker.slot))
}

func TestConcurrentRecordsAreWholeLines(t *testing.T) {
	const n = 24
	s, recs := newTestServer(t, func(c *Config) { c.QueueDepth = n })
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	img := testPNG(t, 16, 16)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body, ct := multipartBody(t, standardParts(img, "blur")...)
			req, err := http.NewRequest(http.MethodPost, srv.URL+EditRoute, body)
			if !assert.NoError(t, err) {
				return
			}
			req.Header.Set("Content-Type", ct)
			req.Header.Set(RequestIDHeader, fmt.Sprintf("c-%02d", i))
			resp, err := srv.Client().Do(req)
			if !assert.NoError(t, err) {
				return
			}
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, fmt.Sprintf("c-%02d", i), resp.Header.Get(RequestIDHeader))
		})
	}
	wg.Wait()
	lines := recs.lines(t)
	require.Len(t, lines, n)
	seen := map[string]bool{}
	for _, r := range lines {
		seen[r.RequestID] = true
		assert.Equal(t, 200, r.Status)
	}
	assert.Len(t, seen, n)
}
