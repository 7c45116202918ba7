package serving

import (
	"context"
	"fmt"
	stdlog "log"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/schema"
)

// ImageSpec is the image a family runs in: built from a Dockerfile, or Ref, present
// locally (never pulled).
type ImageSpec struct {
	Dockerfile string // path of the Dockerfile, inside Context; default Context/Dockerfile
	Context    string
	Ref        string
	// Paths maps host paths to the image's copies of them: commands run those.
	Paths map[string]string
	// CopyRoots, when set, replace Context: the context is staged (StageContext).
	CopyRoots []string
	// BuildArgs are --build-arg values; a FROM naming one is checked like any base.
	BuildArgs map[string]string
}

type Image struct {
	ID, Ref string
	BuildS  float64 // build wall time; 0 when the image was given by Ref
	Paths   map[string]string
	Context *BuildContext // the staged context it was built from (ImageSpec.CopyRoots)
}

// PrepareImage builds spec's image as qualkit/<row>:<run id>, labelled for the sweep, its
// output in buildLog and recorded like any command, or checks that Ref is present.
func PrepareImage(ctx context.Context, spec ImageSpec, runID, row, buildLog string, opts ...Option) (Image, error) {
	o := newOptions(opts)
	switch {
	case spec.Ref != "" && (spec.Context != "" || spec.Dockerfile != ""):
		return Image{}, fmt.Errorf("image: give either Ref or Dockerfile+Context, not both")
	case spec.Ref != "" && len(spec.CopyRoots) > 0:
		return Image{}, fmt.Errorf("image: give either Ref or Dockerfile+CopyRoots, not both")
	case len(spec.CopyRoots) > 0 && (spec.Dockerfile == "" || spec.Context != ""):
		return Image{}, fmt.Errorf("image: CopyRoots need the Dockerfile's path and no Context")
	case spec.Ref == "" && spec.Context == "" && len(spec.CopyRoots) == 0:
		return Image{}, fmt.Errorf("image: neither Ref nor Context given")
	}
	cli, err := safeClient(ctx)
	if err != nil {
		return Image{}, err
	}
	defer cli.Close()
	if spec.Ref != "" {
		res, err := cli.ImageInspect(ctx, spec.Ref)
		if err != nil {
			return Image{}, fmt.Errorf("image %s: %w (qualkit never pulls: build it or `docker load` it first)", spec.Ref, err)
		}
		return Image{ID: res.ID, Ref: spec.Ref, Paths: spec.Paths}, nil
	}
	return build(ctx, cli, spec, imageTag(row, runID), Self().labels(runID, row), buildLog, o)
}

// BuildTagged builds spec (never a Ref) as tag (default version latest), an image the
// user keeps: no run label, so no sweep removes it.
func BuildTagged(ctx context.Context, spec ImageSpec, tag, buildLog string) (Image, error) {
	if spec.Ref != "" || spec.Dockerfile == "" || (spec.Context == "") == (len(spec.CopyRoots) == 0) {
		return Image{}, fmt.Errorf("image %s: give a Dockerfile and either a Context or CopyRoots", tag)
	}
	if i := strings.LastIndex(tag, "/"); !strings.Contains(tag[i+1:], ":") {
		tag += ":latest"
	}
	cli, err := safeClient(ctx)
	if err != nil {
		return Image{}, err
	}
	defer cli.Close()
	return build(ctx, cli, spec, tag, nil, buildLog, options{})
}

func build(ctx context.Context, cli *testcontainers.DockerClient, spec ImageSpec, tag string, labels map[string]string, buildLog string, o options) (Image, error) {
	img := Image{Ref: tag, Paths: spec.Paths}
	start := time.Now()
	if len(spec.CopyRoots) > 0 {
		tmp, err := os.MkdirTemp("", "qualkit-context-")
		if err != nil {
			return Image{}, fmt.Errorf("image: %w", err)
		}
		defer os.RemoveAll(tmp)
		bc, err := StageContext(spec.Dockerfile, spec.CopyRoots, filepath.Join(tmp, "context"))
		if err != nil {
			return Image{}, fmt.Errorf("image: %w", err)
		}
		img.Context = &bc
		spec.Context, spec.Dockerfile = bc.Dir, filepath.Join(bc.Dir, StagedDockerfile)
	}
	// The base images must already be present: the daemon would pull them.
	ctxDir, err := filepath.Abs(spec.Context)
	if err != nil {
		return Image{}, fmt.Errorf("build %s: %w", tag, err)
	}
	dockerfile := spec.Dockerfile
	if dockerfile == "" {
		dockerfile = filepath.Join(ctxDir, "Dockerfile")
	} else if !filepath.IsAbs(dockerfile) {
		if dockerfile, err = filepath.Abs(dockerfile); err != nil {
			return Image{}, fmt.Errorf("build %s: %w", tag, err)
		}
	}
	rel, err := filepath.Rel(ctxDir, dockerfile)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return Image{}, fmt.Errorf("build %s: Dockerfile %s is outside the context %s", tag, dockerfile, ctxDir)
	}
	bases, err := DockerfileBases(dockerfile, spec.BuildArgs)
	if err != nil {
		return Image{}, fmt.Errorf("build %s: %w", tag, err)
	}
	for _, b := range bases {
		if _, err := cli.ImageInspect(ctx, b); err != nil {
			return Image{}, fmt.Errorf("build %s: base image %s of %s is not present locally (qualkit never pulls: `docker load` it first): %w", tag, b, dockerfile, err)
		}
	}
	logf, err := os.OpenFile(buildLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Image{}, fmt.Errorf("build %s: open log: %w", tag, err)
	}
	defer logf.Close()
	repo, version, _ := strings.Cut(tag, ":")
	args := []string{"docker", "build", "-f", dockerfile, "-t", tag}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	buildArgs := map[string]*string{}
	for _, k := range slices.Sorted(maps.Keys(spec.BuildArgs)) {
		v := spec.BuildArgs[k]
		buildArgs[k] = &v
		args = append(args, "--build-arg", k+"="+v)
	}
	began := time.Now()
	rec := schema.CommandRecord{Stage: o.stage, Args: append(args, ctxDir), Log: buildLog, Start: began.UTC()}

	provider, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(stdlog.New(logf, "testcontainers: ", stdlog.LstdFlags)))
	if err != nil {
		return Image{}, dockerUnreachable(err)
	}
	defer provider.Close()
	build := func() error {
		_, err := provider.BuildImage(ctx, &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
			Context: ctxDir, Dockerfile: filepath.ToSlash(rel), Repo: repo, Tag: version, BuildArgs: buildArgs,
			BuildLogWriter: logf, KeepImage: true,
			BuildOptionsModifier: func(o *client.ImageBuildOptions) { o.Labels = labels },
		}})
		return err
	}
	// While it builds, the process's own build steps stay (removeRunImages).
	processSteps.RLock()
	defer processSteps.RUnlock()
	err = build()
	if err != nil && cacheLayerVanished(err) {
		// Another run's cleanup removed an image whose layers this build reused from the
		// cache (seen with rows side by side): once more, against the cache as it is.
		fmt.Fprintf(logf, "qualkit: a cached layer vanished during the build (%v); building once more\n", err)
		err = build()
	}
	if err == nil {
		var res client.ImageInspectResult
		if res, err = cli.ImageInspect(ctx, tag); err == nil {
			img.ID = res.ID
		}
	}
	rec.WallS = time.Since(began).Seconds()
	img.BuildS = time.Since(start).Seconds()
	if err != nil {
		rec.ExitCode, rec.Error = 1, err.Error()
		err = fmt.Errorf("build image %s: %w; log %s:\n%s", tag, err, buildLog, TailFile(buildLog, 2000))
	}
	return img, o.record(rec, err)
}

// DockerfileBases lists the images a Dockerfile starts from (not scratch nor earlier
// stages), build arguments expanded from args; one without a value is left out.
func DockerfileBases(path string, args map[string]string) ([]string, error) {
	ins, err := instructions(path)
	if err != nil {
		return nil, err
	}
	stages := map[string]bool{}
	var bases []string
	for _, in := range ins {
		fields := strings.Fields(in.text)
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
		image := os.Expand(fields[0], func(k string) string {
			if v, ok := args[k]; ok {
				return v
			}
			return "$" + k
		})
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
	return bases, nil
}

var (
	notRepoChar = regexp.MustCompile(`[^a-z0-9._-]+`)
	notTagChar  = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)
)

// imageTag is qualkit/<row>:<run id>, reduced to what Docker accepts.
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

func cacheLayerVanished(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to get digest") || strings.Contains(msg, "No such image")
}

// ImagePresent says whether ref is an image of the local engine (never pulled).
func ImagePresent(ctx context.Context, ref string) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("not present in the local engine: %w", err)
	}
	return nil
}
