package serving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

func inContainer(t *testing.T, runID string, img Image, mounts ...Mount) Option {
	return InContainer(Container{Image: img, RunID: runID, Row: rowOf(t), Mounts: mounts})
}

// start starts spec and registers its Stop before anything is checked.
func start(t *testing.T, spec ServerSpec, opts ...Option) (Server, time.Duration) {
	t.Helper()
	begin := time.Now()
	srv, err := Start(t.Context(), spec, opts...)
	took := time.Since(begin)
	if srv != nil {
		t.Cleanup(func() { srv.Stop(context.Background()) })
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return srv, took
}

func TestContainerServesUntilStop(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	var recs records
	img := prepared(t, runID, spec, &recs)
	sspec := serverSpec(t, bin, "-say", "containerserver: hello from "+runID)

	srv, took := start(t, sspec, inContainer(t, runID, img), WithRecorder(&recs, "serve"))

	if want := fmt.Sprintf("http://127.0.0.1:%d", sspec.Port); srv.URL() != want {
		t.Errorf("URL() = %s, want %s", srv.URL(), want)
	}
	if srv.Runtime() != "container" || srv.ContainerID() == "" {
		t.Errorf("Runtime() = %q, ContainerID() = %q", srv.Runtime(), srv.ContainerID())
	}
	if want := imageTag(rowOf(t), runID); img.Ref != want || !strings.HasPrefix(want, "qualkit/row-containerservesuntilstop:") || want != strings.ToLower(want) {
		t.Errorf("image Ref = %q, want %q (qualkit/<row>:<run id>, lowercase)", img.Ref, want)
	}
	if img.ID == "" || img.BuildS <= 0 {
		t.Errorf("image incomplete: %+v", img)
	}
	// The server binds 127.0.0.1 inside the container: only host networking lets this through.
	resp, err := http.Get(srv.URL() + "/")
	if err != nil {
		t.Fatalf("GET %s/: %v", srv.URL(), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "containerserver") {
		t.Errorf("GET /: %d %q", resp.StatusCode, body)
	}
	if log := waitForLog(t, sspec.Log, "hello from "+runID); !strings.Contains(log, "hello from "+runID) {
		t.Errorf("log %s lacks the server's first line while it runs:\n%s", sspec.Log, log)
	}
	cli := dockerAPI(t)
	ins, err := cli.ContainerInspect(t.Context(), srv.ContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{LabelManaged: "true", LabelRun: runID, LabelRow: rowOf(t), LabelPID: strconv.Itoa(os.Getpid())} {
		if got := ins.Container.Config.Labels[k]; got != want {
			t.Errorf("container label %s = %q, want %q", k, got, want)
		}
	}
	if host, _ := os.Hostname(); ins.Container.Config.Labels[LabelHost] != host {
		t.Errorf("container label %s = %q, want %q", LabelHost, ins.Container.Config.Labels[LabelHost], host)
	}
	if ins.Container.HostConfig.NetworkMode != "host" {
		t.Errorf("network mode %q, want host", ins.Container.HostConfig.NetworkMode)
	}
	if got := ins.Container.Config.Entrypoint; !reflect.DeepEqual(got, []string{"/containerserver"}) {
		t.Errorf("entrypoint %v: the host path of the program was not mapped to the image's", got)
	}
	ii, err := cli.ImageInspect(t.Context(), img.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ii.Config.Labels[LabelRun] != runID || ii.Config.Labels[LabelManaged] != "true" {
		t.Errorf("image labels %v lack the run's", ii.Config.Labels)
	}

	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	requireNoContainers(t, runID)
	// The last line is written on SIGTERM: the log is complete after Stop.
	if log, _ := os.ReadFile(sspec.Log); !strings.Contains(string(log), "shutting down") {
		t.Errorf("log %s lacks the server's last line after Stop:\n%s", sspec.Log, log)
	}
	rec := recs.dockerRun(t)
	if rec.ExitCode != 0 || rec.Error != "" || !strings.Contains(strings.Join(rec.Args, " "), "--network host") || rec.Log != sspec.Log || rec.Stage != "serve" {
		t.Errorf("serve record = %+v, want exit 0, no error, --network host, log %s", rec, sspec.Log)
	}

	// The same server as a process, for the startup comparison in the report.
	pspec := serverSpec(t, bin)
	pstart := time.Now()
	proc, err := Start(t.Context(), pspec)
	if err != nil {
		t.Fatalf("Start (process): %v", err)
	}
	ptook := time.Since(pstart)
	proc.Stop(context.Background())
	if proc.Runtime() != "process" || proc.ContainerID() != "" {
		t.Errorf("process server says runtime %q, container %q", proc.Runtime(), proc.ContainerID())
	}
	t.Logf("image build %.2fs; container start-to-ready %s (Startup %s); process start-to-ready %s (Startup %s)",
		img.BuildS, took, srv.Startup(), ptook, proc.Startup())

	if err := RemoveRunImages(t.Context(), runID); err != nil {
		t.Fatalf("RemoveRunImages: %v", err)
	}
	if left := runImages(t, runID); len(left) > 0 {
		t.Errorf("images of run %s left after RemoveRunImages: %v", runID, left)
	}
}

func TestContainerExitDuringStartup(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	var recs records
	img := prepared(t, runID, spec, &recs)
	sspec := serverSpec(t, bin, "-say", "containerserver: about to fail", "-exit-code", "3")
	sspec.Ready = 60 * time.Second

	begin := time.Now()
	srv, err := Start(t.Context(), sspec, inContainer(t, runID, img), WithRecorder(&recs, "serve"))
	took := time.Since(begin)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("Start returned a server for a container that exits")
	}
	if err == nil {
		t.Fatal("Start: no error for a container that exits with code 3")
	}
	for _, want := range []string{"code 3", "oom_killed=false", "before it was ready", sspec.Log, "about to fail", "exiting with code 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took > 20*time.Second {
		t.Errorf("exit noticed after %s; the Ready deadline is %s", took, sspec.Ready)
	}
	requireNoContainers(t, runID)
	if rec := recs.dockerRun(t); rec.ExitCode != 3 || rec.Error == "" {
		t.Errorf("serve record exit %d error %q, want 3 and the error", rec.ExitCode, rec.Error)
	}
}

func TestContainerNeverReady(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	img := prepared(t, runID, spec, nil)
	sspec := serverSpec(t, bin, "-never-ready")
	sspec.Ready = 3 * time.Second

	begin := time.Now()
	srv, err := Start(t.Context(), sspec, inContainer(t, runID, img))
	took := time.Since(begin)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("Start returned a server that never became ready")
	}
	if err == nil {
		t.Fatal("Start: no error for a server that is never ready")
	}
	for _, want := range []string{"not ready after 3s", "answered 503", sspec.Log} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took < sspec.Ready || took > sspec.Ready+20*time.Second {
		t.Errorf("gave up after %s, want just over the %s deadline", took, sspec.Ready)
	}
	requireNoContainers(t, runID)
}

// A server cut before it was ready is killed, not stopped: it has no requests to drain, and
// one that holds SIGTERM while it loads (-hold-term) would keep its stop waiting stopGrace.
func TestContainerCancelDuringStartup(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	var recs records
	img := prepared(t, runID, spec, &recs)
	sspec := serverSpec(t, bin, "-never-ready", "-hold-term")
	sspec.Ready = time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go cancelOnceLogged(ctx, cancel, sspec.Log, "listening on")

	begin := time.Now()
	srv, err := Start(ctx, sspec, inContainer(t, runID, img), WithRecorder(&recs, "serve"))
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("Start returned a server after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	requireNoContainers(t, runID)
	log, _ := os.ReadFile(sspec.Log)
	assert.Contains(t, string(log), "listening on", "cut once the server ran")
	assert.NotContains(t, string(log), "held", "the server was sent SIGTERM")
	assert.Equal(t, 137, recs.dockerRun(t).ExitCode, "SIGKILL's exit code")
	t.Logf("cut and removed in %s", time.Since(begin))
}

// Mounts are bound as asked (read-only ones refuse writes), and the host paths a command
// names are mapped to where the mounts put them.
func TestContainerMountsAndPathMapping(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	var recs records
	img := prepared(t, runID, spec, &recs)
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "hello.txt"), []byte("mounted-content"), 0o644); err != nil {
		t.Fatal(err)
	}
	sspec := serverSpec(t, bin, "-show-file", filepath.Join(ro, "hello.txt"), "-try-write", filepath.Join(ro, "new.txt"))

	srv, _ := start(t, sspec, inContainer(t, runID, img, Mount{Host: ro, Container: "/data", ReadOnly: true}, Mount{Host: rw, Container: "/out"}),
		WithRecorder(&recs, "serve"))
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	log, _ := os.ReadFile(sspec.Log)
	for _, want := range []string{"show /data/hello.txt: mounted-content", "write /data/new.txt: error:", "read-only file system"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(filepath.Join(ro, "new.txt")); err == nil {
		t.Errorf("the read-only mount was written to")
	}
	if rec := recs.dockerRun(t); !strings.Contains(strings.Join(rec.Args, " "), "--mount type=bind,source="+ro+",target=/data,readonly") {
		t.Errorf("serve record args lack the read-only mount: %v", rec.Args)
	}
	requireNoContainers(t, runID)
}

// A job runs to completion in a container: its exit code and whole log come back, a
// failure says so with the log's tail, and nothing is left behind.
func TestContainerJob(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	var recs records
	img := prepared(t, runID, spec, &recs)
	out := t.TempDir()
	log := filepath.Join(t.TempDir(), "job.log")
	opts := []Option{inContainer(t, runID, img, Mount{Host: out, Container: "/out"}), WithRecorder(&recs, "identity")}

	rec, err := Run(t.Context(), Command{Args: []string{bin, "-say", "job: done", "-try-write", filepath.Join(out, "result.txt"), "-exit-code", "0"}}, log, opts...)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rec.ExitCode != 0 || rec.Stage != "identity" || !strings.Contains(strings.Join(rec.Args, " "), "--entrypoint /containerserver") {
		t.Errorf("record %+v", rec)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "job: done") || !strings.Contains(string(b), "write /out/result.txt: ok") {
		t.Errorf("job log:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(out, "result.txt")); err != nil {
		t.Errorf("the job's output is not on the host: %v", err)
	}

	rec, err = Run(t.Context(), Command{Args: []string{bin, "-say", "job: broken", "-exit-code", "4"}}, log, opts...)
	if err == nil || rec.ExitCode != 4 || !strings.Contains(err.Error(), "exited 4") || !strings.Contains(err.Error(), "job: broken") {
		t.Errorf("a job exiting 4: record %+v, error %v", rec, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	begin := time.Now()
	// Port 0: the kernel's pick. A fixed one is shared by every run on the host network (a
	// pair's other run bound port 1 first: "address already in use", the job exited).
	_, err = Run(ctx, Command{Args: []string{bin, "-never-ready"}}, log, opts...)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 30*time.Second {
		t.Errorf("a job past its deadline: %v after %s", err, time.Since(begin))
	}
	requireNoContainers(t, runID)
	if n := len(recs.all()); n != 4 {
		t.Errorf("%d records, want the build and three jobs", n)
	}
}

// A container job cut by its context stops before its log is read: what it wrote to the
// files it shares with the row, it had written to its log first, and the log kept says
// so (read while the job still ran, the log missed what came after; a batch's report
// then named replays its log did not: TestInterruptAtEveryStage/container/identity).
func TestContainerJobCutKeepsItsWholeLog(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, bin := serverImage(t)
	img := prepared(t, runID, spec, nil)
	out := t.TempDir()
	ticks := filepath.Join(out, "ticks")
	log := filepath.Join(t.TempDir(), "job.log")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Cut once the job has ticked a few times (its file says so).
		for ctx.Err() == nil {
			if b, _ := os.ReadFile(ticks); bytes.Count(b, []byte("\n")) >= 5 {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err := Run(ctx, Command{Args: []string{bin, "-tick", ticks}}, log, inContainer(t, runID, img, Mount{Host: out, Container: out}))
	require.ErrorIs(t, err, context.Canceled)
	requireNoContainers(t, runID)
	logged, _ := os.ReadFile(log)
	written, err := os.ReadFile(ticks)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(written)), "\n")
	require.GreaterOrEqual(t, len(lines), 5)
	for _, l := range lines {
		assert.Contains(t, string(logged), l+"\n", "a line the job wrote to its file before it stopped, missing from its log")
	}
}

func TestSweepLeftoversRemovesDeadRuns(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	current := testRun(t)
	dead, foreign := current+"-dead", current+"-foreign"
	t.Cleanup(func() { RemoveRunImages(context.Background(), dead) })
	spec, bin := serverImage(t)
	img := prepared(t, current, spec, nil)
	srv, _ := start(t, serverSpec(t, bin), inContainer(t, current, img))

	// The dead run is made by a process alive while its image builds and its container is
	// created, then killed: until then no sweep (this one's, or another run's on the same
	// engine) may take its build steps. Its resources name a PID namespace of this test
	// alone, which only this test's sweep (me) calls its own: another run's sweep leaves
	// them as foreign and young, so what this sweep removes it alone removed.
	maker := exec.Command("sleep", "3600")
	if err := maker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maker.Process.Kill(); maker.Wait() })
	me := Self()
	me.PIDNS = "pid:[qualkit-test-" + dead + "]"
	host, _ := os.Hostname()
	// The containers are made from the current run's image, whose labels (this session's)
	// they would inherit: each names a session of its own.
	deadLabels := map[string]string{LabelManaged: "true", LabelRun: dead, LabelRow: "row-dead", LabelPID: strconv.Itoa(maker.Process.Pid),
		LabelHost: host, LabelSession: "dead-session", LabelPIDNS: me.PIDNS}
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadImg, err := build(ctx, cli, spec, imageTag("row-dead", dead), deadLabels, filepath.Join(t.TempDir(), "build.log"), options{})
	deadImage := deadImg.ID
	if err != nil {
		t.Fatal(err)
	}
	create := func(labels map[string]string) string {
		c, err := testcontainers.Run(ctx, img.ID, testcontainers.WithNoStart(), testcontainers.WithLabels(labels),
			testcontainers.WithEntrypoint("/containerserver"), testcontainers.WithCmd("-never-ready"))
		t.Cleanup(func() { testcontainers.TerminateContainer(c) })
		if err != nil {
			t.Fatal(err)
		}
		return c.GetContainerID()
	}
	deadID := create(deadLabels)
	// Another host's fresh container: its process cannot be checked, so it stays.
	foreignID := create(map[string]string{LabelManaged: "true", LabelRun: foreign, LabelRow: "row-foreign", LabelPID: "1", LabelHost: "some-other-host", LabelSession: "foreign-session"})
	// Now the dead run's process is gone.
	maker.Process.Kill()
	maker.Wait()

	removed, err := sweepLeftovers(ctx, cli, current, me, time.Now())
	if err != nil {
		t.Fatalf("SweepLeftovers: %v", err)
	}
	t.Logf("swept:\n%s", strings.Join(removed, "\n"))
	all := strings.Join(removed, "\n")
	for _, want := range []string{"container " + shortID(deadID), "image " + shortID(deadImage), "is gone"} {
		if !strings.Contains(all, want) {
			t.Errorf("removed list lacks %q:\n%s", want, all)
		}
	}
	for _, keep := range []string{shortID(srv.ContainerID()), shortID(img.ID), shortID(foreignID)} {
		if strings.Contains(all, keep) {
			t.Errorf("swept %s, which is not a leftover:\n%s", keep, all)
		}
	}
	if left := runContainers(t, dead); len(left) > 0 {
		t.Errorf("dead run's container still there: %v", left)
	}
	if left := runImages(t, dead); len(left) > 0 {
		t.Errorf("dead run's image still there: %v", left)
	}
	if len(runContainers(t, current)) != 1 || len(runContainers(t, foreign)) != 1 {
		t.Errorf("current run's containers %v, other host's %v: want one each", runContainers(t, current), runContainers(t, foreign))
	}
	if resp, err := http.Get(srv.URL() + ReadyPath); err != nil || resp.StatusCode != 200 {
		t.Errorf("current run's server no longer answers after the sweep: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

func TestSweepRule(t *testing.T) {
	me := Owner{Session: "s-me", Host: "here", PID: 100, PIDStart: "5", PIDNS: "pid:[1]"}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	alive := func(pid int, start string) bool { return pid == 200 && (start == "" || start == "77") }
	labels := func(run, host, pid, start string, more ...string) map[string]string {
		l := map[string]string{LabelManaged: "true", LabelRun: run, LabelHost: host, LabelPID: pid, LabelPIDStart: start}
		for i := 0; i+1 < len(more); i += 2 {
			l[more[i]] = more[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		age     time.Duration
		removed bool
	}{
		{"current run, even if its process is gone", labels("cur", "here", "300", ""), 48 * time.Hour, false},
		{"this process, another run", labels("old", "here", "100", "5"), 48 * time.Hour, false},
		{"this session, whatever its pid says", labels("old", "here", "300", "", LabelSession, "s-me"), 48 * time.Hour, false},
		{"this process's pid, another start: a dead process before it", labels("old", "here", "100", "4"), time.Minute, true},
		{"this host, live process", labels("old", "here", "200", "77"), 48 * time.Hour, false},
		{"this host, process gone", labels("old", "here", "300", ""), time.Minute, true},
		{"this host, pid reused by a later process", labels("old", "here", "200", "12"), time.Minute, true},
		{"this host and namespace, process gone", labels("old", "here", "300", "", LabelPIDNS, "pid:[1]"), time.Minute, true},
		{"another PID namespace, young: its pid 300 means nothing here", labels("old", "here", "300", "", LabelPIDNS, "pid:[2]"), time.Hour, false},
		{"another PID namespace, our own pid, young", labels("old", "here", "100", "5", LabelPIDNS, "pid:[2]", LabelSession, "s-other"), time.Hour, false},
		{"another PID namespace, older than LeftoverAge", labels("old", "here", "300", "", LabelPIDNS, "pid:[2]"), LeftoverAge + time.Hour, true},
		{"other host, young", labels("old", "there", "200", ""), time.Hour, false},
		{"other host, older than LeftoverAge", labels("old", "there", "200", ""), LeftoverAge + time.Hour, true},
		{"this host, unreadable pid, young", labels("old", "here", "x", ""), time.Hour, false},
		{"this host, unreadable pid, old", labels("old", "here", "x", ""), LeftoverAge + time.Hour, true},
		{"a build step every run shares, however old", map[string]string{LabelManaged: "true", LabelHost: "here"}, LeftoverAge + time.Hour, false},
		{"a build step of a dead process (its pid's label step)", map[string]string{LabelManaged: "true", LabelHost: "here", LabelPID: "300"}, time.Minute, true},
	} {
		why, removed := leftoverReason(tc.labels, now.Add(-tc.age), "cur", me, now, alive)
		if removed != tc.removed {
			t.Errorf("%s: leftover = %v (%s), want %v", tc.name, removed, why, tc.removed)
		}
		if removed && why == "" {
			t.Errorf("%s: removed without a reason", tc.name)
		}
	}
	if start, err := processStart(os.Getpid()); err != nil || !processAlive(os.Getpid(), start) || processAlive(os.Getpid(), start+"0") {
		t.Errorf("processStart/processAlive on this process: start %q, err %v", start, err)
	}
}

// Owner.owns: the session's label decides; without one (a build step sorted before it),
// every part of the process's identity the step carries must match.
func TestOwnerOwns(t *testing.T) {
	me := Owner{Session: "s-me", Host: "here", PID: 100, PIDStart: "5", PIDNS: "pid:[1]"}
	step := func(kv ...string) map[string]string {
		l := map[string]string{LabelManaged: "true", LabelHost: "here", LabelPID: "100", LabelPIDStart: "5", LabelPIDNS: "pid:[1]"}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		owns   bool
	}{
		{"its session", step(LabelSession, "s-me"), true},
		{"another session, the same pid (another PID namespace's)", step(LabelSession, "s-other"), false},
		{"a build step of this process", step(), true},
		{"its pid's build step, before the namespace and start labels", map[string]string{LabelManaged: "true", LabelHost: "here", LabelPID: "100"}, true},
		{"a build step of a pid reused later", step(LabelPIDStart, "6"), false},
		{"a build step of another PID namespace", step(LabelPIDNS, "pid:[2]"), false},
		{"a build step of another host", step(LabelHost, "there"), false},
		{"a build step every run shares", map[string]string{LabelManaged: "true", LabelHost: "here"}, false},
	} {
		if got := me.owns(tc.labels); got != tc.owns {
			t.Errorf("%s: owns = %v, want %v", tc.name, got, tc.owns)
		}
	}
	if l := me.labels("run-1", "row-a"); l[LabelSession] != "s-me" || l[LabelPIDNS] != "pid:[1]" || l[LabelRun] != "run-1" || !me.owns(l) {
		t.Errorf("labels %v do not name their owner", l)
	}
	if s := Self(); s.Session == "" || len(s.Session) != 16 || s.PID != os.Getpid() || s.PIDStart == "" || s.PIDNS == "" || Self() != s {
		t.Errorf("Self() = %+v: want a 16-hex session, this pid, its start and namespace, the same every call", s)
	}
}

func TestContainerGPUWithoutToolkitCreatesNothing(t *testing.T) {
	d := requireDocker(t)
	dev := []gpu.Device{{Index: 0, Name: "NVIDIA H200", UUID: "GPU-00000000-0000-0000-0000-000000000000"}}
	noToolkit := schema.DaemonInfo{Endpoint: d.Endpoint, Runtimes: []string{"runc"}}
	if err := checkGPURuntime(noToolkit, dev); err == nil || !strings.Contains(err.Error(), "NVIDIA Container Toolkit") {
		t.Errorf("checkGPURuntime without nvidia runtime: %v, want the toolkit message", err)
	}
	if err := checkGPURuntime(noToolkit, nil); err != nil {
		t.Errorf("checkGPURuntime without GPUs: %v", err)
	}

	runID := testRun(t)
	spec, bin := serverImage(t)
	img := prepared(t, runID, spec, nil)
	sspec := serverSpec(t, bin)
	srv, err := Start(t.Context(), sspec, inContainer(t, runID, img), WithGPUs(dev))
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("Start started a container with a GPU that does not exist")
	}
	if err == nil {
		t.Fatal("Start: no error for a GPU request it cannot honour")
	}
	if !d.NvidiaRuntime && !strings.Contains(err.Error(), "NVIDIA Container Toolkit") {
		t.Errorf("error lacks the toolkit message:\n%v", err)
	}
	t.Logf("daemon runtimes %v; error: %v", d.Runtimes, err)
	requireNoContainers(t, runID)
	if _, err := os.Stat(sspec.Log); !d.NvidiaRuntime && err == nil {
		t.Errorf("a log was opened before the GPU check")
	}
}

func TestGPURequestRefuses(t *testing.T) {
	if _, err := gpuRequest([]gpu.Device{{Index: 2, Name: "NVIDIA H200"}}); err == nil || !strings.Contains(err.Error(), "GPU 2 (NVIDIA H200) has no UUID") {
		t.Errorf("a GPU without UUID: %v", err)
	}
	if _, err := gpuRequest([]gpu.Device{{UUID: "GPU-a"}, {UUID: "GPU-a"}}); err == nil || !strings.Contains(err.Error(), "GPU 0 (GPU-a) selected twice") {
		t.Errorf("the same GPU twice: %v", err)
	}
	if req, err := gpuRequest(nil); req != nil || err != nil {
		t.Errorf("gpuRequest(nil) = %v, %v: a CPU-only command has no request", req, err)
	}
}

func TestContainerHostConfig(t *testing.T) {
	c := &Container{IPCHost: true, Mounts: []Mount{{Host: "/models", Container: "/m", ReadOnly: true}, {Host: "/out", Container: "/o"}}}
	gpus, err := gpuRequest([]gpu.Device{{UUID: "GPU-a"}, {UUID: "GPU-b"}})
	if err != nil {
		t.Fatal(err)
	}
	var hc container.HostConfig
	hostConfig(c, gpus)(&hc)
	wantDR := []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: []string{"GPU-a", "GPU-b"}, Capabilities: [][]string{{"gpu"}}}}
	if !reflect.DeepEqual(hc.DeviceRequests, wantDR) {
		t.Errorf("DeviceRequests mismatch:\n got %+v\nwant %+v", hc.DeviceRequests, wantDR)
	}
	if hc.DeviceRequests[0].Count != 0 {
		t.Errorf("Count = %d; Docker rejects Count together with DeviceIDs", hc.DeviceRequests[0].Count)
	}
	wantMounts := []mount.Mount{
		{Type: mount.TypeBind, Source: "/models", Target: "/m", ReadOnly: true},
		{Type: mount.TypeBind, Source: "/out", Target: "/o"},
	}
	if !reflect.DeepEqual(hc.Mounts, wantMounts) {
		t.Errorf("Mounts mismatch:\n got %+v\nwant %+v", hc.Mounts, wantMounts)
	}
	if hc.NetworkMode != "host" || hc.Init == nil || !*hc.Init || hc.IpcMode != "host" {
		t.Errorf("NetworkMode %q Init %v IpcMode %q, want host, an init process, host", hc.NetworkMode, hc.Init, hc.IpcMode)
	}
	gpus.DeviceIDs[0] = "changed"
	if hc.DeviceRequests[0].DeviceIDs[0] != "GPU-a" {
		t.Errorf("the HostConfig shares the request's slices")
	}
	var cpu container.HostConfig
	hostConfig(&Container{}, nil)(&cpu)
	if cpu.DeviceRequests != nil || cpu.IpcMode != "" {
		t.Errorf("a CPU-only container got device requests %+v, ipc %q", cpu.DeviceRequests, cpu.IpcMode)
	}
}

func TestContainerImageTag(t *testing.T) {
	for _, tc := range []struct{ row, run, want string }{
		{"qwen-image-edit-2511", "20261202T150405Z-42", "qualkit/qwen-image-edit-2511:20261202t150405z-42"},
		{"Qwen/Image Edit", "Run_1", "qualkit/qwen-image-edit:run_1"},
	} {
		if got := imageTag(tc.row, tc.run); got != tc.want {
			t.Errorf("imageTag(%q, %q) = %q, want %q", tc.row, tc.run, got, tc.want)
		}
	}
}

// TestDockerReportsDaemon checks the endpoint and version; run again by the fallback test
// with a bad DOCKER_HOST, it checks that the endpoint actually used is reported.
func TestDockerReportsDaemon(t *testing.T) {
	d := requireDocker(t)
	t.Logf("%+v", d)
	if d.ServerVersion == "" || d.StorageDriver == "" || len(d.Runtimes) == 0 {
		t.Errorf("DaemonInfo incomplete: %+v", d)
	}
	if !strings.Contains(d.Endpoint, "://") {
		t.Errorf("Endpoint %q is not a daemon address", d.Endpoint)
	}
	v, err := dockerAPI(t).ServerVersion(t.Context(), client.ServerVersionOptions{})
	if err != nil || v.Version != d.ServerVersion {
		t.Errorf("ServerVersion %q, the API says %q (%v)", d.ServerVersion, v.Version, err)
	}
	if bad := os.Getenv("QUALKIT_TEST_BAD_DOCKER_HOST"); bad != "" {
		if d.IgnoredDockerHost != bad || d.Endpoint == bad {
			t.Errorf("with DOCKER_HOST=%s: Endpoint %q IgnoredDockerHost %q; want the endpoint used and the ignored one", bad, d.Endpoint, d.IgnoredDockerHost)
		}
	} else if d.IgnoredDockerHost != "" {
		t.Errorf("IgnoredDockerHost %q with a working DOCKER_HOST", d.IgnoredDockerHost)
	}
}

func TestDockerReportsFallbackFromBadDockerHost(t *testing.T) {
	requireDocker(t)
	bad := "unix://" + filepath.Join(t.TempDir(), "no-daemon.sock")
	// testcontainers resolves the daemon once per process: ask a fresh one.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDockerReportsDaemon$", "-test.v")
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+bad, "QUALKIT_TEST_BAD_DOCKER_HOST="+bad)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDockerReportsDaemon") {
		t.Errorf("TestDockerReportsDaemon with DOCKER_HOST=%s: %v\n%s", bad, err, out)
	}
}

func TestContainerImageRefNeverPulled(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	_, err := PrepareImage(t.Context(), ImageSpec{Ref: "qualkit/absent-" + strings.ToLower(runID) + ":none"}, runID, rowOf(t), filepath.Join(t.TempDir(), "b.log"))
	if err == nil || !strings.Contains(err.Error(), "never pulls") || !cerrdefs.IsNotFound(err) {
		t.Errorf("PrepareImage with an absent image: %v, want not found and never pulls", err)
	}
	requireNoContainers(t, runID)
}

func TestContainerDockerfileBases(t *testing.T) {
	df := filepath.Join(t.TempDir(), "Dockerfile")
	os.WriteFile(df, []byte("ARG BASE=x\nFROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.01-py3 AS build\nRUN true\nfrom build as final\nFROM scratch\nFROM ${BASE}\nFROM debian:12\n"), 0o644)
	got, err := DockerfileBases(df, nil)
	want := []string{"nvcr.io/nvidia/pytorch:25.01-py3", "debian:12"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DockerfileBases = %v, %v; want %v", got, err, want)
	}
}

// What the engine is asked to create, read back through its container inspect: host
// networking with no other network attached (testcontainers attaches its own bridge
// network on an engine without "bridge", as the H200 device's is started, and the
// container then fails to start: seen there), --init, --ipc=host, the mounts, and the
// GPUs as one nvidia device request for exactly the leased UUIDs with the gpu
// capability. The container is created, never started, so no NVIDIA runtime is needed.
func TestContainerCreateRequestAsTheEngineSeesIt(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	spec, _ := serverImage(t)
	img := prepared(t, runID, spec, &records{})
	mountDir := t.TempDir()
	c := &Container{Image: img, RunID: runID, Row: rowOf(t), IPCHost: true, Mounts: []Mount{{Host: mountDir, Container: "/hf", ReadOnly: true}}}
	gpus, err := gpuRequest([]gpu.Device{{UUID: "GPU-1a29d95f-1341-bec7-5719-3b85680c6198"}})
	require.NoError(t, err)
	r, err := newRun(c, Command{Args: []string{"/containerserver", "-never-ready"}}, options{})
	require.NoError(t, err)
	r.host = hostConfig(c, gpus)
	ct, err := runOnHostNetwork(t.Context(), img.ID, append(r.opts(stdlog.New(io.Discard, "", 0)), testcontainers.WithNoStart())...)
	t.Cleanup(func() { testcontainers.TerminateContainer(ct) })
	require.NoError(t, err)

	res, err := dockerAPI(t).ContainerInspect(t.Context(), ct.GetContainerID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	hc := res.Container.HostConfig
	assert.Equal(t, "host", string(hc.NetworkMode))
	var attached []string
	for name := range res.Container.NetworkSettings.Networks {
		attached = append(attached, name)
	}
	assert.Equal(t, []string{"host"}, attached, "no network of testcontainers' own attached")
	assert.True(t, *hc.Init)
	assert.Equal(t, "host", string(hc.IpcMode))
	require.Len(t, hc.Mounts, 1)
	assert.Equal(t, "/hf", hc.Mounts[0].Target)
	assert.True(t, hc.Mounts[0].ReadOnly)
	require.Len(t, hc.DeviceRequests, 1)
	dr := hc.DeviceRequests[0]
	assert.Equal(t, "nvidia", dr.Driver)
	assert.Equal(t, gpus.DeviceIDs, dr.DeviceIDs, "the GPUs by UUID, never all")
	assert.Zero(t, dr.Count)
	assert.Equal(t, [][]string{{"gpu"}}, dr.Capabilities)
}

// The failure runOnHostNetwork avoids, reproduced here: testcontainers' own path, on an
// engine whose default bridge network it cannot find (simulated by naming one that does
// not exist, as "bridge": "none" leaves none), attaches a network of its own to a
// host-network container.
func TestTestcontainersAttachesItsNetworkWithoutABridge(t *testing.T) {
	requireDocker(t)
	// reaper_default is one name on the engine. A run beside this one (docs/ci.md's
	// pairs) runs this test too, and its cleanup removed the network from this one's
	// created container. The runs of a host take turns, by a lock in qualkit's cache.
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(cache, "qualkit"), 0o755))
	lock, err := os.OpenFile(filepath.Join(cache, "qualkit", "reaper-default.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { lock.Close() }) // the last cleanup: the lock is released after the network's removal
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	runID := testRun(t)
	spec, _ := serverImage(t)
	img := prepared(t, runID, spec, &records{})
	c := &Container{Image: img, RunID: runID, Row: rowOf(t)}
	r, err := newRun(c, Command{Args: []string{"/containerserver", "-never-ready"}}, options{})
	require.NoError(t, err)
	provider, err := testcontainers.NewDockerProvider(testcontainers.WithDefaultBridgeNetwork("qualkit-no-such-bridge"))
	require.NoError(t, err)
	defer provider.Close()
	req := testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{Image: img.ID}}
	for _, o := range r.opts(stdlog.New(io.Discard, "", 0)) {
		require.NoError(t, o.Customize(&req))
	}
	api := dockerAPI(t)
	ctr, err := provider.CreateContainer(t.Context(), req.ContainerRequest)
	t.Cleanup(func() {
		testcontainers.TerminateContainer(ctr)
		api.NetworkRemove(context.Background(), testcontainers.ReaperDefault, client.NetworkRemoveOptions{})
	})
	require.NoError(t, err)
	res, err := api.ContainerInspect(t.Context(), ctr.GetContainerID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, "host", string(res.Container.HostConfig.NetworkMode))
	assert.Contains(t, res.Container.NetworkSettings.Networks, testcontainers.ReaperDefault, "testcontainers attached its own network")
}

// A run removes its own images and nothing another may build on: two runs of one
// Dockerfile FROM a shared base (untouched by qualkit's labels, as the double's Python
// image is); removing the first run's images leaves the second's image, every parent it
// has and the base; a sweep of shared build steps removes nothing while a session is
// alive, and never the base.
func TestImageRemovalKeepsWhatOthersShare(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	cli := dockerAPI(t)
	spec, _ := serverImage(t)
	runA, runB := testRun(t)+"-a", testRun(t)+"-b"
	t.Cleanup(func() { RemoveRunImages(context.Background(), runA); RemoveRunImages(context.Background(), runB) })
	base := "qualkit-test/shared-base:" + strings.ToLower(Self().Session)
	_, err := build(ctx, cli, spec, base, nil, filepath.Join(t.TempDir(), "base.log"), options{})
	require.NoError(t, err)
	t.Cleanup(func() { cli.ImageRemove(context.Background(), base, client.ImageRemoveOptions{PruneChildren: true}) })
	df := "FROM " + base + "\nCOPY containerserver /again\n"
	require.NoError(t, os.WriteFile(filepath.Join(spec.Context, "Dockerfile"), []byte(df), 0o644))
	imgA := prepared(t, runA, spec, nil)
	imgB := prepared(t, runB, spec, nil)

	require.NoError(t, RemoveRunImages(ctx, runA))
	assert.Empty(t, runImages(t, runA), "run A's images")
	chain := func(id string) []string {
		all, err := cli.ImageList(ctx, client.ImageListOptions{All: true})
		require.NoError(t, err)
		parent := map[string]string{}
		for _, img := range all.Items {
			parent[img.ID] = img.ParentID
		}
		var ids []string
		for ; id != ""; id = parent[id] {
			_, ok := parent[id]
			require.True(t, ok, "image %s of the chain from %s is gone", id, imgB.ID)
			ids = append(ids, id)
		}
		return ids
	}
	before := chain(imgB.ID)
	baseID, err := cli.ImageInspect(ctx, base)
	require.NoError(t, err)
	require.Greater(t, len(before), 3, "run B's image has its build steps as parents")
	_, err = cli.ImageInspect(ctx, imgA.ID)
	assert.Error(t, err, "run A's tagged image is gone")

	// This process is alive: for a sweep standing in for another session, it is a live one.
	other := Owner{Session: "sweeper-" + Self().Session, Host: Self().Host, PID: -1}
	removed, alive, err := SweepShared(ctx, other)
	require.NoError(t, err)
	assert.NotEmpty(t, alive, "this process's images make a live session")
	assert.Empty(t, removed, "a sweep while a session is alive")
	assert.Equal(t, before, chain(imgB.ID), "run B's chain after the sweep")

	// The process's end: run B's images, then what the session holds; then a sweep by
	// this session removes the shared steps unless another session is alive, and never
	// the base.
	require.NoError(t, RemoveRunImages(ctx, runB))
	// No build of this process is in flight: its own steps (pid, start time, namespace,
	// row) go with its last run's images; the steps every run shares stay.
	for _, id := range before {
		if res, err := cli.ImageInspect(ctx, id); err == nil {
			assert.Empty(t, res.Config.Labels[LabelPID], "build step %s names this process after its last run's images went: %v", shortID(id), res.Config.Labels)
		}
	}
	_, err = RemoveSession(ctx, Self())
	require.NoError(t, err)
	removed, alive, err = SweepShared(ctx, Self())
	require.NoError(t, err)
	t.Logf("the sweep: alive %q, removed %v", alive, removed)
	_, err = cli.ImageInspect(ctx, base)
	assert.NoError(t, err, "the shared base image is never removed")
	steps := before[1 : len(before)-len(chain(baseID.ID))]
	for _, id := range steps {
		_, err := cli.ImageInspect(ctx, id)
		if alive == "" {
			assert.Error(t, err, "build step %s with no session alive", id)
		} else {
			t.Logf("another session is alive (%s): build step %s stays, as it must", alive, id)
		}
	}
}

// A live session's server survives another session's sweep, wherever that session runs:
// one in another PID namespace cannot check this process (its pid means nothing there),
// one in this namespace finds it alive. Removed from outside all the same (docker rm -f),
// the server says so when asked why it ended (Died), rather than that the engine is gone.
func TestLiveSessionsServerSurvivesSweeps(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	runID := testRun(t)
	spec, bin := serverImage(t)
	img := prepared(t, runID, spec, nil)
	srv, _ := start(t, serverSpec(t, bin), inContainer(t, runID, img))
	cli := dockerAPI(t)
	me := Self()
	for _, sweeper := range []Owner{
		{Session: "other-namespace", Host: me.Host, PID: me.PID + 1, PIDStart: "1", PIDNS: "pid:[1]"},
		{Session: "same-namespace", Host: me.Host, PID: -1, PIDNS: me.PIDNS},
	} {
		removed, err := sweepLeftovers(ctx, cli, "", sweeper, time.Now())
		require.NoError(t, err)
		for _, r := range removed {
			assert.NotContains(t, r, shortID(srv.ContainerID()), "swept by session %s", sweeper.Session)
		}
	}
	require.Len(t, runContainers(t, runID), 1, "the server's container after the sweeps")
	require.NoError(t, srv.Died(ctx), "a server that runs has not died")

	_, err := cli.ContainerRemove(ctx, srv.ContainerID(), client.ContainerRemoveOptions{Force: true})
	require.NoError(t, err)
	died := srv.Died(ctx)
	require.Error(t, died)
	assert.Contains(t, died.Error(), "was removed from outside the run")
	var f *Failure
	require.ErrorAs(t, died, &f)
	assert.Equal(t, schema.KindInfrastructure, f.Kind)
}

// UnderEntrypoint runs the command as the image's CMD, under its own ENTRYPOINT (NVIDIA's
// sets up CUDA forward compatibility, then runs its arguments); otherwise the command's
// program replaces the ENTRYPOINT. The engine's config and the recorded docker run agree.
func TestContainerRunUnderTheImagesEntrypoint(t *testing.T) {
	img := Image{ID: "sha256:abc", Ref: "trtmc-qual"}
	cmd := Command{Args: []string{"python3", "-m", "pytest", "-v"}}
	for _, under := range []bool{false, true} {
		r, err := newRun(&Container{Image: img, RunID: "run", Row: "row", UnderEntrypoint: under}, cmd, options{})
		require.NoError(t, err)
		var req testcontainers.GenericContainerRequest
		for _, o := range r.opts(stdlog.New(io.Discard, "", 0)) {
			require.NoError(t, o.Customize(&req))
		}
		var cfg container.Config
		req.ConfigModifier(&cfg)
		tail := r.argv[slices.Index(r.argv, img.ID):]
		if under {
			assert.Nil(t, cfg.Entrypoint, "the image's entrypoint")
			assert.Equal(t, cmd.Args, []string(cfg.Cmd))
			assert.NotContains(t, r.argv, "--entrypoint")
			assert.Equal(t, append([]string{img.ID}, cmd.Args...), tail)
		} else {
			assert.Equal(t, []string{"python3"}, []string(cfg.Entrypoint))
			assert.Equal(t, cmd.Args[1:], []string(cfg.Cmd))
			assert.Equal(t, []string{"--entrypoint", "python3"}, r.argv[slices.Index(r.argv, img.ID)-2:slices.Index(r.argv, img.ID)])
			assert.Equal(t, append([]string{img.ID}, cmd.Args[1:]...), tail)
		}
	}
}
