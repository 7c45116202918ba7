package serving

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
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

// labels are the labels of everything created for row of runID by this process.
func labels(runID, row string) map[string]string {
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

// RemoveRunContainers force-removes every container started for runID, then its images:
// what a run that must exit now (a second signal) leaves to no later sweep.
func RemoveRunContainers(ctx context.Context, runID string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelManaged+"=true", LabelRun+"="+runID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("remove containers of run %s: %w", runID, err)
	}
	var errs []error
	for _, c := range cs.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s of run %s: %w", shortID(c.ID), runID, err))
		}
	}
	return errors.Join(append(errs, RemoveRunImages(ctx, runID))...)
}
