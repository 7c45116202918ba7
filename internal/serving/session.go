package serving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

func presenceName(o Owner) string { return "qualkit-session-" + o.Session }

// MarkPresent creates o's presence volume (it needs no image, and any host sees it):
// while o runs, SweepShared removes no shared build step o may build on.
func MarkPresent(ctx context.Context, o Owner) error {
	_, err := withEngine(ctx, func(cli *testcontainers.DockerClient) (client.VolumeCreateResult, error) {
		return cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: presenceName(o), Labels: o.ownerLabels()})
	})
	if err != nil {
		return fmt.Errorf("mark %s present: %w", o, err)
	}
	return nil
}

// RemoveSession removes o's containers, images and presence volume, one line each.
func RemoveSession(ctx context.Context, o Owner) ([]string, error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var errs []error
	removed, err := removeContainers(ctx, cli, managedFilter(LabelSession+"="+o.Session), func(map[string]string, int64) (string, bool) { return "", true })
	if err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", o, err))
	}
	gone, err := removeLabelled(ctx, cli, managedFilter(), func(img image.Summary) (string, bool) { return "", o.owns(img.Labels) })
	removed = append(removed, gone...)
	if err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", o, err))
	}
	if _, err := cli.VolumeRemove(ctx, presenceName(o), client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove volume %s: %w", presenceName(o), err))
	}
	return removed, errors.Join(errs...)
}

// SweepShared removes dead sessions' leftovers, then, when no session but me is alive on
// the engine, the build steps that name no process (and beneath them those no other
// image needs). alive names a live session's resource when one stopped it.
func SweepShared(ctx context.Context, me Owner) (removed []string, alive string, err error) {
	cli, err := dockerClient(ctx)
	if err != nil {
		return nil, "", err
	}
	defer cli.Close()
	now := time.Now()
	if removed, err = sweepLeftovers(ctx, cli, "", me, now); err != nil {
		return removed, "", err
	}
	other := func(what, id string, labels map[string]string, created time.Time) bool {
		if me.owns(labels) || labels[LabelSession] == "" && labels[LabelPID] == "" {
			return false
		}
		if _, leftover := leftoverReason(labels, created, "", me, now, processAlive); leftover {
			return false
		}
		alive = fmt.Sprintf("%s %s of session %s (pid %s on %s)", what, id, labels[LabelSession], labels[LabelPID], labels[LabelHost])
		return true
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: managedFilter()})
	if err != nil {
		return removed, "", fmt.Errorf("sweep shared: list volumes: %w", err)
	}
	for _, v := range vs.Items {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		if other("volume", v.Name, v.Labels, created) {
			return removed, alive, nil
		}
	}
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: managedFilter()})
	if err != nil {
		return removed, "", fmt.Errorf("sweep shared: list containers: %w", err)
	}
	for _, c := range cs.Items {
		if other("container", shortID(c.ID), c.Labels, time.Unix(c.Created, 0)) {
			return removed, alive, nil
		}
	}
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: managedFilter()})
	if err != nil {
		return removed, "", fmt.Errorf("sweep shared: list images: %w", err)
	}
	var shared []image.Summary
	for _, img := range imgs.Items {
		if other("image", shortID(img.ID), img.Labels, time.Unix(img.Created, 0)) {
			return removed, alive, nil
		}
		if img.Labels[LabelRun] == "" && img.Labels[LabelPID] == "" && img.Labels[LabelSession] == "" {
			shared = append(shared, img)
		}
	}
	var errs []error
	for _, img := range shared {
		res, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true})
		switch {
		case cerrdefs.IsConflict(err) || cerrdefs.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("sweep shared: remove image %s: %w", shortID(img.ID), err))
			continue
		}
		n := 0
		for _, d := range res.Items {
			if d.Deleted != "" {
				n++
			}
		}
		removed = append(removed, fmt.Sprintf("image %s, a build step no run names, and %d build step(s) beneath it no other image needs (no qualkit session alive)", shortID(img.ID), n-1))
	}
	return removed, "", errors.Join(errs...)
}

// KillSession kills every process whose environment holds o's SessionEnv, whatever its
// group, and waits until none is left, within at most; one line per process.
func KillSession(o Owner, within time.Duration) ([]string, error) {
	want := []byte(o.sessionEnv())
	return killAll(o.String(), within, func() []int {
		return processes(func(pid int, _ []string) bool {
			env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			return slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) })
		})
	})
}

// KillGroups kills every process of groups, and waits until none runs, within at most;
// one line per process. A group whose leader's pid now has another start is left alone.
func KillGroups(groups []Group, within time.Duration) ([]string, error) {
	ours := map[string]bool{}
	for _, g := range groups {
		if start, err := processStart(g.ID); err != nil || g.Start == "" || start == g.Start {
			ours[strconv.Itoa(g.ID)] = true
		}
	}
	return killAll("the session's groups", within, func() []int {
		if len(ours) == 0 {
			return nil
		}
		return processes(func(_ int, stat []string) bool { return ours[stat[2]] })
	})
}

func killAll(whose string, within time.Duration, list func() []int) ([]string, error) {
	var killed []string
	seen := map[int]bool{}
	for deadline := time.Now().Add(within); ; {
		pids := list()
		if len(pids) == 0 {
			return killed, nil
		}
		for _, pid := range pids {
			if !seen[pid] { // its command line while it still has one
				seen[pid] = true
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				killed = append(killed, fmt.Sprintf("process %d: %s", pid, strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))))
			}
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("%d process(es) of %s still alive %s after SIGKILL: %v", len(pids), whose, within, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processes lists the live processes (zombies aside) but this one that keep accepts,
// given the pid and its /proc/<pid>/stat fields (procStat).
func processes(keep func(pid int, stat []string) bool) []int {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if f, err := procStat(pid); err == nil && f[0] != "Z" && f[0] != "X" && keep(pid, f) {
			out = append(out, pid)
		}
	}
	return out
}
