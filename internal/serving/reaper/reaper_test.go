package reaper

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"qualkit/internal/serving"
)

// ownerEnv makes this test binary play a qualkit process (ownerMain) instead of running
// the tests: "killed" starts what a run starts and waits to be killed; "clean" ends its
// session as a run that cleaned up does.
const (
	ownerEnv  = "QUALKIT_REAPER_TEST_OWNER"
	serverEnv = "QUALKIT_REAPER_TEST_SERVER" // the static test server, for a container of the session
)

func TestMain(m *testing.M) {
	if Requested() {
		os.Exit(Main())
	}
	if mode := os.Getenv(ownerEnv); mode != "" {
		os.Exit(ownerMain(mode))
	}
	os.Exit(m.Run())
}

// ownerMain starts its reaper, a folder it registers, a process of its session and,
// with serverEnv, a server in a container of an image it built; then prints
// "ready <session> <folder>" and, killed, waits; clean, removes what it made and Closes.
func ownerMain(mode string) int {
	tclog.SetDefault(tclog.NewNoopLogger())
	fail := func(err error) int { fmt.Println("owner:", err); return 1 }
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	r, err := Start(exe)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "qk-reaper-test-")
	if err != nil {
		return fail(err)
	}
	r.Remove(dir)
	jobCtx, stopJob := context.WithCancel(ctx)
	defer stopJob()
	jobs := make(chan error, 2)
	go func() {
		_, err := serving.Run(jobCtx, serving.Command{Args: []string{"sleep", "600"}}, filepath.Join(dir, "sleep.log"))
		jobs <- err
	}()
	// A process whose environment no longer names the session (as AIPerf's services,
	// which write their titles over it): only its group, told to the reaper, finds it.
	bare := filepath.Join(dir, "bare.pid")
	go func() {
		_, err := serving.Run(jobCtx, serving.Command{Args: []string{"/bin/sh", "-c", "echo $$ > " + bare + "; exec env -i sleep 601"}},
			filepath.Join(dir, "bare.log"), serving.WithGroupTracker(r))
		jobs <- err
	}()
	var srv serving.Server
	if bin := os.Getenv(serverEnv); bin != "" {
		df := filepath.Join(filepath.Dir(bin), "Dockerfile")
		if err := os.WriteFile(df, []byte("FROM scratch\nCOPY containerserver /containerserver\n"), 0o644); err != nil {
			return fail(err)
		}
		runID := fmt.Sprintf("reaper-test-%d", os.Getpid())
		img, err := serving.PrepareImage(ctx, serving.ImageSpec{Context: filepath.Dir(bin), Paths: map[string]string{bin: "/containerserver"}},
			runID, "row-reaper", filepath.Join(dir, "build.log"))
		if err != nil {
			return fail(err)
		}
		port, err := serving.FreePort()
		if err != nil {
			return fail(err)
		}
		spec := serving.ServerSpec{Cmd: serving.Command{Args: []string{bin, "-port", strconv.Itoa(port)}}, Port: port, Ready: time.Minute, Log: filepath.Join(dir, "server.log")}
		if srv, err = serving.Start(ctx, spec, serving.InContainer(serving.Container{Image: img, RunID: runID, Row: "row-reaper"})); err != nil {
			return fail(err)
		}
	}
	var barePID int
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(bare)
		barePID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", barePID))
		if sessionHasProcess(serving.Self().Session) && barePID > 0 && strings.HasPrefix(string(cmd), "sleep\x00601") {
			break
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("the session's sleeps never ran"))
		}
	}
	fmt.Printf("ready %s %s %d\n", serving.Self().Session, dir, barePID)
	if mode == "killed" {
		select {}
	}
	stopJob()
	<-jobs
	<-jobs
	if srv != nil {
		srv.Stop(ctx)
		serving.RemoveRunImages(ctx, fmt.Sprintf("reaper-test-%d", os.Getpid()))
	}
	os.RemoveAll(dir)
	if err := r.Close(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// runOwner starts ownerMain in mode, its output (and its reaper's) in one pipe, and
// returns once it printed ready: its session, its folder, its process with no mark.
func runOwner(t *testing.T, mode string, env ...string) (cmd *exec.Cmd, out *bufio.Reader, session, dir string, bare int) {
	t.Helper()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { pr.Close() })
	cmd = exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(append(os.Environ(), ownerEnv+"="+mode), env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	pw.Close() // the child and its reaper hold the only write ends now
	out = bufio.NewReader(pr)
	var line, before string
	for !strings.HasPrefix(line, "ready ") {
		before += line
		line, err = out.ReadString('\n')
		require.NoError(t, err, "the owner's ready line; before it:\n%s", before)
	}
	f := strings.Fields(line)
	require.Len(t, f, 4, "owner said %q", line)
	bare, err = strconv.Atoi(f[3])
	require.NoError(t, err, "owner said %q", line)
	return cmd, out, f[1], f[2], bare
}

// The owner is killed (SIGKILL: no cleanup of its own runs). Its reaper, once the pipe
// closed, kills the session's process, removes its container, its image and every build
// step named for it, its presence and its folder, reports each, and exits: reading the
// owner's output to its end waits for exactly that, no clock involved.
func TestReaperRemovesWhatAKilledProcessLeft(t *testing.T) {
	var env []string
	withDocker := !testing.Short()
	if withDocker {
		t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		_, err := serving.Docker(t.Context())
		require.NoError(t, err, "the reaper's container test needs a Docker engine (go test -short leaves Docker out)")
		bin := filepath.Join(t.TempDir(), "containerserver")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "../testdata/containerserver")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		b, err := build.CombinedOutput()
		require.NoError(t, err, "build the test server: %s", b)
		env = append(env, serverEnv+"="+bin)
	}
	cmd, out, session, dir, bare := runOwner(t, "killed", env...)
	require.NotEmpty(t, sessionPIDs(session), "the session's process runs before the kill")
	if withDocker {
		require.NotEmpty(t, engineLeft(t, session, cmd.Process.Pid), "the session's container and image exist before the kill")
	}
	require.NoError(t, cmd.Process.Kill())
	rest, err := io.ReadAll(out) // to the end: the reaper holds the pipe until it is done
	require.NoError(t, err)
	cmd.Wait()
	report := string(rest)
	t.Logf("the reaper said:\n%s", report)

	assert.Contains(t, report, "ended and left these; removed:")
	assert.Contains(t, report, "process ")
	assert.Contains(t, report, "sleep 600")
	assert.Contains(t, report, fmt.Sprintf("process %d: sleep 601", bare), "the process with no mark, found by its group")
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", bare)); err == nil {
		assert.Regexp(t, `\) [ZX] `, string(st), "the process with no mark still runs")
	}
	assert.Contains(t, report, "path "+dir)
	assert.NotContains(t, report, "FAILED")
	assert.Empty(t, sessionPIDs(session), "processes of the session")
	assert.NoDirExists(t, dir)
	if withDocker {
		assert.Contains(t, report, "container ")
		assert.Contains(t, report, "qualkit/row-reaper:reaper-test-")
		assert.Empty(t, engineLeft(t, session, cmd.Process.Pid), "what the engine holds of the session")
	}
}

// A session that cleaned up and Closed leaves its reaper nothing to report.
func TestReaperOfACleanEndReportsNothing(t *testing.T) {
	cmd, out, session, dir, _ := runOwner(t, "clean")
	rest, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait(), "the owner: %s", rest)
	assert.NotContains(t, string(rest), "left these", "the reaper of a clean end")
	assert.Empty(t, sessionPIDs(session))
	assert.NoDirExists(t, dir)
}

// Start refuses what would not be a reaper: a program that does not run Main when
// Requested (it says nothing and exits), and a reaper starting one of its own.
func TestStartRefusesWhatIsNoReaper(t *testing.T) {
	_, err := Start("/bin/true")
	require.ErrorContains(t, err, "did not start as a reaper")
	require.ErrorContains(t, err, "reaper.Requested")
	t.Setenv(envSpec, "{}")
	_, err = Start(os.Args[0])
	require.ErrorContains(t, err, "a reaper starts no reaper")
}

// Reap removes the paths it is given that are still there, and reports only those.
func TestReapRemovesThePathsLeft(t *testing.T) {
	o := serving.Owner{Session: "no-such-session-" + strconv.Itoa(os.Getpid()), Host: "here", PID: -1}
	dir := t.TempDir()
	left, gone := filepath.Join(dir, "left"), filepath.Join(dir, "gone")
	require.NoError(t, os.MkdirAll(filepath.Join(left, "sub"), 0o755))
	report := Reap(t.Context(), o, Left{Paths: []string{left, gone}}, false)
	assert.NoDirExists(t, left)
	assert.Contains(t, report, "path "+left)
	assert.NotContains(t, report, gone)
	assert.Empty(t, Reap(t.Context(), o, Left{Paths: []string{left}}, false), "nothing left: nothing to say")
}

// sessionHasProcess: a process carries the session's mark.
func sessionHasProcess(session string) bool { return len(sessionPIDs(session)) > 0 }

// sessionPIDs are the live processes whose environment marks them as session's.
func sessionPIDs(session string) []int {
	want := []byte(serving.SessionEnv + "=" + session)
	paths, _ := filepath.Glob("/proc/[0-9]*/environ")
	var out []int
	for _, p := range paths {
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append(append([]byte{0}, want...), 0)) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && syscall.Kill(pid, 0) == nil {
			out = append(out, pid)
		}
	}
	return out
}

// engineLeft lists the containers, images (build steps included) and volumes the engine
// holds of the session, or of its process (pid and host).
func engineLeft(t *testing.T, session string, pid int) []string {
	t.Helper()
	ctx := context.Background()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	require.NoError(t, err)
	defer cli.Close()
	host, _ := os.Hostname()
	var left []string
	for _, f := range []client.Filters{
		make(client.Filters).Add("label", serving.LabelSession+"="+session),
		make(client.Filters).Add("label", serving.LabelPID+"="+strconv.Itoa(pid), serving.LabelHost+"="+host),
	} {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		require.NoError(t, err)
		for _, c := range cs.Items {
			left = append(left, "container "+c.ID)
		}
		imgs, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
		require.NoError(t, err)
		for _, img := range imgs.Items {
			left = append(left, fmt.Sprintf("image %s %v", img.ID, img.RepoTags))
		}
		vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		require.NoError(t, err)
		for _, v := range vs.Items {
			left = append(left, "volume "+v.Name)
		}
	}
	return left
}
