package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"os"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/harness/gpu"
)

// OneShot is a command run to completion in a container of an image that is already
// present (the row's server image), so a native Task runs in the very environment the
// server ran in.
type OneShot struct {
	RunID, Row, Stage string
	ImageID           string
	Cmd               Command // Args[0] is the program inside the image
	Mounts            []Mount
	GPUs              *gpu.DeviceRequestFields
	LogRel            string
}

// RunContainer runs o to completion (or until ctx ends), records it like any command,
// and removes the container whatever happens. A non-zero exit is an error carrying the
// exit code, the log path and the log's tail.
func RunContainer(ctx context.Context, ev *RowEvidence, o OneShot) (CommandRecord, error) {
	logPath := ev.Path(o.LogRel)
	spec := ContainerSpec{RunID: o.RunID, Row: o.Row, Cmd: o.Cmd, Mounts: o.Mounts, GPUs: o.GPUs}
	labels := qualkitLabels(o.RunID, o.Row)
	rec := CommandRecord{Stage: o.Stage, Args: dockerRunArgs(spec, "(one-shot)", o.ImageID, labels), Env: o.Cmd.Env, Log: logPath, Start: time.Now().UTC(), ExitCode: -1}
	finish := func(err error) (CommandRecord, error) {
		rec.WallS = time.Since(rec.Start).Seconds()
		if err != nil {
			rec.Error = err.Error()
			err = fmt.Errorf("%s in container %s exited %d: %w; log %s:\n%s", o.Cmd.Args[0], shortID(o.ImageID), rec.ExitCode, err, logPath, tailFile(logPath, 2000))
		}
		ev.Record(rec)
		return rec, err
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return finish(err)
	}
	defer cli.Close()
	c, err := testcontainers.Run(ctx, o.ImageID,
		testcontainers.WithLogger(stdlog.New(io.Discard, "", 0)),
		testcontainers.WithLabels(labels),
		testcontainers.WithConfigModifier(containerConfig(o.Cmd)),
		testcontainers.WithHostConfigModifier(ContainerHostConfig(spec)),
	)
	defer func() {
		// Removal goes on even when ctx is cancelled: nothing is left behind.
		testcontainers.TerminateContainer(c, testcontainers.StopContext(context.WithoutCancel(ctx)))
	}()
	if err != nil {
		return finish(fmt.Errorf("start: %w", err))
	}
	id := c.GetContainerID()
	for {
		res, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return finish(fmt.Errorf("inspect: %w", err))
		}
		if st := res.Container.State; st != nil && !st.Running && st.Status != "created" {
			rec.ExitCode = st.ExitCode
			break
		}
		select {
		case <-ctx.Done():
			return finish(ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return finish(err)
	}
	defer logf.Close()
	if err := copyContainerLogs(ctx, cli, id, logf, false); err != nil {
		return finish(fmt.Errorf("container log: %w", err))
	}
	if rec.ExitCode != 0 {
		return finish(errors.New("non-zero exit"))
	}
	return finish(nil)
}
