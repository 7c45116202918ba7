// Command trtmcimage makes the image the Qwen-Image-Edit-2511 row runs in (`make
// trtmc-image`): TRTMC's dev image from QUALKIT_TRTMC_DIR (qwenimage.Config.DevImage),
// then docker/Dockerfile.reference on it with apps/perf_serving as context, tagged
// QUALKIT_TRTMC_IMAGE. Absent base images are pulled first; the row itself never pulls.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	tclog "github.com/testcontainers/testcontainers-go/log"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/serving"
)

func main() {
	devTag := flag.String("dev", "trtmc-dev", "the tag of TRTMC's dev image, the reference image's base")
	reference := flag.String("reference", "families/qwen_image/docker/Dockerfile.reference", "the Dockerfile built on the dev image")
	logs := flag.String("logs", ".cache/trtmc-image", "the folder of the build logs")
	flag.Parse()
	tclog.SetDefault(tclog.NewNoopLogger()) // no banner about the daemon: the build says what it uses
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *devTag, *reference, *logs); err != nil {
		fmt.Fprintln(os.Stderr, "trtmc-image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, devTag, reference, logs string) error {
	cfg, err := qwenimage.ParseConfig(os.Getenv)
	switch {
	case cfg.Checkout == "":
		return fmt.Errorf("%s is not set: name the TRTMC checkout to build the dev image from", qwenimage.EnvCheckout)
	case cfg.Image == "":
		return fmt.Errorf("%s is not set: name the image to make (the row then runs in it)", qwenimage.EnvImage)
	case err != nil:
		return err
	}
	reference, err = filepath.Abs(reference)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}
	dockerfile, roots := cfg.DevImage()
	if err := pullAbsentBases(ctx, dockerfile); err != nil {
		return err
	}
	devLog, refLog := filepath.Join(logs, "dev.log"), filepath.Join(logs, "reference.log")
	os.Remove(devLog)
	os.Remove(refLog)
	fmt.Printf("trtmc-image: TRTMC's dev image %s from %s, its context staged from the Dockerfile's COPY sources (log %s)\n", devTag, dockerfile, devLog)
	dev, err := serving.BuildTagged(ctx, serving.ImageSpec{Dockerfile: dockerfile, CopyRoots: roots}, devTag, devLog)
	if err != nil {
		return err
	}
	var names []string
	for _, f := range dev.Context.Files {
		names = append(names, f.Path)
	}
	fmt.Printf("trtmc-image: %s built in %.1f s from %s (%d files: %s)\n", dev.Ref, dev.BuildS, dev.Context.Root, len(names), strings.Join(names, ", "))
	perfServe := filepath.Join(cfg.Checkout, "apps", "perf_serving")
	if _, err := os.Stat(filepath.Join(perfServe, "requirements.txt")); err != nil {
		return fmt.Errorf("%s: the checkout has no perf-serve requirements (apps/perf_serving/requirements.txt), which %s installs: "+
			"check out a TRTMC source with apps/perf_serving (TRTMC main e9132e79 has no apps/ at all; families/qwen_image/README.md)", cfg.Image, reference)
	}
	fmt.Printf("trtmc-image: %s: %s on %s, its context staged from %s (log %s)\n", cfg.Image, reference, dev.Ref, perfServe, refLog)
	img, err := serving.BuildTagged(ctx, serving.ImageSpec{Dockerfile: reference, CopyRoots: []string{perfServe},
		BuildArgs: map[string]string{"TRTMC_DEV_IMAGE": dev.Ref}}, cfg.Image, refLog)
	if err != nil {
		return err
	}
	fmt.Printf("trtmc-image: %s built in %.1f s (%s); the row runs in it with %s=%s\n", img.Ref, img.BuildS, img.ID, qwenimage.EnvImage, cfg.Image)
	return nil
}

// pullAbsentBases pulls the base images dockerfile names that the engine lacks.
func pullAbsentBases(ctx context.Context, dockerfile string) error {
	bases, err := serving.DockerfileBases(dockerfile, nil)
	if err != nil {
		return fmt.Errorf("the dev Dockerfile: %w", err)
	}
	for _, b := range bases {
		if serving.ImagePresent(ctx, b) == nil {
			continue
		}
		fmt.Printf("trtmc-image: pulling %s, the base of %s, absent from the engine\n", b, dockerfile)
		cmd := exec.CommandContext(ctx, "docker", "pull", b)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("docker pull %s (the base of %s): %w", b, dockerfile, err)
		}
	}
	return nil
}
