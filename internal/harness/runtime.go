package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/gpu"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
)

// inImage says whether a stage's commands run in the family's container image: the one
// place that decides. The server, the native Task and the preflight probes of a
// container row do, and the stages the family's ContainerImage names.
func (r *row) inImage(stage string) bool {
	if r.spec.Image == nil || r.s.rowRuntime(r.c) != RuntimeContainer {
		return false
	}
	switch stage {
	case schema.StagePreflight, schema.StageServe, schema.StageIdentity:
		return true
	}
	ci, err := r.spec.Image(r.env)
	// An image the family cannot state fails where the stage prepares it (image), never
	// runs the stage on the host instead.
	return err != nil || slices.Contains(ci.Stages, stage)
}

// options are the serving options of a stage's commands: the command record, the row's
// GPUs by UUID, and, when the stage runs in the image, the container with the family's
// mounts and mounts, which the harness adds at their host paths.
func (r *row) options(ctx context.Context, stage string, mounts ...Mount) ([]serving.Option, error) {
	return r.optionsOn(ctx, stage, r.gpus, mounts...)
}

func (r *row) optionsOn(ctx context.Context, stage string, gpus []gpu.Device, mounts ...Mount) ([]serving.Option, error) {
	opts := []serving.Option{serving.WithRecorder(r.ev, stage)}
	if stage == schema.StageBuild && r.earlyBuild != nil {
		opts = []serving.Option{serving.WithRecorder(buildRecorder{r.ev, r.earlyBuild}, stage)}
	}
	if r.s.cfg.Reaper != nil {
		opts = append(opts, serving.WithGroupTracker(r.s.cfg.Reaper))
	}
	if len(gpus) > 0 && stage != schema.StageBenchmark {
		opts = append(opts, serving.WithGPUs(gpus))
	}
	if !r.inImage(stage) {
		// A process's temp files (a go build's work folder) go with the row's work folder,
		// even when the process is killed before it removes them.
		if r.env.Work != "" {
			opts = append(opts, serving.WithTempDir(filepath.Join(r.env.Work, "tmp")))
		}
		return opts, nil
	}
	img, err := r.image(ctx, stage)
	if err != nil {
		return nil, err
	}
	ci, err := r.spec.Image(r.env)
	if err != nil {
		return nil, fmt.Errorf("the family's image: %w", err)
	}
	all := append(slices.Clone(ci.Mounts), mounts...)
	all = append(all, at(false, r.env.Work)...)
	c := serving.Container{Image: img, RunID: r.s.Evidence.RunID, Row: r.c.Name, IPCHost: ci.IPCHost, MemoryBytes: ci.MemoryBytes,
		UnderEntrypoint: ci.UnderEntrypoint, Mounts: nested(all)}
	return append(opts, serving.InContainer(c)), nil
}

// nested drops the mounts another mount already provides: Docker refuses two mounts at
// one path, and a folder inside a folder mounted at its own path needs no mount of its
// own when the outer one gives at least its access. Of two mounts of one path with the
// same access, the first stays.
func nested(ms []Mount) []Mount {
	var out []Mount
	for i, m := range ms {
		if !covered(m, i, ms) {
			out = append(out, m)
		}
	}
	return out
}

func covered(m Mount, i int, ms []Mount) bool {
	if m.Host != m.Container {
		return false
	}
	for j, o := range ms {
		if j == i || o.Host != o.Container || o.ReadOnly && !m.ReadOnly {
			continue
		}
		if strings.HasPrefix(m.Host, strings.TrimSuffix(o.Host, "/")+"/") {
			return true
		}
		if o.Host == m.Host && (o.ReadOnly != m.ReadOnly || j < i) {
			return true
		}
	}
	return false
}

// image makes the family's image present, once per row, and records it in the result.
func (r *row) image(ctx context.Context, stage string) (serving.Image, error) {
	if r.img != nil {
		return *r.img, nil
	}
	ci, err := r.spec.Image(r.env)
	if err != nil {
		return serving.Image{}, fmt.Errorf("the family's image: %w", err)
	}
	spec := serving.ImageSpec{Dockerfile: ci.Dockerfile, Context: ci.Context, Ref: ci.Ref, Paths: ci.Paths, CopyRoots: ci.CopyRoots, BuildArgs: ci.BuildArgs}
	what := ci.Ref + ci.Context
	if len(ci.CopyRoots) > 0 {
		what = ci.Dockerfile + ", its context staged from its COPY lines"
	}
	r.prog.printf("preparing the image (%s)", orDash(what))
	unlock := r.s.lockKey("image\x00" + ci.Ref + "\x00" + ci.Context + "\x00" + ci.Dockerfile + "\x00" + strings.Join(ci.CopyRoots, "\x00")) // rows side by side prepare it once at a time
	img, err := serving.PrepareImage(ctx, spec, r.s.Evidence.RunID, r.c.Name, r.ev.Path(schema.ImageBuildLog), serving.WithRecorder(r.ev, stage))
	unlock()
	info := &schema.ContainerInfo{ImageID: img.ID, ImageRef: img.Ref, BuildS: img.BuildS}
	if img.Context != nil {
		info.BuildContext = &img.Context.ImageContext
	}
	if d := r.s.daemon; d != nil {
		info.DockerEndpoint, info.DockerVersion = d.Endpoint, d.ServerVersion
	}
	r.result.Container = info
	if err != nil {
		return img, fmt.Errorf("image: %w", err)
	}
	r.img = &img
	r.env.ImageID = img.ID
	return img, nil
}

// job runs one command of a stage to completion, where the stage runs, with its output in
// logRel (the log the stage's heartbeat quotes).
func (r *row) job(ctx context.Context, stage string, c Command, logRel string, mounts ...Mount) (schema.CommandRecord, error) {
	return r.jobOn(ctx, stage, c, logRel, r.gpus, mounts...)
}

// jobOn is job on the given GPUs (a subset of the row's).
func (r *row) jobOn(ctx context.Context, stage string, c Command, logRel string, gpus []gpu.Device, mounts ...Mount) (schema.CommandRecord, error) {
	opts, err := r.optionsOn(ctx, stage, gpus, mounts...)
	if err != nil {
		return schema.CommandRecord{}, err
	}
	log := r.ev.Path(logRel)
	if stage == schema.StageBuild {
		r.buildProg.watch(log) // the build may have begun during preflight, beside its stage's progress
	} else {
		r.prog.watch(log)
	}
	return serving.Run(ctx, c, log, opts...)
}

// at mounts host paths at the same paths: the bundle, records, artifacts and files the
// harness hands a command need no mapping inside the container.
func at(readOnly bool, paths ...string) []Mount {
	out := make([]Mount, len(paths))
	for i, p := range paths {
		out[i] = Mount{Host: p, Container: p, ReadOnly: readOnly}
	}
	return out
}
