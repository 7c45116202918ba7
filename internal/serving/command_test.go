package serving

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/gpu"
)

func TestRedactEnv(t *testing.T) {
	assert.Equal(t, []string{"HF_TOKEN=<redacted>", "PATH=/bin", "MY_API_KEY=<redacted>"}, RedactEnv([]string{"HF_TOKEN=abc", "PATH=/bin", "MY_API_KEY=k"}))
}

// A forger's .pyc in a __pycache__ beside the source (git ignores it), compiled from
// other source and marked never to be checked against it (an unchecked hash pyc): a
// Python started plainly runs it; every Python the harness starts, with the run's temp
// folder or none, runs the source.
func TestPythonRunsNoBytecodeItDidNotWrite(t *testing.T) {
	python, err := exec.LookPath("python3")
	require.NoError(t, err, "python3 on PATH: the project needs Python 3.11-3.13 (README)")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mod.py"), []byte("X = 'genuine'\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rig.py"), []byte("X = 'rigged'\n"), 0o644))
	rig := exec.Command(python, "-c", `import os, py_compile, sys
os.makedirs("__pycache__", exist_ok=True)
py_compile.compile("rig.py", cfile="__pycache__/mod." + sys.implementation.cache_tag + ".pyc", doraise=True,
    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)`)
	rig.Dir, rig.Env = dir, []string{"PATH=" + os.Getenv("PATH")}
	out, err := rig.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Remove(filepath.Join(dir, "rig.py")))

	importMod := []string{python, "-c", "import mod; print(mod.X)"}
	plain := exec.Command(importMod[0], importMod[1:]...)
	plain.Dir, plain.Env = dir, []string{"PATH=" + os.Getenv("PATH")}
	out, err = plain.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "rigged\n", string(out), "the forgery works on a Python started plainly")

	for name, opts := range map[string][]Option{"run temp folder": {WithTempDir(filepath.Join(t.TempDir(), "tmp"))}, "none": nil} {
		log := filepath.Join(t.TempDir(), "job.log")
		_, err := Run(t.Context(), Command{Args: importMod, Dir: dir}, log, opts...)
		require.NoError(t, err, name)
		b, _ := os.ReadFile(log)
		assert.Equal(t, "genuine\n", string(b), name)
	}
	// In a container, a folder of the container's own, fresh with it.
	r, err := newRun(&Container{Image: Image{ID: "sha256:img"}, RunID: "run", Row: "row"}, Command{Args: importMod, Env: []string{"A=1"}}, options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"PYTHONPYCACHEPREFIX=/tmp/qualkit-pycache", "A=1"}, r.cmd.Env)
}

// A process job: its output in the log, its exit code and environment in the record
// (secrets redacted, GPUs pinned by UUID), and a failure that names the log and its tail.
func TestProcessJob(t *testing.T) {
	log := filepath.Join(t.TempDir(), "job.log")
	var recs records
	opts := []Option{WithRecorder(&recs, "build"), WithGPUs([]gpu.Device{{UUID: "GPU-a"}, {UUID: "GPU-b"}})}
	rec, err := Run(t.Context(), Command{Args: []string{"/bin/sh", "-c", `echo "gpus=$CUDA_VISIBLE_DEVICES token=$HF_TOKEN"`}, Env: []string{"HF_TOKEN=secret"}}, log, opts...)
	require.NoError(t, err)
	b, _ := os.ReadFile(log)
	assert.Equal(t, "gpus=GPU-a,GPU-b token=secret\n", string(b))
	assert.Equal(t, 0, rec.ExitCode)
	got := recs.all()
	require.Len(t, got, 1)
	assert.Equal(t, append(slices.Clone(NoBytecodeEnv), "HF_TOKEN=<redacted>", "CUDA_VISIBLE_DEVICES=GPU-a,GPU-b"), got[0].Env)
	assert.Equal(t, "build", got[0].Stage)

	_, err = Run(t.Context(), Command{Args: []string{"/bin/sh", "-c", "echo it broke; exit 3"}}, log)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sh exited 3")
	assert.Contains(t, err.Error(), "it broke")

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	_, err = Run(ctx, Command{Args: []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}}, log)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Less(t, time.Since(begin), 15*time.Second, "the whole process group is killed")

	_, err = Run(t.Context(), Command{}, log)
	assert.ErrorContains(t, err, "empty command")
}

// A process job runs marked as this session's (the reaper finds it by that), in the temp
// folder it is given unless its command names its own, and leaves no process behind:
// what it started in its group and left running is gone once Run returns, with no wait.
func TestProcessJobLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	log := filepath.Join(dir, "job.log")
	var recs records
	_, err := Run(t.Context(), Command{Args: []string{"/bin/sh", "-c", `echo "$TMPDIR $GOTMPDIR $` + SessionEnv + `"; sleep 600 & echo $! > ` + dir + `/daemon`}},
		log, WithTempDir(tmp), WithRecorder(&recs, "build"))
	require.NoError(t, err)
	b, _ := os.ReadFile(log)
	assert.Equal(t, tmp+" "+tmp+" "+Self().Session+"\n", string(b))
	assert.DirExists(t, tmp)
	assert.Equal(t, []string{"TMPDIR=" + tmp, "GOTMPDIR=" + tmp, "PYTHONPYCACHEPREFIX=" + filepath.Join(tmp, "pycache")}, recs.all()[0].Env)
	pidb, err := os.ReadFile(filepath.Join(dir, "daemon"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidb)))
	require.NoError(t, err)
	if st, err := procStat(pid); err == nil {
		assert.Contains(t, []string{"Z", "X"}, st[0], "the job's sleep %d, left running in its group", pid)
	}

	_, err = Run(t.Context(), Command{Args: []string{"/bin/sh", "-c", "echo $TMPDIR"}, Env: []string{"TMPDIR=/own"}}, log, WithTempDir(tmp))
	require.NoError(t, err)
	b, _ = os.ReadFile(log)
	assert.True(t, strings.HasSuffix(string(b), "/own\n"), "the command's own TMPDIR wins: %q", b)
}

// A process server: ready once its ready path answers 200; one that exits or never
// becomes ready fails with the log's tail, and one cut before it was ready is killed; Stop
// records the command once.
func TestProcessServer(t *testing.T) {
	_, bin := serverImage(t)
	var recs records
	spec := serverSpec(t, bin, "-say", "hello process")
	srv, err := Start(t.Context(), spec, WithRecorder(&recs, "serve"))
	require.NoError(t, err)
	assert.Equal(t, "process", srv.Runtime())
	require.NoError(t, srv.Stop(t.Context()))
	require.NoError(t, srv.Stop(t.Context()))
	require.Len(t, recs.all(), 1)
	assert.Contains(t, waitForLog(t, spec.Log, "shutting down"), "hello process")

	spec = serverSpec(t, bin, "-say", "about to fail", "-exit-code", "5")
	_, err = Start(t.Context(), spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited with code 5 before it was ready")
	assert.Contains(t, err.Error(), "about to fail")

	spec = serverSpec(t, bin, "-never-ready")
	spec.Ready = 500 * time.Millisecond
	_, err = Start(t.Context(), spec)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server not ready after 500ms (last: /health/ready answered 503)")

	// Cut before it was ready, it is killed: SIGTERM, which it holds, would wait stopGrace.
	spec = serverSpec(t, bin, "-never-ready", "-hold-term")
	ctx, cancel := context.WithCancel(t.Context())
	go cancelOnceLogged(ctx, cancel, spec.Log, "listening on")
	_, err = Start(ctx, spec)
	cancel()
	assert.ErrorIs(t, err, context.Canceled)
	log, _ := os.ReadFile(spec.Log)
	assert.Contains(t, string(log), "listening on")
	assert.NotContains(t, string(log), "held", "the server was sent SIGTERM")

	_, err = Start(t.Context(), ServerSpec{Cmd: Command{Args: []string{bin}}})
	assert.ErrorContains(t, err, "all three are required")
	assert.True(t, strings.HasPrefix(spec.Cmd.Args[0], "/"))
}
