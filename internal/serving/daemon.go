package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
)

// Docker reports the daemon testcontainers connects to, or how to start dockerd.
// testcontainers resolves it once per process, a failure included.
func Docker(ctx context.Context) (schema.DaemonInfo, error) {
	return withEngine(ctx, func(cli *testcontainers.DockerClient) (schema.DaemonInfo, error) { return daemonInfo(ctx, cli) })
}

func withEngine[T any](ctx context.Context, f func(*testcontainers.DockerClient) (T, error)) (T, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	defer cli.Close()
	return f(cli)
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
	return engineGone(fmt.Errorf("docker daemon unreachable (%s, then the default socket unix:///var/run/docker.sock): %w; "+
		"start it as root with `dockerd > /tmp/dockerd.log 2>&1 &`, wait until `docker info` answers, then rerun", tried, err))
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
func checkGPURuntime(d schema.DaemonInfo, gpus []gpu.Device) error {
	if len(gpus) == 0 || d.NvidiaRuntime {
		return nil
	}
	return fmt.Errorf("GPUs %s requested, but the Docker daemon at %s has no \"nvidia\" runtime (runtimes: %s): "+
		"the NVIDIA Container Toolkit is missing or not configured; install nvidia-container-toolkit, "+
		"run `nvidia-ctk runtime configure --runtime=docker` and restart dockerd",
		strings.Join(uuids(gpus), ","), d.Endpoint, strings.Join(d.Runtimes, ", "))
}

func safeClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	if err := checkReaperOff(); err != nil {
		return nil, err
	}
	return dockerClient(ctx)
}

// checkReaperOff refuses testcontainers' reaper (its image cannot be pulled here) and an
// image name prefix (it would turn local names into pulls).
func checkReaperOff() error {
	cfg := testcontainers.ReadConfig()
	if !cfg.RyukDisabled {
		return errors.New("testcontainers' reaper is enabled: set TESTCONTAINERS_RYUK_DISABLED=true " +
			"(its image cannot be pulled here, and qualkit removes what it starts itself)")
	}
	if p := cfg.Config.HubImageNamePrefix; p != "" {
		return fmt.Errorf("testcontainers hub.image.name.prefix is %q: it would rewrite local image names into pulls; unset it", p)
	}
	return nil
}
