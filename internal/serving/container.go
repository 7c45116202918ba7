package serving

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// run is one container about to be created, and its docker run line for the record.
type run struct {
	name            string
	labels          map[string]string
	cmd             Command // mapped into the container
	underEntrypoint bool
	host            func(*container.HostConfig)
	argv            []string
}

func newRun(c *Container, cmd Command, o options) (*run, error) {
	if c.RunID == "" || c.Row == "" {
		return nil, errors.New("container: RunID and Row are required (they label what is created)")
	}
	if c.Image.ID == "" {
		return nil, errors.New("container: no image (PrepareImage makes one present)")
	}
	var problems []string
	targets := map[string]bool{}
	for _, m := range c.Mounts {
		if !filepath.IsAbs(m.Host) || !filepath.IsAbs(m.Container) {
			problems = append(problems, fmt.Sprintf("mount %s:%s: both paths must be absolute", m.Host, m.Container))
			continue
		}
		if _, err := os.Stat(m.Host); err != nil {
			problems = append(problems, fmt.Sprintf("mount %s: %v", m.Host, err))
		}
		if targets[m.Container] {
			problems = append(problems, fmt.Sprintf("mount target %s given twice", m.Container))
		}
		targets[m.Container] = true
	}
	if len(problems) > 0 {
		return nil, errors.New("container: " + strings.Join(problems, "; "))
	}
	gpus, err := gpuRequest(o.gpus)
	if err != nil {
		return nil, err
	}
	r := &run{name: containerName(c.Row, c.RunID), labels: Self().labels(c.RunID, c.Row), cmd: newPathMap(c).command(cmd), underEntrypoint: c.UnderEntrypoint}
	r.cmd.Env = append([]string{containerPycache}, r.cmd.Env...) // NoBytecodeEnv says why
	r.host = hostConfig(c, gpus)
	r.argv = dockerRunArgs(c, gpus, r.name, r.labels, r.cmd)
	return r, nil
}

func (r *run) opts(logger *stdlog.Logger) []testcontainers.ContainerCustomizer {
	return []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(logger),
		testcontainers.WithName(r.name),
		testcontainers.WithLabels(r.labels),
		testcontainers.WithConfigModifier(func(cfg *container.Config) {
			if r.underEntrypoint {
				cfg.Entrypoint = nil // the image's
				cfg.Cmd = slices.Clone(r.cmd.Args)
			} else {
				cfg.Entrypoint = []string{r.cmd.Args[0]}
				cfg.Cmd = slices.Clone(r.cmd.Args[1:])
			}
			cfg.Env = slices.Clone(r.cmd.Env)
			cfg.WorkingDir = r.cmd.Dir
		}),
		testcontainers.WithHostConfigModifier(r.host),
	}
}

// gpuRequest pins a container to exactly these GPUs, by UUID (indexes can change between
// boots), without Count (Docker rejects Count beside DeviceIDs); nil for none.
func gpuRequest(devs []gpu.Device) (*container.DeviceRequest, error) {
	if len(devs) == 0 {
		return nil, nil
	}
	req := &container.DeviceRequest{Driver: "nvidia", Capabilities: [][]string{{"gpu"}}}
	for _, d := range devs {
		if d.UUID == "" {
			return nil, fmt.Errorf("device request: GPU %d (%s) has no UUID", d.Index, d.Name)
		}
		if slices.Contains(req.DeviceIDs, d.UUID) {
			return nil, fmt.Errorf("device request: GPU %d (%s) selected twice", d.Index, d.UUID)
		}
		req.DeviceIDs = append(req.DeviceIDs, d.UUID)
	}
	return req, nil
}

// hostConfig: host networking, an init as PID 1 (it forwards SIGTERM and reaps the
// server's children), the mounts, and the options Container names.
func hostConfig(c *Container, gpus *container.DeviceRequest) func(*container.HostConfig) {
	return func(hc *container.HostConfig) {
		hc.NetworkMode = "host"
		withInit := true
		hc.Init = &withInit
		if c.IPCHost {
			hc.IpcMode = "host"
		}
		if c.MemoryBytes > 0 {
			hc.Memory, hc.MemorySwap = c.MemoryBytes, c.MemoryBytes
		}
		for _, m := range c.Mounts {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Host, Target: m.Container, ReadOnly: m.ReadOnly})
		}
		if gpus != nil {
			req := *gpus
			req.DeviceIDs = slices.Clone(req.DeviceIDs)
			hc.DeviceRequests = append(hc.DeviceRequests, req)
		}
	}
}

// dockerRunArgs is the docker run line that would create the container. Env values stay
// out of it (the record's Env holds them, redacted): `-e NAME` reads them from the caller.
func dockerRunArgs(c *Container, gpus *container.DeviceRequest, name string, labels map[string]string, cmd Command) []string {
	args := []string{"docker", "run", "--name", name, "--network", "host", "--init"}
	if c.IPCHost {
		args = append(args, "--ipc", "host")
	}
	if c.MemoryBytes > 0 {
		m := strconv.FormatInt(c.MemoryBytes, 10)
		args = append(args, "--memory", m, "--memory-swap", m)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	for _, kv := range cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		args = append(args, "-e", k)
	}
	if cmd.Dir != "" {
		args = append(args, "-w", cmd.Dir)
	}
	for _, m := range c.Mounts {
		opt := "type=bind,source=" + m.Host + ",target=" + m.Container
		if m.ReadOnly {
			opt += ",readonly"
		}
		args = append(args, "--mount", opt)
	}
	if gpus != nil {
		args = append(args, "--gpus", `"device=`+strings.Join(gpus.DeviceIDs, ",")+`"`)
	}
	if c.UnderEntrypoint {
		return append(append(args, c.Image.ID), cmd.Args...)
	}
	args = append(args, "--entrypoint", cmd.Args[0], c.Image.ID)
	return append(args, cmd.Args[1:]...)
}

func containerName(row, runID string) string {
	b := make([]byte, 3)
	rand.Read(b)
	n := notTagChar.ReplaceAllString(fmt.Sprintf("qualkit-%s-%s-%s", row, runID, hex.EncodeToString(b)), "-")
	return strings.TrimLeft(n, ".-")
}

// connect checks the configuration and the daemon, GPU runtime included.
func connect(ctx context.Context, o options) (*testcontainers.DockerClient, error) {
	cli, err := safeClient(ctx)
	if err != nil {
		return nil, err
	}
	d, err := daemonInfo(ctx, cli)
	if err == nil {
		err = checkGPURuntime(d, o.gpus)
	}
	if err != nil {
		cli.Close()
		return nil, err
	}
	return cli, nil
}

type logFile struct {
	mu    sync.Mutex
	f     *os.File
	final bool // rewritten from the stopped container: the stream no longer writes
}

func (l *logFile) Accept(entry testcontainers.Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.final {
		l.f.Write(entry.Content)
	}
}

// rewrite replaces the streamed log with the stopped container's whole log, which a
// stream may have missed lines of.
func (l *logFile) rewrite(ctx context.Context, cli *testcontainers.DockerClient, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.final = true
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = stdcopy.StdCopy(l.f, l.f, rc)
	return err
}

// readyStrategy polls the server's own loopback address (pollReady), failing once the
// container stops. wait.ForHTTP would ask for the host's address, which inside a
// container (CI's machines) is the bridge's gateway, not the host network's loopback:
// TestContainerServesUntilStop never became ready with it there.
type readyStrategy struct {
	url    string
	last   string           // the last answer
	exited *container.State // its state when it stopped before it was ready
}

func (s *readyStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) (err error) {
	s.last, err = pollReady(ctx, s.url, func() error {
		if st, err := target.State(ctx); err == nil && !st.Running {
			s.exited = st
			return fmt.Errorf("container stopped: %s, exit code %d", st.Status, st.ExitCode)
		}
		return nil
	})
	return err
}

type containerServer struct {
	served
	c     *testcontainers.DockerContainer
	cli   *testcontainers.DockerClient
	log   *logFile
	tcLog *os.File

	watchMu   sync.Mutex // guards seen
	seen      watchedState
	stopWatch context.CancelFunc
}

// watch follows the engine's events for the server's container until ctx ends. The
// stream ending is the engine going away; a kill before Stop is someone else's.
func (s *containerServer) watch(ctx context.Context) {
	f := make(client.Filters).Add("container", s.c.GetContainerID())
	ev := s.cli.Events(ctx, client.EventsListOptions{Filters: f})
	for {
		select {
		case m := <-ev.Messages:
			s.watchMu.Lock()
			switch m.Action {
			case events.ActionKill:
				if s.seen.killedBy == "" {
					s.seen.killedBy = "signal " + m.Actor.Attributes["signal"]
				}
			case events.ActionOOM:
				s.seen.oom = true
			case events.ActionDestroy:
				s.seen.removed = time.Now()
			}
			s.watchMu.Unlock()
		case err := <-ev.Err:
			if ctx.Err() == nil {
				s.watchMu.Lock()
				s.seen.lost, s.seen.lostErr = time.Now(), err
				s.watchMu.Unlock()
			}
			return
		}
	}
}

// killSettles is how long Died waits, after a kill from outside, for the engine's own
// end (a shutdown stops its containers first).
const killSettles = 5 * time.Second

// watchedState is what watch saw: the engine gone, a kill the run did not send, an OOM.
type watchedState struct {
	lost     time.Time
	lostErr  error
	killedBy string
	oom      bool
	removed  time.Time // the engine removed the container (docker rm -f, a sweep)
}

func (s *containerServer) watched() watchedState {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	return s.seen
}

// Died says why the container ended while the row ran: its engine went away, someone
// else stopped it, or it exited (its code, whether OOM-killed).
func (s *containerServer) Died(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	w := s.watched()
	// A kill the run did not send may be the engine shutting down: report its end instead.
	for wait := time.Now().Add(killSettles); w.killedBy != "" && w.lost.IsZero() && time.Now().Before(wait); {
		time.Sleep(100 * time.Millisecond)
		w = s.watched()
	}
	if !w.lost.IsZero() {
		return engineGone(fmt.Errorf("the Docker engine was unreachable %.1f s after the server was ready (restarted or stopped: its containers stop with it): %v",
			w.lost.Sub(s.began).Seconds()-s.startup.Seconds(), w.lostErr))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.cli.ContainerInspect(ctx, s.c.GetContainerID(), client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) || err != nil && !s.watched().removed.IsZero() {
		// Only Stop removes it: someone else did, while the row still needed it.
		return stoppedFromOutside(fmt.Errorf("the server container %s was removed from outside the run (docker rm -f, or a sweep that took it for a dead run's) %.1f s after the server was ready: %v",
			shortID(s.c.GetContainerID()), time.Since(s.began).Seconds()-s.startup.Seconds(), err))
	}
	if err != nil {
		return engineGone(fmt.Errorf("the Docker engine did not answer for the server container: %w", err))
	}
	cs := res.Container.State
	switch {
	case cs == nil || cs.Running:
		return nil
	case cs.OOMKilled || w.oom:
		return oomKilled(fmt.Errorf("the server container exited with code %d (oom_killed=true) while the row ran", cs.ExitCode))
	case w.killedBy != "":
		return stoppedFromOutside(fmt.Errorf("the server container was stopped from outside the run (%s from the Docker engine: docker stop or kill, or the engine shutting down) and exited with code %d", w.killedBy, cs.ExitCode))
	}
	return fmt.Errorf("the server container exited with code %d (oom_killed=false) while the row ran", cs.ExitCode)
}

func startContainer(ctx context.Context, spec ServerSpec, o options) (Server, error) {
	r, err := newRun(o.container, spec.Cmd, o)
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	cli, err := connect(ctx, o)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("open log: %w", err)
	}
	tcLog, err := os.OpenFile(filepath.Join(filepath.Dir(spec.Log), filepath.Base(schema.TestcontainersLog)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.Close()
		cli.Close()
		return nil, fmt.Errorf("open testcontainers log: %w", err)
	}
	s := &containerServer{served: served{url: spec.URL(), o: o, began: time.Now()}, cli: cli, log: &logFile{f: f}, tcLog: tcLog}
	s.rec = schema.CommandRecord{Stage: o.stage, Args: r.argv, Env: r.cmd.Env, Dir: r.cmd.Dir, Log: spec.Log, Start: s.began.UTC()}
	// Under the row's own deadline, not the library's default 60 s.
	ready := &readyStrategy{url: s.url}
	opts := append(r.opts(stdlog.New(tcLog, "", stdlog.LstdFlags|stdlog.Lmicroseconds)),
		testcontainers.WithLogConsumers(s.log),
		testcontainers.WithWaitStrategyAndDeadline(spec.Ready, ready))
	c, err := runOnHostNetwork(ctx, o.container.Image.ID, opts...)
	s.c = c
	if err != nil {
		if c == nil { // nothing was created
			s.rec.ExitCode, s.rec.Error = -1, err.Error()
			s.close()
			return nil, o.record(s.rec, fmt.Errorf("start container %s from %s: %w", r.name, o.container.Image.Ref, err))
		}
		code, oom, rmErr := s.terminate(context.Background(), 0)
		switch {
		case ready.exited != nil:
			err = fmt.Errorf("server container exited with code %d (oom_killed=%t) before it was ready", ready.exited.ExitCode, ready.exited.OOMKilled)
			if ready.exited.OOMKilled {
				err = oomKilled(err)
			}
		case ctx.Err() == nil:
			err = notReady(spec.Ready, ready.last, err)
		}
		s.rec.Error = err.Error()
		err = fmt.Errorf("%w; log %s:\n%s", err, spec.Log, TailFile(spec.Log, 2000))
		if rmErr != nil {
			err = fmt.Errorf("%w\n(removing container %s failed: %v)", err, r.name, rmErr)
		}
		return nil, s.finish(code, oom, err)
	}
	s.startup = time.Since(s.began)
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopWatch = stop
	go s.watch(wctx)
	return s, nil
}

func (s *containerServer) Runtime() string     { return "container" }
func (s *containerServer) ContainerID() string { return s.c.GetContainerID() }

// Stop stops the container (SIGTERM, SIGKILL after stopGrace), completes its log,
// removes it even when ctx is cancelled, and records it; a second call does nothing.
func (s *containerServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	return s.finish(s.terminate(ctx, stopGrace))
}

func (s *containerServer) finish(code int, oomKilled bool, err error) error {
	s.rec.WallS = time.Since(s.began).Seconds()
	s.rec.ExitCode = code
	if err != nil && s.rec.Error == "" {
		s.rec.Error = err.Error()
	} else if oomKilled && s.rec.Error == "" {
		s.rec.Error = "oom killed"
	}
	return s.o.record(s.rec, err)
}

// terminate stops the container, SIGKILL after grace, and removes it; it runs once.
func (s *containerServer) terminate(ctx context.Context, grace time.Duration) (code int, oomKilled bool, err error) {
	s.stopped = true
	if s.stopWatch != nil {
		s.stopWatch()
	}
	defer s.close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopGrace+2*time.Minute)
	defer cancel()
	var errs []error
	if err := waitForEngine(ctx, s.cli, engineBackWithin); err != nil {
		errs = append(errs, err)
	}
	if err := s.halt(ctx, grace); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("stop container: %w", err))
	}
	if err := s.log.rewrite(ctx, s.cli, s.c.GetContainerID()); err != nil {
		errs = append(errs, fmt.Errorf("container log: %w", err))
	}
	code = -1
	if res, err := s.cli.ContainerInspect(ctx, s.c.GetContainerID(), client.ContainerInspectOptions{}); err == nil && res.Container.State != nil {
		code, oomKilled = res.Container.State.ExitCode, res.Container.State.OOMKilled
	} else if err != nil {
		errs = append(errs, fmt.Errorf("inspect container: %w", err))
	}
	if err := testcontainers.TerminateContainer(s.c, testcontainers.StopTimeout(grace), testcontainers.StopContext(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("remove container: %w", err))
	}
	return code, oomKilled, errors.Join(errs...)
}

// halt stops the container: SIGTERM, then SIGKILL after grace; with no grace, SIGKILL alone.
func (s *containerServer) halt(ctx context.Context, grace time.Duration) error {
	if grace > 0 {
		return s.c.Stop(ctx, &grace)
	}
	_, err := s.cli.ContainerKill(ctx, s.c.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"})
	if cerrdefs.IsConflict(err) { // created, never started, or already ended
		return nil
	}
	return err
}

// removeOutlivingEngine removes a job's container, again while a restarting engine comes back.
func removeOutlivingEngine(ctx context.Context, cli *testcontainers.DockerClient, ct testcontainers.Container) {
	if ct == nil {
		return
	}
	deadline := time.Now().Add(engineBackWithin)
	for {
		waitForEngine(ctx, cli, time.Until(deadline))
		err := testcontainers.TerminateContainer(ct, testcontainers.StopContext(ctx))
		if err == nil || cerrdefs.IsNotFound(err) || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Second)
	}
}

// engineBackWithin is how long a removal waits for an engine that restarts (seconds, as a rule).
const engineBackWithin = 90 * time.Second

func waitForEngine(ctx context.Context, cli *testcontainers.DockerClient, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cli.Ping(pctx, client.PingOptions{})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return engineGone(fmt.Errorf("the Docker engine did not answer within %s to remove the server: %w", within, err))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *containerServer) close() {
	s.log.f.Close()
	s.tcLog.Close()
	s.cli.Close()
}

// runContainer runs c to completion (or until ctx ends), records it, and removes it.
func runContainer(ctx context.Context, c Command, log string, o options) (schema.CommandRecord, error) {
	began := time.Now()
	rec := schema.CommandRecord{Stage: o.stage, Args: c.Args, Env: c.Env, Log: log, Start: began.UTC(), ExitCode: -1}
	finish := func(err error) (schema.CommandRecord, error) {
		rec.WallS = time.Since(began).Seconds()
		if err != nil {
			rec.Error = err.Error()
			err = fmt.Errorf("%s in container %s exited %d: %w; log %s:\n%s", filepath.Base(c.Args[0]), shortID(o.container.Image.ID), rec.ExitCode, err, log, TailFile(log, 2000))
		}
		return rec, o.record(rec, err)
	}
	// The log exists from the start: a job stopped before it ran still has its log.
	f, err := os.Create(log)
	if err != nil {
		return finish(err)
	}
	defer f.Close()
	notStarted := func(err error) (schema.CommandRecord, error) {
		fmt.Fprintf(f, "qualkit: the container did not start: %v\n", err)
		return finish(err)
	}
	r, err := newRun(o.container, c, o)
	if err != nil {
		return notStarted(err)
	}
	rec.Args, rec.Env, rec.Dir = r.argv, r.cmd.Env, r.cmd.Dir
	cli, err := connect(ctx, o)
	if err != nil {
		return notStarted(err)
	}
	defer cli.Close()
	lf := &logFile{f: f}
	deadline := 24 * time.Hour
	if d, ok := ctx.Deadline(); ok {
		deadline = time.Until(d)
	}
	// The log streams while the job runs (a long build shows progress), then is rewritten.
	ct, err := runOnHostNetwork(ctx, o.container.Image.ID, append(r.opts(stdlog.New(io.Discard, "", 0)),
		testcontainers.WithLogConsumers(lf),
		testcontainers.WithWaitStrategyAndDeadline(deadline, wait.ForExit().WithPollInterval(50*time.Millisecond)))...)
	// Removal goes on when ctx is cancelled, and after an engine restart a long job (a
	// native batch beside the server) may outlive.
	bg := context.WithoutCancel(ctx)
	defer removeOutlivingEngine(bg, cli, ct)
	if ct != nil {
		if err != nil {
			// Cut before it exited: it stops now, so that its log is read once it can write
			// no more (else a batch's report could name replays the log lacks).
			now := time.Duration(0)
			if serr := ct.Stop(bg, &now); serr != nil && !cerrdefs.IsNotFound(serr) {
				err = fmt.Errorf("%w (stopping it: %v)", err, serr)
			}
		}
		if res, ierr := cli.ContainerInspect(bg, ct.GetContainerID(), client.ContainerInspectOptions{}); ierr == nil && res.Container.State != nil && !res.Container.State.Running {
			rec.ExitCode = res.Container.State.ExitCode
		}
		if lerr := lf.rewrite(bg, cli, ct.GetContainerID()); err == nil && lerr != nil {
			err = fmt.Errorf("container log: %w", lerr)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return finish(fmt.Errorf("%w (%v)", ctx.Err(), err))
	case err != nil:
		return finish(fmt.Errorf("start: %w", err))
	case rec.ExitCode != 0:
		return finish(errors.New("non-zero exit"))
	}
	return finish(nil)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// runOnHostNetwork is testcontainers.Run on the host network alone. testcontainers
// attaches every container to its default network unless that is the engine's
// "bridge"; on an engine with "bridge": "none" (the H200 device's) it creates one of its
// own, and the start fails. Naming "host" the default bridge network attaches nothing.
func runOnHostNetwork(ctx context.Context, image string, opts ...testcontainers.ContainerCustomizer) (*testcontainers.DockerContainer, error) {
	req := testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{Image: image}, Started: true}
	for _, opt := range opts {
		if err := opt.Customize(&req); err != nil {
			return nil, fmt.Errorf("customize: %w", err)
		}
	}
	popts := []testcontainers.DockerProviderOption{testcontainers.WithDefaultBridgeNetwork("host")}
	if req.Logger != nil {
		popts = append(popts, testcontainers.WithLogger(req.Logger))
	}
	provider, err := testcontainers.NewDockerProvider(popts...)
	if err != nil {
		return nil, dockerUnreachable(err)
	}
	defer provider.Close()
	// Create is not cut by ctx: cut mid-call, the engine may create a container whose id
	// the client never gets (TestInterruptAtEveryStage). ctx decides whether it starts.
	ctr, err := provider.CreateContainer(context.WithoutCancel(ctx), req.ContainerRequest)
	var c *testcontainers.DockerContainer
	if ctr != nil {
		c = ctr.(*testcontainers.DockerContainer)
	}
	if err != nil {
		return c, fmt.Errorf("create container: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return c, fmt.Errorf("create container: cancelled before it started: %w", err)
	}
	if req.Started {
		if err := c.Start(ctx); err != nil {
			return c, fmt.Errorf("start container: %w", err)
		}
	}
	return c, nil
}
