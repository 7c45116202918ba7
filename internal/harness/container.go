package harness

// Container serving: a model server run by the local Docker engine through testcontainers-go,
// with host networking (servers such as TRTMC bind loopback only), optional GPUs pinned by
// UUID, logs streamed into the row's evidence, and labels that let a later run find and remove
// whatever a killed run left behind. No registry is ever contacted: images are built here or
// must already be present, and the testcontainers reaper (Ryuk) must be disabled, so every
// path below removes what it created itself.

import (
	"bufio"
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
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/harness/gpu"
	"qualkit/internal/schema"
)

// Labels put on every container and image qualkit creates.
const (
	LabelManaged  = "qualkit.managed" // always "true"
	LabelRun      = "qualkit.run"
	LabelRow      = "qualkit.row"
	LabelPID      = "qualkit.pid"      // the harness process that created it
	LabelPIDStart = "qualkit.pidstart" // that process's start time (/proc/<pid>/stat field 22), to detect a reused pid
	LabelHost     = "qualkit.host"     // hostname of that process
)

// LeftoverAge is how old a resource labelled by another host must be before SweepLeftovers
// removes it: the process of another host cannot be checked, and no run lasts a day.
const LeftoverAge = 24 * time.Hour

// containerStopGrace is how long a server gets between SIGTERM and SIGKILL.
const containerStopGrace = 10 * time.Second

// ContainerImage is what a server container runs: either built here from a Dockerfile and a
// context folder, or Ref, an image already present locally (it is never pulled).
type ContainerImage struct {
	Dockerfile string // path of the Dockerfile, inside Context; default Context/Dockerfile
	Context    string
	Ref        string
}

// Mount is a bind mount of a host path into the container.
type Mount struct {
	Host, Container string
	ReadOnly        bool
}

// ContainerSpec describes one server container.
type ContainerSpec struct {
	RunID, Row string
	Image      ContainerImage
	// Cmd.Args[0] is the program inside the image (it becomes the entrypoint), Args[1:] its
	// arguments; Cmd.Env is the container's environment (the host's is not passed on) and
	// Cmd.Dir its working directory.
	Cmd    Command
	Mounts []Mount
	// GPUs pins the container to exactly these devices; nil means no GPU at all.
	GPUs *gpu.DeviceRequestFields
	// Port is where the server listens, on 127.0.0.1 of the host's network namespace.
	Port int
	// Ready bounds the wait for GET ReadyPath to answer 200 (model loads take minutes).
	Ready time.Duration
	// LogRel is the row-evidence path that receives the container's stdout and stderr, live.
	// The image build log (image-build.log) and testcontainers' own lines (testcontainers.log)
	// go next to it.
	LogRel string
}

// Docker reports the daemon that testcontainers connects to, or an error that says what was
// tried and how to start dockerd. testcontainers resolves the daemon once per process and
// keeps the answer, a failure included: start dockerd before the first call.
func Docker(ctx context.Context) (schema.DaemonInfo, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return schema.DaemonInfo{}, err
	}
	defer cli.Close()
	return daemonInfo(ctx, cli)
}

func dockerClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, dockerUnreachable(err)
	}
	return cli, nil
}

func dockerUnreachable(err error) error {
	tried := "DOCKER_HOST unset"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		tried = "DOCKER_HOST=" + h
	}
	return fmt.Errorf("docker daemon unreachable (%s, then the default socket unix:///var/run/docker.sock): %w; "+
		"start it as root with `dockerd > /tmp/dockerd.log 2>&1 &`, wait until `docker info` answers, then rerun", tried, err)
}

func daemonInfo(ctx context.Context, cli *testcontainers.DockerClient) (schema.DaemonInfo, error) {
	// The embedded client, not testcontainers' wrapper, which caches Info for the process's life.
	res, err := cli.Client.Info(ctx, client.InfoOptions{})
	if err != nil {
		return schema.DaemonInfo{}, dockerUnreachable(err)
	}
	in := res.Info
	d := schema.DaemonInfo{
		Endpoint: cli.DaemonHost(), ServerVersion: in.ServerVersion, OS: in.OperatingSystem,
		StorageDriver: in.Driver, CgroupVersion: in.CgroupVersion,
	}
	for name := range in.Runtimes {
		d.Runtimes = append(d.Runtimes, name)
	}
	sort.Strings(d.Runtimes)
	d.NvidiaRuntime = slices.Contains(d.Runtimes, "nvidia")
	if h := os.Getenv("DOCKER_HOST"); h != "" && h != d.Endpoint {
		d.IgnoredDockerHost = h
	}
	return d, nil
}

// checkGPURuntime refuses a GPU request the daemon cannot honour: testcontainers would start
// the container without its GPUs, and the row would silently measure a CPU.
func checkGPURuntime(d schema.DaemonInfo, g *gpu.DeviceRequestFields) error {
	if g == nil || d.NvidiaRuntime {
		return nil
	}
	return fmt.Errorf("GPUs %s requested, but the Docker daemon at %s has no \"nvidia\" runtime (runtimes: %s): "+
		"the NVIDIA Container Toolkit is missing or not configured; install nvidia-container-toolkit, "+
		"run `nvidia-ctk runtime configure --runtime=docker` and restart dockerd",
		strings.Join(g.DeviceIDs, ","), d.Endpoint, strings.Join(d.Runtimes, ", "))
}

// ContainerHostConfig returns the HostConfig modification for spec: host networking, an init
// process as PID 1 (it forwards SIGTERM and reaps the server's children), the bind mounts,
// and, when spec.GPUs is set, one device request for exactly those GPUs. It is pure.
func ContainerHostConfig(spec ContainerSpec) func(*container.HostConfig) {
	return func(hc *container.HostConfig) {
		hc.NetworkMode = "host"
		withInit := true
		hc.Init = &withInit
		for _, m := range spec.Mounts {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Host, Target: m.Container, ReadOnly: m.ReadOnly})
		}
		if g := spec.GPUs; g != nil {
			caps := make([][]string, len(g.Capabilities))
			for i, c := range g.Capabilities {
				caps[i] = slices.Clone(c)
			}
			hc.DeviceRequests = append(hc.DeviceRequests, container.DeviceRequest{
				Driver: g.Driver, DeviceIDs: slices.Clone(g.DeviceIDs), Capabilities: caps,
			})
		}
	}
}

// containerConfig sets what the Command says; testcontainers has already set the image and labels.
func containerConfig(c Command) func(*container.Config) {
	return func(cfg *container.Config) {
		cfg.Entrypoint = []string{c.Args[0]}
		cfg.Cmd = slices.Clone(c.Args[1:])
		cfg.Env = slices.Clone(c.Env)
		cfg.WorkingDir = c.Dir
	}
}

func (s ContainerSpec) validate() error {
	var problems []string
	if s.RunID == "" || s.Row == "" {
		problems = append(problems, "RunID and Row are required (they label what is created)")
	}
	if len(s.Cmd.Args) == 0 || s.Cmd.Args[0] == "" {
		problems = append(problems, "Cmd.Args is empty")
	}
	if s.Port <= 0 || s.Port > 65535 {
		problems = append(problems, fmt.Sprintf("port %d out of range", s.Port))
	}
	if s.Ready <= 0 {
		problems = append(problems, "Ready deadline not set")
	}
	if s.LogRel == "" {
		problems = append(problems, "LogRel not set")
	}
	switch img := s.Image; {
	case img.Ref != "" && (img.Context != "" || img.Dockerfile != ""):
		problems = append(problems, "image: give either Ref or Dockerfile+Context, not both")
	case img.Ref == "" && img.Context == "":
		problems = append(problems, "image: neither Ref nor Context given")
	}
	targets := map[string]bool{}
	for _, m := range s.Mounts {
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
	if s.GPUs != nil && len(s.GPUs.DeviceIDs) == 0 {
		problems = append(problems, "GPUs set without device ids (a CPU-only row sets GPUs to nil)")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// qualkitLabels are the labels of everything created for row of runID by this process.
func qualkitLabels(runID, row string) map[string]string {
	host, _ := os.Hostname()
	l := map[string]string{
		LabelManaged: "true", LabelRun: runID, LabelRow: row,
		LabelPID: strconv.Itoa(os.Getpid()), LabelHost: host,
	}
	if st, err := processStart(os.Getpid()); err == nil {
		l[LabelPIDStart] = st
	}
	return l
}

var (
	notRepoChar = regexp.MustCompile(`[^a-z0-9._-]+`)
	notTagChar  = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// imageTag is qualkit/<row>:<run id>, lowercased and reduced to what Docker accepts.
func imageTag(row, runID string) string {
	repo := strings.Trim(notRepoChar.ReplaceAllString(strings.ToLower(row), "-"), "._-")
	if repo == "" {
		repo = "row"
	}
	tag := strings.TrimLeft(notTagChar.ReplaceAllString(strings.ToLower(runID), "-"), ".-")
	if tag == "" {
		tag = "run"
	}
	if len(tag) > 128 {
		tag = tag[:128]
	}
	return "qualkit/" + repo + ":" + tag
}

// containerName is unique per start, and readable in `docker ps`.
func containerName(row, runID string) string {
	b := make([]byte, 3)
	rand.Read(b)
	n := notTagChar.ReplaceAllString(fmt.Sprintf("qualkit-%s-%s-%s", row, runID, hex.EncodeToString(b)), "-")
	return strings.TrimLeft(n, ".-")
}

// StartContainer starts spec's server in a container and waits until GET ReadyPath answers
// 200, the container exits, or spec.Ready passes. Whatever fails, nothing it created is left
// running: the container is removed (the built image is kept for the run's other rows:
// RemoveRunImages removes it). Like StartProcess, the server outlives ctx once it is ready;
// Stop ends it. The ContainerInfo is filled as far as it got, on error too.
func StartContainer(ctx context.Context, ev *RowEvidence, spec ContainerSpec) (Server, schema.ContainerInfo, error) {
	var info schema.ContainerInfo
	if err := spec.validate(); err != nil {
		return nil, info, fmt.Errorf("container spec for %s: %w", spec.Row, err)
	}
	if cfg := testcontainers.ReadConfig(); !cfg.RyukDisabled {
		return nil, info, errors.New("testcontainers' reaper is enabled: set TESTCONTAINERS_RYUK_DISABLED=true " +
			"(its image cannot be pulled here, and qualkit removes what it starts itself)")
	} else if p := cfg.Config.HubImageNamePrefix; p != "" {
		return nil, info, fmt.Errorf("testcontainers hub.image.name.prefix is %q: it would rewrite local image names into pulls; unset it", p)
	}
	// The client lives as long as the server: Stop uses it.
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, info, err
	}
	daemon, err := daemonInfo(ctx, cli)
	if err == nil {
		info.DockerEndpoint, info.DockerVersion = daemon.Endpoint, daemon.ServerVersion
		err = checkGPURuntime(daemon, spec.GPUs)
	}
	if err != nil {
		cli.Close()
		return nil, info, err
	}

	labels := qualkitLabels(spec.RunID, spec.Row)
	logPath := ev.Path(spec.LogRel)
	tcLog, err := os.OpenFile(filepath.Join(filepath.Dir(logPath), "testcontainers.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		cli.Close()
		return nil, info, fmt.Errorf("open testcontainers log: %w", err)
	}
	logger := stdlog.New(tcLog, "", stdlog.LstdFlags|stdlog.Lmicroseconds)
	fail := func(err error) (Server, schema.ContainerInfo, error) {
		tcLog.Close()
		cli.Close()
		return nil, info, err
	}

	if spec.Image.Ref != "" {
		info.ImageRef = spec.Image.Ref
		img, err := cli.ImageInspect(ctx, spec.Image.Ref)
		if err != nil {
			return fail(fmt.Errorf("image %s: %w (qualkit never pulls: build it or `docker load` it first)", spec.Image.Ref, err))
		}
		info.ImageID = img.ID
	} else {
		info.ImageRef = imageTag(spec.Row, spec.RunID)
		start := time.Now()
		id, err := buildImage(ctx, cli, ev, logger, spec.Image, info.ImageRef, labels, filepath.Join(filepath.Dir(spec.LogRel), "image-build.log"))
		info.BuildS = time.Since(start).Seconds()
		if err != nil {
			return fail(err)
		}
		info.ImageID = id
	}

	name := containerName(spec.Row, spec.RunID)
	s := &containerServer{
		url: fmt.Sprintf("http://127.0.0.1:%d", spec.Port), cli: cli, tcLog: tcLog,
		exited: make(chan struct{}), logsDone: make(chan struct{}), ev: ev,
		rec: CommandRecord{Stage: "serve", Args: dockerRunArgs(spec, name, info.ImageID, labels), Env: spec.Cmd.Env, Dir: spec.Cmd.Dir, Log: logPath},
	}
	if s.logf, err = os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return fail(fmt.Errorf("open log: %w", err))
	}
	start := time.Now()
	s.rec.Start = start.UTC()
	c, err := testcontainers.Run(ctx, info.ImageID,
		testcontainers.WithLogger(logger),
		testcontainers.WithName(name),
		testcontainers.WithLabels(labels),
		testcontainers.WithConfigModifier(containerConfig(spec.Cmd)),
		testcontainers.WithHostConfigModifier(ContainerHostConfig(spec)),
	)
	if c != nil {
		s.c, s.id = c, c.GetContainerID()
		info.ContainerID = s.id
	}
	if err != nil {
		// A failed start can still have created the container.
		rmErr := testcontainers.TerminateContainer(c)
		s.logf.Close()
		s.rec.ExitCode, s.rec.Error = -1, err.Error()
		s.rec.WallS = time.Since(start).Seconds()
		ev.Record(s.rec)
		if rmErr != nil {
			err = fmt.Errorf("%w (removing the container failed too: %v)", err, rmErr)
		}
		return fail(fmt.Errorf("start container %s from %s: %w", name, info.ImageRef, err))
	}
	s.watch(context.WithoutCancel(ctx))

	if err := waitReady(ctx, s.url, spec.Ready, s.exited); err != nil {
		st, rmErr := s.terminate(context.Background())
		switch {
		case errors.Is(err, errExited) && s.waitErr != nil:
			err = fmt.Errorf("lost track of the server container before it was ready: %w", s.waitErr)
		case errors.Is(err, errExited):
			err = fmt.Errorf("server container exited with code %d (oom_killed=%t) before it was ready", st.code, st.oomKilled)
		}
		s.record(st, err)
		err = fmt.Errorf("%w; log %s:\n%s", err, logPath, tailFile(logPath, 2000))
		if rmErr != nil {
			err = fmt.Errorf("%w\n(removing container %s failed: %v)", err, s.id, rmErr)
		}
		return nil, info, err
	}
	s.startup = time.Since(start)
	return s, info, nil
}

// buildImage builds img as tag with labels, its output in the row's buildLogRel, and returns
// the image id. The base images must already be present: the daemon would pull them.
func buildImage(ctx context.Context, cli *testcontainers.DockerClient, ev *RowEvidence, logger *stdlog.Logger,
	img ContainerImage, tag string, labels map[string]string, buildLogRel string,
) (string, error) {
	ctxDir, err := filepath.Abs(img.Context)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	dockerfile := img.Dockerfile
	if dockerfile == "" {
		dockerfile = filepath.Join(ctxDir, "Dockerfile")
	} else if !filepath.IsAbs(dockerfile) {
		if dockerfile, err = filepath.Abs(dockerfile); err != nil {
			return "", fmt.Errorf("build %s: %w", tag, err)
		}
	}
	rel, err := filepath.Rel(ctxDir, dockerfile)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("build %s: Dockerfile %s is outside the context %s", tag, dockerfile, ctxDir)
	}
	bases, err := dockerfileBases(dockerfile)
	if err != nil {
		return "", fmt.Errorf("build %s: %w", tag, err)
	}
	for _, b := range bases {
		if _, err := cli.ImageInspect(ctx, b); err != nil {
			return "", fmt.Errorf("build %s: base image %s of %s is not present locally (qualkit never pulls: `docker load` it first): %w", tag, b, dockerfile, err)
		}
	}

	logPath := ev.Path(buildLogRel)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("build %s: open log: %w", tag, err)
	}
	defer logf.Close()
	repo, version, _ := strings.Cut(tag, ":")
	args := []string{"docker", "build", "-f", dockerfile, "-t", tag}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	rec := CommandRecord{Stage: "serve", Args: append(args, ctxDir), Log: logPath, Start: time.Now().UTC()}

	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(logger))
	if err != nil {
		return "", dockerUnreachable(err)
	}
	defer provider.Close()
	_, err = provider.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context: ctxDir, Dockerfile: filepath.ToSlash(rel), Repo: repo, Tag: version,
		BuildLogWriter: logf, KeepImage: true,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) { o.Labels = labels },
	}})
	var id string
	if err == nil {
		var res client.ImageInspectResult
		if res, err = cli.ImageInspect(ctx, tag); err == nil {
			id = res.ID
		}
	}
	rec.WallS = time.Since(rec.Start).Seconds()
	if err != nil {
		rec.ExitCode, rec.Error = 1, err.Error()
		err = fmt.Errorf("build image %s: %w; log %s:\n%s", tag, err, logPath, tailFile(logPath, 2000))
	}
	if rerr := ev.Record(rec); rerr != nil && err == nil {
		err = fmt.Errorf("record build: %w", rerr)
	}
	return id, err
}

// dockerfileBases lists the images a Dockerfile starts from, leaving out scratch, earlier
// stages and names built from arguments (those cannot be checked before the build).
func dockerfileBases(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	stages := map[string]bool{}
	var bases []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		fields = fields[1:]
		for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			fields = fields[1:]
		}
		if len(fields) == 0 {
			continue
		}
		image := fields[0]
		earlierStage := stages[strings.ToLower(image)]
		if len(fields) >= 3 && strings.EqualFold(fields[1], "AS") {
			stages[strings.ToLower(fields[2])] = true
		}
		if earlierStage || strings.EqualFold(image, "scratch") || strings.Contains(image, "$") {
			continue
		}
		if !slices.Contains(bases, image) {
			bases = append(bases, image)
		}
	}
	return bases, sc.Err()
}

// dockerRunArgs renders the container as the docker run command that would create it. Env
// values stay out of argv (they go to the record's redacted Env): `-e NAME` reads them from
// the caller's environment.
func dockerRunArgs(spec ContainerSpec, name, image string, labels map[string]string) []string {
	args := []string{"docker", "run", "--name", name, "--network", "host", "--init"}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	for _, kv := range spec.Cmd.Env {
		k, _, _ := strings.Cut(kv, "=")
		args = append(args, "-e", k)
	}
	if spec.Cmd.Dir != "" {
		args = append(args, "-w", spec.Cmd.Dir)
	}
	for _, m := range spec.Mounts {
		opt := "type=bind,source=" + m.Host + ",target=" + m.Container
		if m.ReadOnly {
			opt += ",readonly"
		}
		args = append(args, "--mount", opt)
	}
	if spec.GPUs != nil {
		args = append(args, "--gpus", `"device=`+strings.Join(spec.GPUs.DeviceIDs, ",")+`"`)
	}
	args = append(args, "--entrypoint", spec.Cmd.Args[0], image)
	return append(args, spec.Cmd.Args[1:]...)
}

// containerServer is a server run in a container.
type containerServer struct {
	url     string
	c       *testcontainers.DockerContainer
	id      string
	cli     *testcontainers.DockerClient
	logf    *os.File
	tcLog   *os.File
	startup time.Duration
	ev      *RowEvidence
	rec     CommandRecord

	cancelWatch context.CancelFunc
	exited      chan struct{} // closed when the container is no longer running (or the wait failed)
	waitErr     error
	logsDone    chan struct{} // closed when the log stream ended
	logsErr     error

	mu      sync.Mutex
	stopped bool
}

func (s *containerServer) URL() string            { return s.url }
func (s *containerServer) Startup() time.Duration { return s.startup }
func (s *containerServer) Runtime() string        { return "container" }

// watch follows the container's exit and its logs, until both end or terminate stops them.
func (s *containerServer) watch(ctx context.Context) {
	ctx, s.cancelWatch = context.WithCancel(ctx)
	go func() {
		defer close(s.exited)
		w := s.cli.ContainerWait(ctx, s.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-w.Result:
		case err := <-w.Error:
			s.waitErr = err
		}
	}()
	go func() {
		defer close(s.logsDone)
		s.logsErr = copyContainerLogs(ctx, s.cli, s.id, s.logf, true)
	}()
}

func copyContainerLogs(ctx context.Context, cli *testcontainers.DockerClient, id string, w io.Writer, follow bool) error {
	rc, err := cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(w, w, rc)
	return err
}

type containerState struct {
	code      int
	oomKilled bool
}

// Stop stops the container (SIGTERM, SIGKILL after a grace period), completes its log,
// removes it with its volumes, and records the command with the container's exit code. A
// second call does nothing. Removal goes on even when ctx is already cancelled.
func (s *containerServer) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	st, err := s.terminate(ctx)
	if rerr := s.record(st, err); rerr != nil && err == nil {
		err = fmt.Errorf("record command: %w", rerr)
	}
	return err
}

func (s *containerServer) record(st containerState, err error) error {
	s.rec.WallS = time.Since(s.rec.Start).Seconds()
	s.rec.ExitCode = st.code
	if err != nil {
		s.rec.Error = err.Error()
	} else if st.oomKilled {
		s.rec.Error = "oom killed"
	}
	return s.ev.Record(s.rec)
}

// terminate stops and removes the container; it runs once (Stop and the failed start share it).
func (s *containerServer) terminate(ctx context.Context) (containerState, error) {
	s.stopped = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerStopGrace+2*time.Minute)
	defer cancel()
	var errs []error
	grace := containerStopGrace
	if err := s.c.Stop(ctx, &grace); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("stop container: %w", err))
	}
	// The log stream ends when the container has stopped; if it broke, fetch the log whole.
	select {
	case <-s.logsDone:
	case <-time.After(10 * time.Second):
		s.cancelWatch()
		<-s.logsDone
		if s.logsErr == nil {
			s.logsErr = errors.New("log stream did not end")
		}
	}
	if s.logsErr != nil {
		if err := s.logf.Truncate(0); err == nil {
			if err := copyContainerLogs(ctx, s.cli, s.id, s.logf, false); err != nil {
				errs = append(errs, fmt.Errorf("container log: %w", err))
			}
		}
	}
	st := containerState{code: -1}
	if res, err := s.cli.ContainerInspect(ctx, s.id, client.ContainerInspectOptions{}); err == nil && res.Container.State != nil {
		st = containerState{code: res.Container.State.ExitCode, oomKilled: res.Container.State.OOMKilled}
	} else if err != nil {
		errs = append(errs, fmt.Errorf("inspect container: %w", err))
	}
	if err := testcontainers.TerminateContainer(s.c, testcontainers.StopTimeout(grace), testcontainers.StopContext(ctx)); err != nil {
		errs = append(errs, fmt.Errorf("remove container: %w", err))
	}
	s.cancelWatch()
	<-s.exited
	s.logf.Close()
	s.tcLog.Close()
	s.cli.Close()
	return st, errors.Join(errs...)
}

// processStart is field 22 of /proc/<pid>/stat: the process's start time in clock ticks
// since boot. Together with the pid it names one process; a reused pid has another.
func processStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may hold spaces and parentheses: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return f[19], nil
}

// processAlive says whether pid is still the process that started at start ("" when unknown).
func processAlive(pid int, start string) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if start != "" {
		if got, err := processStart(pid); err == nil && got != start {
			return false
		}
	}
	return true
}

// self identifies this harness process for leftoverReason.
type self struct {
	host string
	pid  int
}

// leftoverReason decides whether a qualkit-labelled resource is a leftover, and why. The rule:
//   - the current run's resources are never leftovers, nor are those of this very process
//     (another run in the same process is alive by definition);
//   - a resource of this host is a leftover when its process is gone: its pid no longer runs,
//     or runs a process that started at another time (a reused pid);
//   - a resource of another host (or without a readable pid) is a leftover only once it is
//     older than LeftoverAge, since a live run elsewhere cannot be told from a dead one.
func leftoverReason(labels map[string]string, created time.Time, currentRunID string, me self, now time.Time, alive func(pid int, start string) bool) (string, bool) {
	if labels[LabelRun] == currentRunID {
		return "", false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	if labels[LabelHost] == me.host && err == nil && pid > 0 {
		if pid == me.pid {
			return "", false
		}
		if alive(pid, labels[LabelPIDStart]) {
			return "", false
		}
		return fmt.Sprintf("process %d on %s that created it is gone", pid, me.host), true
	}
	if age := now.Sub(created); age > LeftoverAge {
		return fmt.Sprintf("created by %s pid %s %s ago, more than %s", labels[LabelHost], labels[LabelPID], age.Round(time.Minute), LeftoverAge), true
	}
	return "", false
}

// SweepLeftovers removes the containers, then the images, that qualkit created for runs
// other than currentRunID and that leftoverReason calls leftovers (their process is gone, or
// they come from another host and are older than LeftoverAge). It returns one line per
// removed resource. An image still used by a container is kept.
func SweepLeftovers(ctx context.Context, currentRunID string) ([]string, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	host, _ := os.Hostname()
	me, now := self{host: host, pid: os.Getpid()}, time.Now()
	managed := make(client.Filters).Add("label", LabelManaged+"=true")

	var removed []string
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: managed})
	if err != nil {
		return nil, fmt.Errorf("sweep: list containers: %w", err)
	}
	for _, c := range cs.Items {
		why, ok := leftoverReason(c.Labels, time.Unix(c.Created, 0), currentRunID, me, now, processAlive)
		if !ok {
			continue
		}
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("sweep: remove container %s: %w", shortID(c.ID), err))
			continue
		}
		removed = append(removed, fmt.Sprintf("container %s %s (run %s, row %s): %s",
			shortID(c.ID), strings.TrimPrefix(strings.Join(c.Names, ","), "/"), c.Labels[LabelRun], c.Labels[LabelRow], why))
	}
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: managed})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("sweep: list images: %w", err))...)
	}
	for _, img := range imgs.Items {
		why, ok := leftoverReason(img.Labels, time.Unix(img.Created, 0), currentRunID, me, now, processAlive)
		if !ok {
			continue
		}
		_, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
		switch {
		case cerrdefs.IsConflict(err):
			continue // still used by a container that is not a leftover
		case err != nil && !cerrdefs.IsNotFound(err):
			errs = append(errs, fmt.Errorf("sweep: remove image %s: %w", shortID(img.ID), err))
			continue
		}
		removed = append(removed, fmt.Sprintf("image %s %s (run %s, row %s): %s",
			shortID(img.ID), strings.Join(img.RepoTags, ","), img.Labels[LabelRun], img.Labels[LabelRow], why))
	}
	return removed, errors.Join(errs...)
}

// RemoveRunImages removes the images built for runID (by any of its rows).
func RemoveRunImages(ctx context.Context, runID string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelManaged+"=true", LabelRun+"="+runID)
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: f})
	if err != nil {
		return fmt.Errorf("remove images of run %s: %w", runID, err)
	}
	var errs []error
	for _, img := range imgs.Items {
		_, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s %s of run %s: %w", shortID(img.ID), strings.Join(img.RepoTags, ","), runID, err))
		}
	}
	return errors.Join(errs...)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
