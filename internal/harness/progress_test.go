package harness

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// lockedLines collects progress lines from several goroutines.
type lockedLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, strings.TrimSpace(string(p)))
	return len(p), nil
}

func (l *lockedLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func progressRow(t *testing.T, out *lockedLines) *row {
	t.Helper()
	return &row{
		s:  &Suite{cfg: SuiteConfig{Progress: out, Heartbeat: 20 * time.Millisecond}},
		c:  Checkpoint{Name: "r1"},
		ev: &RowEvidence{Dir: t.TempDir()},
	}
}

// A silent stage still prints a heartbeat quoting the last line of its log, both to the
// stage's log and to the progress writer; nothing is printed once the stage ended.
func TestHeartbeatQuotesTheLastLogLine(t *testing.T) {
	var out lockedLines
	r := progressRow(t, &out)
	var said []string
	var mu sync.Mutex
	p := r.newProgress("build", func(s string) { mu.Lock(); said = append(said, s); mu.Unlock() }, false)
	log := r.ev.Path(schema.BuildLog)
	p.watch(log)
	require.Eventually(t, func() bool { return len(out.all()) > 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Contains(t, out.all()[0], "qualkit: r1 build +")
	assert.Contains(t, out.all()[0], "still running; build/build.log is empty so far")
	require.NoError(t, os.WriteFile(log, []byte("step 1\nloading weights 40%\n\n"), 0o644))
	require.Eventually(t, func() bool {
		all := out.all()
		return strings.HasSuffix(all[len(all)-1], "last line of build/build.log: loading weights 40%")
	}, 5*time.Second, 5*time.Millisecond)
	p.end()
	n := len(out.all())
	time.Sleep(60 * time.Millisecond)
	assert.Len(t, out.all(), n, "no heartbeat after the stage ended")
	mu.Lock()
	assert.Equal(t, n, len(said), "every line also went to the stage's log")
	mu.Unlock()
}

// One line per new records line, as the server appends them; a half-written line waits.
func TestFollowRecordsPrintsOneLinePerRequest(t *testing.T) {
	var out lockedLines
	r := progressRow(t, &out)
	r.s.cfg.Heartbeat = time.Hour
	p := r.newProgress("benchmark", nil, false)
	defer p.end()
	path := filepath.Join(t.TempDir(), "records.jsonl")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); p.followRecords(path, 2, stop) }()

	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(`{"request_id":"a","status":200}` + "\n" + `{"request_id":"b",`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(out.all()) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.all()[0], "request 1/2 answered (records: request_id a status 200)")
	_, err = f.WriteString(`"status":500}` + "\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(out.all()) == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.all()[1], "request 2/2 answered (records: request_id b status 500)")
	close(stop)
	<-done
}
