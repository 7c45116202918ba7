package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Labels of every container and image qualkit creates (and, without run and row, of a
// session's presence volume). The engine builds them as one LABEL step each, in key
// order: the steps before the pid's are shared by every run on the host, those before
// the run's by every run of the process, and only the last (the session's) is tagged.
const (
	LabelManaged  = "qualkit.managed" // always "true"
	LabelRun      = "qualkit.run"
	LabelRow      = "qualkit.row"
	LabelSession  = "qualkit.session" // Owner's fields, in order
	LabelPID      = "qualkit.pid"
	LabelPIDStart = "qualkit.pidstart"
	LabelPIDNS    = "qualkit.pidns"
	LabelHost     = "qualkit.host"
)

// LeftoverAge is how old a resource of another host or PID namespace must be before a
// sweep removes it: its process cannot be checked, and no run lasts a day.
const LeftoverAge = 24 * time.Hour

// processStart is field 22 of /proc/<pid>/stat, the start time: a reused pid has another.
func processStart(pid int) (string, error) {
	f, err := procStat(pid)
	if err != nil {
		return "", err
	}
	return f[19], nil
}

func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may hold spaces and parentheses: count from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return f, nil
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

// leftoverReason says whether a qualkit-labelled resource is a leftover, and why:
//   - never the current run's, nor this process's (its session);
//   - never a build step that names no run and no process (SweepShared's);
//   - one of this host and PID namespace when its process is gone (its pid runs no more,
//     or runs a process that started at another time);
//   - one of another host or PID namespace (or with no pid) once older than LeftoverAge.
func leftoverReason(labels map[string]string, created time.Time, currentRunID string, me Owner, now time.Time, alive func(pid int, start string) bool) (string, bool) {
	run := labels[LabelRun]
	switch {
	case run != "" && run == currentRunID:
		return "", false
	case labels[LabelSession] != "" && labels[LabelSession] == me.Session:
		return "", false
	}
	pid, err := strconv.Atoi(labels[LabelPID])
	known := err == nil && pid > 0
	if !known && run == "" {
		return "", false
	}
	ns := labels[LabelPIDNS]
	if known && labels[LabelHost] == me.Host && (ns == "" || ns == me.PIDNS) {
		if pid == me.PID && (labels[LabelPIDStart] == "" || labels[LabelPIDStart] == me.PIDStart) {
			return "", false
		}
		if alive(pid, labels[LabelPIDStart]) {
			return "", false
		}
		return fmt.Sprintf("process %d on %s that created it is gone", pid, me.Host), true
	}
	if age := now.Sub(created); age > LeftoverAge {
		where := labels[LabelHost]
		if known && where == me.Host {
			where += " (PID namespace " + ns + ")"
		}
		return fmt.Sprintf("created by %s pid %s %s ago, more than %s", where, labels[LabelPID], age.Round(time.Minute), LeftoverAge), true
	}
	return "", false
}

func managedFilter(more ...string) client.Filters {
	return make(client.Filters).Add("label", append([]string{LabelManaged + "=true"}, more...)...)
}

// SweepLeftovers removes the containers, images and presence volumes of runs other than
// currentRunID that leftoverReason calls leftovers, one line each. An image a container
// uses stays, and no image goes with its parents (another run may build on them).
func SweepLeftovers(ctx context.Context, currentRunID string) ([]string, error) {
	return withEngine(ctx, func(cli *testcontainers.DockerClient) ([]string, error) {
		return sweepLeftovers(ctx, cli, currentRunID, Self(), time.Now())
	})
}

func sweepLeftovers(ctx context.Context, cli *testcontainers.DockerClient, currentRunID string, me Owner, now time.Time) ([]string, error) {
	why := func(labels map[string]string, created int64) (string, bool) {
		return leftoverReason(labels, time.Unix(created, 0), currentRunID, me, now, processAlive)
	}
	var errs []error
	removed, err := removeContainers(ctx, cli, managedFilter(), why)
	if err != nil {
		errs = append(errs, fmt.Errorf("sweep: %w", err))
	}
	gone, err := removeLabelled(ctx, cli, managedFilter(), func(img image.Summary) (string, bool) { return why(img.Labels, img.Created) })
	removed = append(removed, gone...)
	var kept *keptImages
	if err != nil && !errors.As(err, &kept) { // an image a container still uses stays
		errs = append(errs, fmt.Errorf("sweep: %w", err))
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: managedFilter()})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("sweep: list volumes: %w", err))...)
	}
	for _, v := range vs.Items {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		reason, ok := leftoverReason(v.Labels, created, currentRunID, me, now, processAlive)
		if !ok {
			continue
		}
		if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("sweep: remove volume %s: %w", v.Name, err))
			continue
		}
		removed = append(removed, fmt.Sprintf("volume %s (session %s): %s", v.Name, v.Labels[LabelSession], reason))
	}
	return removed, errors.Join(errs...)
}

// removeContainers force-removes the containers why accepts, a line for each.
func removeContainers(ctx context.Context, cli *testcontainers.DockerClient, filter client.Filters, why func(map[string]string, int64) (string, bool)) ([]string, error) {
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var removed []string
	var errs []error
	for _, c := range cs.Items {
		reason, ok := why(c.Labels, c.Created)
		if !ok {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(c.ID), err))
			continue
		}
		line := fmt.Sprintf("container %s %s (run %s, row %s)", shortID(c.ID), strings.TrimPrefix(strings.Join(c.Names, ","), "/"), c.Labels[LabelRun], c.Labels[LabelRow])
		if reason != "" {
			line += ": " + reason
		}
		removed = append(removed, line)
	}
	return removed, errors.Join(errs...)
}

// removeLabelled removes the images why accepts (removeImages), a line for each.
func removeLabelled(ctx context.Context, cli *testcontainers.DockerClient, filter client.Filters, why func(image.Summary) (string, bool)) ([]string, error) {
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, fmt.Errorf("list images: %w", err)
	}
	var these []image.Summary
	reasons := map[string]string{}
	for _, img := range imgs.Items {
		if reason, ok := why(img); ok {
			these, reasons[img.ID] = append(these, img), reason
		}
	}
	gone, err := removeImages(ctx, cli, these)
	var removed []string
	for _, img := range gone {
		removed = append(removed, strings.TrimSuffix(describeImage(img)+": "+reasons[img.ID], ": "))
	}
	return removed, err
}

// removeImages removes imgs, children first, each alone (no PruneChildren, no force): the
// engine keeps one in use or a parent of another image (a conflict). It returns those removed.
func removeImages(ctx context.Context, cli *testcontainers.DockerClient, imgs []image.Summary) ([]image.Summary, error) {
	var removed []image.Summary
	var errs []error
	left := imgs
	for len(left) > 0 {
		var next []image.Summary
		var conflicts []error
		for _, img := range left {
			_, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{})
			switch {
			case err == nil || cerrdefs.IsNotFound(err):
				removed = append(removed, img)
			case cerrdefs.IsConflict(err):
				next = append(next, img)
				conflicts = append(conflicts, fmt.Errorf("keep image %s: %w", describeImage(img), err))
			default:
				errs = append(errs, fmt.Errorf("remove image %s: %w", describeImage(img), err))
			}
		}
		if len(next) == len(left) {
			// No progress: what is left is in use (a container, or a child that is not ours).
			if len(errs) == 0 && len(conflicts) > 0 {
				return removed, &keptImages{errors.Join(conflicts...)}
			}
			break
		}
		left = next
	}
	return removed, errors.Join(errs...)
}

type keptImages struct{ err error }

func (k *keptImages) Error() string { return k.err.Error() }
func (k *keptImages) Unwrap() error { return k.err }

// tagged says whether img has a name (an older engine names an untagged one <none>:<none>).
func tagged(img image.Summary) bool {
	for _, t := range img.RepoTags {
		if t != "<none>:<none>" {
			return true
		}
	}
	return false
}

func describeImage(img image.Summary) string {
	tags := strings.Join(img.RepoTags, ",")
	if !tagged(img) {
		tags = "(a build step)"
	}
	return fmt.Sprintf("image %s %s (run %s, row %s)", shortID(img.ID), tags, img.Labels[LabelRun], img.Labels[LabelRow])
}

// RemoveRunImages removes the images this process built for runID (tagged, and the build
// steps with the run's label), then its own steps no image needs (removeProcessSteps).
func RemoveRunImages(ctx context.Context, runID string) error {
	_, err := withEngine(ctx, func(cli *testcontainers.DockerClient) (any, error) { return nil, removeRunImages(ctx, cli, runID) })
	return err
}

func removeRunImages(ctx context.Context, cli *testcontainers.DockerClient, runID string) error {
	if _, err := removeLabelled(ctx, cli, managedFilter(LabelRun+"="+runID), func(img image.Summary) (string, bool) { return "", Self().owns(img.Labels) }); err != nil {
		return fmt.Errorf("remove images of run %s: %w", runID, err)
	}
	removeProcessSteps(ctx, cli)
	return nil
}

// processSteps is held for reading by every build of this process, and for writing while
// it removes its own label steps (naming it and no run): no other process builds on them.
var processSteps sync.RWMutex

func removeProcessSteps(ctx context.Context, cli *testcontainers.DockerClient) {
	if !processSteps.TryLock() {
		return // a build is in flight: the process's end removes them (RemoveSession)
	}
	defer processSteps.Unlock()
	removeLabelled(ctx, cli, managedFilter(LabelPID+"="+strconv.Itoa(Self().PID)), func(img image.Summary) (string, bool) {
		return "", img.Labels[LabelRun] == "" && !tagged(img) && Self().owns(img.Labels)
	})
}

// RemoveRunContainers force-removes this process's containers and images of runID: a run
// that must exit now (a second signal) leaves them to no later sweep.
func RemoveRunContainers(ctx context.Context, runID string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = removeContainers(ctx, cli, managedFilter(LabelRun+"="+runID), func(l map[string]string, _ int64) (string, bool) { return "", Self().owns(l) })
	if err != nil {
		err = fmt.Errorf("run %s: %w", runID, err)
	}
	return errors.Join(err, removeRunImages(ctx, cli, runID))
}
