// Package reaper removes what a qualkit process leaves when it ends without cleaning up
// (SIGKILL, go test's -timeout panic, an early exit): containers, images, processes and
// folders. It plays testcontainers' Ryuk, which is off here (its image cannot be pulled).
//
// Start runs the process's own program again as its reaper, joined by a pipe only the
// process writes to; when the pipe closes, however the process ended, the reaper reaps
// (Reap) and prints what it removed to the stderr it holds until then, so whoever reads
// the process's output reads to its end once it is done.
package reaper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"qualkit/internal/serving"
)

// envSpec carries the owner, as JSON, to the reaper; it makes a program a reaper.
const envSpec = "QUALKIT_REAPER"

// Requested says whether this process is a reaper: its main must then exit with Main's code.
func Requested() bool { return os.Getenv(envSpec) != "" }

// Reaper is a running process's reaper, as that process holds it.
type Reaper struct {
	mu   sync.Mutex
	pipe *os.File // the write end: closed when this process ends, or by Close
	done chan struct{}
	err  error
}

// Start starts this process's reaper, program (its own executable) in a process group of
// its own, so that it outlives this process; it returns once the reaper listens.
func Start(program string) (*Reaper, error) {
	if Requested() {
		return nil, errors.New("reaper: a reaper starts no reaper (its program runs Main when Requested)")
	}
	spec, err := json.Marshal(serving.Self())
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("reaper: %w", err)
	}
	ready, readyW, err := os.Pipe()
	if err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("reaper: %w", err)
	}
	cmd := exec.Command(program)
	cmd.Env = append(os.Environ(), envSpec+"="+string(spec))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, os.Stderr, os.Stderr
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pr.Close()
	readyW.Close()
	if err != nil {
		pw.Close()
		ready.Close()
		return nil, fmt.Errorf("reaper: start %s: %w", program, err)
	}
	r := &Reaper{pipe: pw, done: make(chan struct{})}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	// It says "ready" once it listens, or closes the pipe unsaid when it exits first.
	line, _ := bufio.NewReader(ready).ReadString('\n')
	ready.Close()
	if line != "ready\n" {
		pw.Close()
		<-r.done
		return nil, fmt.Errorf("reaper: %s did not start as a reaper (%v): its main must call reaper.Requested and reaper.Main first", program, r.err)
	}
	return r, nil
}

// TrackGroup has the reaper kill what is left of g when this process ends
// (serving.GroupTracker). Nil-safe.
func (r *Reaper) TrackGroup(g serving.Group) { r.send(fmt.Sprintf("group %d %s", g.ID, g.Start)) }

// Remove has the reaper remove path if it is still there when this process ends. Nil-safe.
func (r *Reaper) Remove(path string) {
	if path != "" && !strings.ContainsAny(path, "\n") {
		r.send("remove " + path)
	}
}

func (r *Reaper) send(line string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pipe != nil {
		fmt.Fprintln(r.pipe, line)
	}
}

// Close is the session's normal end: it removes what the session holds in the engine,
// then lets the reaper finish and waits for it, so that no reaper outlives this
// process's output (go test waits a few seconds at most for it to close). Nil-safe.
func (r *Reaper) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	var err error
	if _, derr := serving.Docker(ctx); derr == nil {
		_, err = serving.RemoveSession(ctx, serving.Self())
	}
	r.mu.Lock()
	if r.pipe != nil {
		r.pipe.Close()
		r.pipe = nil
	}
	r.mu.Unlock()
	<-r.done
	return errors.Join(err, r.err)
}

// Main is the reaper: it marks the session present, listens until the pipe closes, then
// removes what the session left.
func Main() int {
	// A Ctrl-C, a CI cancel or a hang-up is for the process it watches over.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	tclog.SetDefault(tclog.NewNoopLogger()) // no banner about the daemon in the report
	var o serving.Owner
	if err := json.Unmarshal([]byte(os.Getenv(envSpec)), &o); err != nil || o.Session == "" {
		fmt.Fprintf(os.Stderr, "qualkit reaper: %s is no owner (%v)\n", envSpec, err)
		return 2
	}
	ready := os.NewFile(3, "ready")
	ctx := context.Background()
	_, dockerErr := serving.Docker(ctx)
	if dockerErr == nil {
		if err := serving.MarkPresent(ctx, o); err != nil {
			fmt.Fprintf(os.Stderr, "qualkit reaper: %v\n", err)
		}
	}
	if ready != nil {
		fmt.Fprint(ready, "ready\n")
		ready.Close()
	}
	report := Reap(ctx, o, listen(os.Stdin), dockerErr == nil)
	if report != "" {
		fmt.Fprint(os.Stderr, report)
	}
	return 0
}

// Left is what the process told its reaper to remove if still there when it ends.
type Left struct {
	Paths  []string
	Groups []serving.Group
}

// listen reads what the process tells until the pipe closes.
func listen(in io.Reader) Left {
	var l Left
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "remove "); ok {
			l.Paths = append(l.Paths, p)
		}
		if g, ok := strings.CutPrefix(line, "group "); ok {
			id, start, _ := strings.Cut(g, " ")
			if n, err := strconv.Atoi(id); err == nil && n > 1 {
				l.Groups = append(l.Groups, serving.Group{ID: n, Start: start})
			}
		}
	}
	return l
}

// killWithin bounds the wait for killed processes; removeWithin, a stalled engine's removals.
const (
	killWithin   = 30 * time.Second
	removeWithin = 5 * time.Minute
)

// Reap removes what o left: its processes (its groups', then those its mark names), its
// containers, images and presence (withDocker), the paths, then the shared build steps
// when no other session is alive. It returns the report to print, "" for nothing.
func Reap(ctx context.Context, o serving.Owner, l Left, withDocker bool) string {
	var left []string
	add := func(what []string, err error) {
		left = append(left, what...)
		if err != nil {
			left = append(left, "FAILED: "+err.Error())
		}
	}
	add(serving.KillGroups(l.Groups, killWithin))
	add(serving.KillSession(o, killWithin))
	ctx, cancel := context.WithTimeout(ctx, removeWithin)
	defer cancel()
	if withDocker {
		add(serving.RemoveSession(ctx, o))
	}
	for _, p := range l.Paths {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			left = append(left, "FAILED: "+err.Error())
			continue
		}
		left = append(left, "path "+p)
	}
	var b strings.Builder
	if len(left) > 0 {
		fmt.Fprintf(&b, "qualkit reaper: %s ended and left these; removed:\n", o)
		for _, l := range left {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if withDocker {
		shared, _, err := serving.SweepShared(ctx, o)
		if len(shared) > 0 {
			fmt.Fprintf(&b, "qualkit reaper: no other qualkit session on the engine: removed %d image(s) of build steps runs share or dead runs left\n", len(shared))
		}
		if err != nil {
			fmt.Fprintf(&b, "qualkit reaper: FAILED: %v\n", err)
		}
	}
	return b.String()
}
