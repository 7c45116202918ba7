package harness

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// DefaultHeartbeat is the longest a running stage stays silent.
const DefaultHeartbeat = 30 * time.Second

// progress prints what a row's running stage does: a line per event and a heartbeat
// quoting the last line of its log, to the stage subtest's log and SuiteConfig.Progress.
type progress struct {
	mu      sync.Mutex
	say     func(string) // the running stage subtest's t.Log; nil outside subtests
	r       *row
	stage   string
	start   time.Time
	log     string // the file whose last line a heartbeat quotes, "" for none
	done    chan struct{}
	wg      sync.WaitGroup
	pending []string // the lines before attach, of work begun early
	// early: its work began during the stage before (the build, during preflight);
	// attached is when its own stage began, firstEarly its first earlier command's start.
	early                bool
	attached, firstEarly time.Time
}

func (p *progress) attach(say func(string)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if say != nil {
		for _, line := range p.pending {
			say(line)
		}
	}
	p.say, p.pending, p.attached = say, nil, time.Now()
}

// newProgress starts a stage's heartbeat; with hold its lines wait for attach.
func (r *row) newProgress(name string, say func(string), hold bool) *progress {
	p := &progress{say: say, r: r, stage: name, start: time.Now(), done: make(chan struct{}), early: hold}
	every := r.s.cfg.Heartbeat
	if every <= 0 {
		every = DefaultHeartbeat
	}
	p.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				p.heartbeat()
			}
		}
	})
	return p
}

func (p *progress) end() {
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	p.say = nil
	p.mu.Unlock()
}

// recorder records the stage's commands, those that started before its stage began
// with During preflight.
func (p *progress) recorder() serving.Recorder {
	if !p.early {
		return p.r.ev
	}
	return earlyRecorder{p}
}

type earlyRecorder struct{ p *progress }

func (e earlyRecorder) Record(rec schema.CommandRecord) error {
	p := e.p
	p.mu.Lock()
	if p.attached.IsZero() || rec.Start.Before(p.attached) {
		rec.During = schema.StagePreflight
		if p.firstEarly.IsZero() || rec.Start.Before(p.firstEarly) {
			p.firstEarly = rec.Start
		}
	}
	p.mu.Unlock()
	return p.r.ev.Record(rec)
}

// earlyStart is the start of the first command begun early; zero for none.
func (p *progress) earlyStart() time.Time {
	if p == nil {
		return time.Time{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstEarly
}

// watch makes heartbeats quote the last line of path.
func (p *progress) watch(path string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.log = path
	p.mu.Unlock()
}

func (p *progress) heartbeat() {
	p.mu.Lock()
	log := p.log
	p.mu.Unlock()
	msg := "still running"
	if log != "" {
		if last := lastLine(log, 160); last != "" {
			msg += "; last line of " + relInside(p.r.ev.Dir, log) + ": " + last
		} else {
			msg += "; " + relInside(p.r.ev.Dir, log) + " is empty so far"
		}
	}
	p.printf("%s", msg)
}

func (p *progress) printf(format string, args ...any) {
	if p == nil {
		return
	}
	line := fmt.Sprintf("qualkit: %s %s +%s: %s", p.r.c.Name, p.stage,
		time.Since(p.start).Round(time.Second), fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.say != nil {
		p.say(line)
	} else if p.early && p.attached.IsZero() {
		p.pending = append(p.pending, line)
	}
	if w := p.r.s.cfg.Progress; w != nil {
		fmt.Fprintln(w, line)
	}
}

func lastLine(path string, n int) string {
	tail := serving.TailFile(path, 4096)
	lines := strings.Split(tail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return wire.Clip([]byte(l), n)
		}
	}
	return ""
}

// followRecords prints a line per new line of the server's records file until stop closes.
func (p *progress) followRecords(path string, total int, stop <-chan struct{}) {
	var offset int64
	seen := 0
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for _, line := range readNewLines(path, &offset) {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			seen++
			status := ""
			if v, ok := rec["status"]; ok {
				status = fmt.Sprintf(" status %v", v)
			}
			p.printf("request %d/%d answered (records: request_id %v%s)", seen, total, rec["request_id"], status)
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// readNewLines returns the whole lines appended since *offset and advances it.
func readNewLines(path string, offset *int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(*offset, 0); err != nil {
		return nil
	}
	var lines []string
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return lines // a partial last line is read again once it is whole
		}
		*offset += int64(len(line))
		if s := strings.TrimSpace(line); s != "" {
			lines = append(lines, s)
		}
	}
}
