package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/family"
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

// options are the serving options of a stage's commands: the record (nil: the row's),
// the GPUs, and in the image the container with the family's mounts and mounts.
func (r *row) options(ctx context.Context, stage string, gpus []gpu.Device, rec serving.Recorder, mounts ...family.Mount) ([]serving.Option, error) {
	if rec == nil {
		rec = r.ev
	}
	opts := []serving.Option{serving.WithRecorder(rec, stage)}
	if r.s.cfg.Reaper != nil {
		opts = append(opts, serving.WithGroupTracker(r.s.cfg.Reaper))
	}
	if len(gpus) > 0 && stage != schema.StageBenchmark {
		opts = append(opts, serving.WithGPUs(gpus))
	}
	if !r.inImage(stage) {
		// A killed process's temp files (a go build's) go with the row's work folder.
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

// nested drops the mounts another already provides (Docker refuses two at one path): a
// folder inside one mounted at its own path with at least its access, or a later twin.
func nested(ms []family.Mount) []family.Mount {
	var out []family.Mount
	for i, m := range ms {
		if !covered(m, i, ms) {
			out = append(out, m)
		}
	}
	return out
}

func covered(m family.Mount, i int, ms []family.Mount) bool {
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

type rowImage struct {
	img  serving.Image
	info *schema.ContainerInfo
	err  error
}

func (r *row) image(ctx context.Context, stage string) (serving.Image, error) {
	if r.img != nil && r.img.err == nil {
		return r.img.img, nil
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
	unlock := r.s.keys.lock("image\x00" + ci.Ref + "\x00" + ci.Context + "\x00" + ci.Dockerfile + "\x00" + strings.Join(ci.CopyRoots, "\x00")) // rows side by side prepare it once at a time
	img, err := serving.PrepareImage(ctx, spec, r.s.Evidence.RunID, r.c.Name, r.ev.Path(schema.ImageBuildLog), serving.WithRecorder(r.ev, stage))
	unlock()
	info := &schema.ContainerInfo{ImageID: img.ID, ImageRef: img.Ref, BuildS: img.BuildS}
	if img.Context != nil {
		info.BuildContext = &img.Context.ImageContext
	}
	if d := r.s.daemon; d != nil {
		info.DockerEndpoint, info.DockerVersion = d.Endpoint, d.ServerVersion
	}
	r.img = &rowImage{img: img, info: info, err: err}
	if err != nil {
		return img, fmt.Errorf("image: %w", err)
	}
	r.env.ImageID = img.ID
	return img, nil
}

// job runs one command of p's stage to completion, where the stage runs, on gpus, its
// output in logRel (which the heartbeat quotes).
func (r *row) job(ctx context.Context, p *progress, c family.Command, logRel string, gpus []gpu.Device, mounts ...family.Mount) (schema.CommandRecord, error) {
	opts, err := r.options(ctx, p.stage, gpus, p.recorder(), mounts...)
	if err != nil {
		return schema.CommandRecord{}, err
	}
	log := r.ev.Path(logRel)
	p.watch(log)
	return serving.Run(ctx, c, log, opts...)
}

// at mounts host paths at the same paths, so what the harness hands a command needs no mapping.
func at(readOnly bool, paths ...string) []family.Mount {
	out := make([]family.Mount, len(paths))
	for i, p := range paths {
		out[i] = family.Mount{Host: p, Container: p, ReadOnly: readOnly}
	}
	return out
}
