package harness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/harness/gpu"
	"qualkit/internal/schema"
)

// requireDocker fails the test, with the reason and the cure, when no daemon answers.
func requireDocker(t *testing.T) schema.DaemonInfo {
	t.Helper()
	// The reaper's image cannot be pulled here; the harness removes what it starts itself.
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	d, err := Docker(t.Context())
	if err != nil {
		t.Fatalf("container tests need a Docker engine: %v", err)
	}
	return d
}

// serverContext builds testdata/containerserver statically and writes a FROM scratch
// Dockerfile next to it: the context of the image the tests run.
func serverContext(t *testing.T) ContainerImage {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "containerserver"), "./testdata/containerserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build test server: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY containerserver /containerserver\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	return ContainerImage{Context: dir}
}

// testRun returns a run id of its own for each test and removes the run's images at the end.
func testRun(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	runID := NewRunID(time.Now()) + "-" + name
	t.Cleanup(func() {
		if err := RemoveRunImages(context.Background(), runID); err != nil {
			t.Errorf("RemoveRunImages: %v", err)
		}
	})
	return runID
}

func serverSpec(t *testing.T, runID string, img ContainerImage, args ...string) ContainerSpec {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return ContainerSpec{
		RunID: runID, Row: "row-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test")),
		Image:  img,
		Cmd:    Command{Args: append([]string{"/containerserver", "-port", strconv.Itoa(port)}, args...)},
		Port:   port,
		Ready:  30 * time.Second,
		LogRel: "serve/server.log",
	}
}

// startContainer starts spec and registers its Stop before anything is checked.
func startContainer(t *testing.T, ev *RowEvidence, spec ContainerSpec) (Server, schema.ContainerInfo, time.Duration) {
	t.Helper()
	start := time.Now()
	srv, info, err := StartContainer(t.Context(), ev, spec)
	took := time.Since(start)
	if srv != nil {
		t.Cleanup(func() { srv.Stop(context.Background()) })
	}
	if err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	return srv, info, took
}

func dockerAPI(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	cli, err := testcontainers.NewDockerClientWithOpts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// runContainers is `docker ps -a --filter label=qualkit.run=<runID>`.
func runContainers(t *testing.T, runID string) []string {
	t.Helper()
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	res, err := dockerAPI(t).ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var out []string
	for _, c := range res.Items {
		out = append(out, fmt.Sprintf("%s %v %s", shortID(c.ID), c.Names, c.State))
	}
	return out
}

func runImages(t *testing.T, runID string) []string {
	t.Helper()
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	res, err := dockerAPI(t).ImageList(context.Background(), client.ImageListOptions{Filters: f})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	var out []string
	for _, img := range res.Items {
		out = append(out, shortID(img.ID)+" "+strings.Join(img.RepoTags, ","))
	}
	return out
}

func requireNoContainers(t *testing.T, runID string) {
	t.Helper()
	if left := runContainers(t, runID); len(left) > 0 {
		t.Errorf("containers of run %s left behind: %v", runID, left)
	}
}

// waitForLog polls the log file, which is written by a stream, until it holds want.
func waitForLog(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) || time.Now().After(deadline) {
			return string(b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readCommands(t *testing.T, ev *RowEvidence) []CommandRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(ev.Dir, "commands.jsonl"))
	if err != nil {
		t.Fatalf("commands.jsonl: %v", err)
	}
	defer f.Close()
	var recs []CommandRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r CommandRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("commands.jsonl: %v", err)
		}
		recs = append(recs, r)
	}
	return recs
}

func serveRecord(t *testing.T, ev *RowEvidence) CommandRecord {
	t.Helper()
	for _, r := range readCommands(t, ev) {
		if r.Stage == "serve" && len(r.Args) > 1 && r.Args[1] == "run" {
			return r
		}
	}
	t.Fatalf("no docker run record in commands.jsonl")
	return CommandRecord{}
}

func TestContainerServesUntilStop(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, serverContext(t), "-say", "containerserver: hello from "+runID)

	srv, info, took := startContainer(t, ev, spec)

	if want := fmt.Sprintf("http://127.0.0.1:%d", spec.Port); srv.URL() != want {
		t.Errorf("URL() = %s, want %s", srv.URL(), want)
	}
	if srv.Runtime() != "container" {
		t.Errorf("Runtime() = %q, want container", srv.Runtime())
	}
	if want := imageTag(spec.Row, runID); info.ImageRef != want || !strings.HasPrefix(want, "qualkit/row-containerservesuntilstop:") || want != strings.ToLower(want) {
		t.Errorf("ImageRef = %q, want %q (qualkit/<row>:<run id>, lowercase)", info.ImageRef, want)
	}
	if info.ImageID == "" || info.ContainerID == "" || info.DockerEndpoint == "" || info.DockerVersion == "" || info.BuildS <= 0 {
		t.Errorf("ContainerInfo incomplete: %+v", info)
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
	logPath := ev.Path(spec.LogRel)
	if log := waitForLog(t, logPath, "hello from "+runID); !strings.Contains(log, "hello from "+runID) {
		t.Errorf("log %s lacks the server's first line while it runs:\n%s", logPath, log)
	}
	cli := dockerAPI(t)
	ins, err := cli.ContainerInspect(t.Context(), info.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{LabelManaged: "true", LabelRun: runID, LabelRow: spec.Row, LabelPID: strconv.Itoa(os.Getpid())} {
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
	img, err := cli.ImageInspect(t.Context(), info.ImageID)
	if err != nil {
		t.Fatal(err)
	}
	if img.Config.Labels[LabelRun] != runID || img.Config.Labels[LabelManaged] != "true" {
		t.Errorf("image labels %v lack the run's", img.Config.Labels)
	}

	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	requireNoContainers(t, runID)
	// The last line is written on SIGTERM: the log is complete after Stop.
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "shutting down") {
		t.Errorf("log %s lacks the server's last line after Stop:\n%s", logPath, log)
	}
	rec := serveRecord(t, ev)
	if rec.ExitCode != 0 || rec.Error != "" || !strings.Contains(strings.Join(rec.Args, " "), "--network host") || rec.Log != spec.LogRel {
		t.Errorf("serve record = %+v, want exit 0, no error, --network host, log %s", rec, spec.LogRel)
	}

	// The same server as a process, for the startup comparison in the report.
	bin := filepath.Join(spec.Image.Context, "containerserver")
	port, _ := FreePort()
	pstart := time.Now()
	proc, err := StartProcess(t.Context(), ev, Command{Args: []string{bin, "-port", strconv.Itoa(port)}}, port, 30*time.Second, "serve/process.log")
	if err != nil {
		t.Fatalf("StartProcess: %v", err)
	}
	ptook := time.Since(pstart)
	proc.Stop(context.Background())
	t.Logf("image build %.2fs; container start-to-ready %s (Startup %s); process start-to-ready %s (Startup %s)",
		info.BuildS, took-time.Duration(info.BuildS*float64(time.Second)), srv.Startup(), ptook, proc.Startup())

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
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, serverContext(t), "-say", "containerserver: about to fail", "-exit-code", "3")
	spec.Ready = 60 * time.Second

	start := time.Now()
	srv, _, err := StartContainer(t.Context(), ev, spec)
	took := time.Since(start)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("StartContainer returned a server for a container that exits")
	}
	if err == nil {
		t.Fatal("StartContainer: no error for a container that exits with code 3")
	}
	logPath := ev.Path(spec.LogRel)
	for _, want := range []string{"code 3", "oom_killed=false", "before it was ready", logPath, "about to fail", "exiting with code 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took > 20*time.Second {
		t.Errorf("exit noticed after %s; the Ready deadline is %s", took, spec.Ready)
	}
	requireNoContainers(t, runID)
	if rec := serveRecord(t, ev); rec.ExitCode != 3 || rec.Error == "" {
		t.Errorf("serve record exit %d error %q, want 3 and the error", rec.ExitCode, rec.Error)
	}
}

func TestContainerNeverReady(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, serverContext(t), "-never-ready")
	spec.Ready = 3 * time.Second

	start := time.Now()
	srv, _, err := StartContainer(t.Context(), ev, spec)
	took := time.Since(start)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("StartContainer returned a server that never became ready")
	}
	if err == nil {
		t.Fatal("StartContainer: no error for a server that is never ready")
	}
	for _, want := range []string{"not ready after 3s", "answered 503", ev.Path(spec.LogRel)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took < spec.Ready || took > spec.Ready+20*time.Second {
		t.Errorf("gave up after %s, want just over the %s deadline", took, spec.Ready)
	}
	requireNoContainers(t, runID)
}

func TestContainerCancelDuringStartup(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, serverContext(t), "-never-ready")
	spec.Ready = time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the container runs, not during the image build.
	cli := dockerAPI(t)
	go func() {
		f := make(client.Filters).Add("label", LabelRun+"="+runID)
		for range 400 {
			if res, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: f}); err == nil && len(res.Items) > 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()

	start := time.Now()
	srv, _, err := StartContainer(ctx, ev, spec)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("StartContainer returned a server after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("cancel took %s", took)
	}
	requireNoContainers(t, runID)
}

func TestContainerReadOnlyMount(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	ev := &RowEvidence{Dir: t.TempDir()}
	ro, rw := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "hello.txt"), []byte("mounted-content"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := serverSpec(t, runID, serverContext(t),
		"-show-file", "/data/hello.txt", "-try-write", "/data/new.txt,/out/new.txt")
	spec.Mounts = []Mount{{Host: ro, Container: "/data", ReadOnly: true}, {Host: rw, Container: "/out"}}

	srv, _, _ := startContainer(t, ev, spec)
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	log, _ := os.ReadFile(ev.Path(spec.LogRel))
	for _, want := range []string{"show /data/hello.txt: mounted-content", "write /data/new.txt: error:", "read-only file system", "write /out/new.txt: ok"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(filepath.Join(ro, "new.txt")); err == nil {
		t.Errorf("the read-only mount was written to")
	}
	if _, err := os.Stat(filepath.Join(rw, "new.txt")); err != nil {
		t.Errorf("the writable mount was not written to: %v", err)
	}
	if rec := serveRecord(t, ev); !strings.Contains(strings.Join(rec.Args, " "), "--mount type=bind,source="+ro+",target=/data,readonly") {
		t.Errorf("serve record args lack the read-only mount: %v", rec.Args)
	}
	requireNoContainers(t, runID)
}

func TestSweepLeftoversRemovesDeadRuns(t *testing.T) {
	requireDocker(t)
	ctx := t.Context()
	current := testRun(t)
	dead, foreign := current+"-dead", current+"-foreign"
	t.Cleanup(func() { RemoveRunImages(context.Background(), dead) })
	ev := &RowEvidence{Dir: t.TempDir()}
	img := serverContext(t)

	srv, info, _ := startContainer(t, ev, serverSpec(t, current, img))

	// A pid that surely ran and is gone.
	gone := exec.Command(filepath.Join(img.Context, "containerserver"), "-exit-code", "0")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	deadLabels := map[string]string{LabelManaged: "true", LabelRun: dead, LabelRow: "row-dead", LabelPID: strconv.Itoa(gone.Process.Pid), LabelHost: host}
	cli, err := dockerClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadImage, err := buildImage(ctx, cli, ev, stdlog.New(io.Discard, "", 0), img, imageTag("row-dead", dead), deadLabels, "dead/image-build.log")
	if err != nil {
		t.Fatal(err)
	}
	create := func(labels map[string]string) string {
		c, err := testcontainers.Run(ctx, info.ImageID, testcontainers.WithNoStart(), testcontainers.WithLabels(labels),
			testcontainers.WithEntrypoint("/containerserver"), testcontainers.WithCmd("-never-ready"))
		t.Cleanup(func() { testcontainers.TerminateContainer(c) })
		if err != nil {
			t.Fatal(err)
		}
		return c.GetContainerID()
	}
	deadID := create(deadLabels)
	// Another host's fresh container: its process cannot be checked, so it stays.
	foreignID := create(map[string]string{LabelManaged: "true", LabelRun: foreign, LabelRow: "row-foreign", LabelPID: "1", LabelHost: "some-other-host"})

	removed, err := SweepLeftovers(ctx, current)
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
	for _, keep := range []string{shortID(info.ContainerID), shortID(info.ImageID), shortID(foreignID)} {
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
	me := self{host: "here", pid: 100}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	alive := func(pid int, start string) bool { return pid == 200 && (start == "" || start == "77") }
	labels := func(run, host, pid, start string) map[string]string {
		return map[string]string{LabelManaged: "true", LabelRun: run, LabelHost: host, LabelPID: pid, LabelPIDStart: start}
	}
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		age     time.Duration
		removed bool
	}{
		{"current run, even if its process is gone", labels("cur", "here", "300", ""), 48 * time.Hour, false},
		{"this process, another run", labels("old", "here", "100", ""), 48 * time.Hour, false},
		{"this host, live process", labels("old", "here", "200", "77"), 48 * time.Hour, false},
		{"this host, process gone", labels("old", "here", "300", ""), time.Minute, true},
		{"this host, pid reused by a later process", labels("old", "here", "200", "12"), time.Minute, true},
		{"other host, young", labels("old", "there", "200", ""), time.Hour, false},
		{"other host, older than LeftoverAge", labels("old", "there", "200", ""), LeftoverAge + time.Hour, true},
		{"this host, unreadable pid, young", labels("old", "here", "x", ""), time.Hour, false},
		{"this host, unreadable pid, old", labels("old", "here", "x", ""), LeftoverAge + time.Hour, true},
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

func TestContainerGPUWithoutToolkitCreatesNothing(t *testing.T) {
	d := requireDocker(t)
	gpus := &gpu.DeviceRequestFields{Driver: "nvidia", DeviceIDs: []string{"GPU-00000000-0000-0000-0000-000000000000"}, Capabilities: [][]string{{"gpu"}}}
	noToolkit := schema.DaemonInfo{Endpoint: d.Endpoint, Runtimes: []string{"runc"}}
	if err := checkGPURuntime(noToolkit, gpus); err == nil || !strings.Contains(err.Error(), "NVIDIA Container Toolkit") {
		t.Errorf("checkGPURuntime without nvidia runtime: %v, want the toolkit message", err)
	}
	if err := checkGPURuntime(noToolkit, nil); err != nil {
		t.Errorf("checkGPURuntime without GPUs: %v", err)
	}

	runID := testRun(t)
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, serverContext(t))
	spec.GPUs = gpus
	srv, _, err := StartContainer(t.Context(), ev, spec)
	if srv != nil {
		srv.Stop(context.Background())
		t.Fatal("StartContainer started a container with a GPU that does not exist")
	}
	if err == nil {
		t.Fatal("StartContainer: no error for a GPU request it cannot honour")
	}
	if !d.NvidiaRuntime && !strings.Contains(err.Error(), "NVIDIA Container Toolkit") {
		t.Errorf("error lacks the toolkit message:\n%v", err)
	}
	t.Logf("daemon runtimes %v; error: %v", d.Runtimes, err)
	requireNoContainers(t, runID)
	if !d.NvidiaRuntime {
		if left := runImages(t, runID); len(left) > 0 {
			t.Errorf("an image was built before the GPU check: %v", left)
		}
		if entries, _ := os.ReadDir(ev.Dir); len(entries) > 0 {
			t.Errorf("evidence written before the GPU check: %v", entries)
		}
	}
}

func TestContainerHostConfig(t *testing.T) {
	spec := ContainerSpec{
		Mounts: []Mount{{Host: "/models", Container: "/m", ReadOnly: true}, {Host: "/out", Container: "/o"}},
		GPUs:   &gpu.DeviceRequestFields{Driver: "nvidia", DeviceIDs: []string{"GPU-a", "GPU-b"}, Capabilities: [][]string{{"gpu"}}},
	}
	var hc container.HostConfig
	ContainerHostConfig(spec)(&hc)
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
	if hc.NetworkMode != "host" || hc.Init == nil || !*hc.Init {
		t.Errorf("NetworkMode %q Init %v, want host and an init process", hc.NetworkMode, hc.Init)
	}
	spec.GPUs.DeviceIDs[0] = "changed"
	if hc.DeviceRequests[0].DeviceIDs[0] != "GPU-a" {
		t.Errorf("the HostConfig shares the spec's slices")
	}
	var cpu container.HostConfig
	ContainerHostConfig(ContainerSpec{})(&cpu)
	if cpu.DeviceRequests != nil {
		t.Errorf("a CPU-only spec got device requests %+v", cpu.DeviceRequests)
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
	ev := &RowEvidence{Dir: t.TempDir()}
	spec := serverSpec(t, runID, ContainerImage{Ref: "qualkit/absent-" + strings.ToLower(runID) + ":none"})
	srv, _, err := StartContainer(t.Context(), ev, spec)
	if srv != nil {
		srv.Stop(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "never pulls") || !cerrdefs.IsNotFound(err) {
		t.Errorf("StartContainer with an absent image: %v, want not found and never pulls", err)
	}
	requireNoContainers(t, runID)
}

func TestContainerDockerfileBases(t *testing.T) {
	df := filepath.Join(t.TempDir(), "Dockerfile")
	os.WriteFile(df, []byte("ARG BASE=x\nFROM --platform=linux/amd64 nvcr.io/nvidia/pytorch:25.01-py3 AS build\nRUN true\nfrom build as final\nFROM scratch\nFROM ${BASE}\nFROM debian:12\n"), 0o644)
	got, err := dockerfileBases(df)
	want := []string{"nvcr.io/nvidia/pytorch:25.01-py3", "debian:12"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("dockerfileBases = %v, %v; want %v", got, err, want)
	}
}
