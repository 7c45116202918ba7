package serving

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
)

// tarNames lists the files of the build context testcontainers-go would send for dir
// and its Dockerfile: the library's own reading of .dockerignore, not ours.
func tarNames(t *testing.T, dir, dockerfile string) []string {
	t.Helper()
	req := testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{Context: dir, Dockerfile: dockerfile}}
	r, err := req.GetContext()
	require.NoError(t, err)
	var names []string
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			names = append(names, filepath.ToSlash(filepath.Clean(h.Name)))
		}
	}
}

// Each TRTMC layout's dev Dockerfile against its .dockerignore: the checkout root as the
// context (TRTMC's documented command, and what the harness did) leaves out what the
// Dockerfile copies; the staged context holds every COPY source and nothing else.
func TestStageContextHasEveryCopySource(t *testing.T) {
	for _, tc := range []struct {
		layout   string
		root     string // the context root StageContext must choose
		sources  []string
		files    []string
		rootSent bool // whether the checkout root as context would send the sources
	}{
		{"e9132e79", ".", []string{"requirements/community-ci.txt"}, []string{"requirements/community-ci.txt"}, false},
		{"newer", "requirements", []string{"community-ci.txt"}, []string{"community-ci.txt"}, false},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			checkout := filepath.Join("testdata", "contexts", tc.layout)
			dockerfile := filepath.Join(checkout, "Dockerfile.dev.x86")
			sent := tarNames(t, checkout, "Dockerfile.dev.x86")
			for _, s := range tc.sources {
				assert.Equal(t, tc.rootSent, slices.Contains(sent, s), "the checkout root as context sends %s: %v", s, sent)
			}

			dir := filepath.Join(t.TempDir(), "context")
			bc, err := StageContext(dockerfile, []string{checkout, filepath.Join(checkout, "requirements")}, dir)
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(checkout, tc.root), filepath.Clean(bc.Root))
			assert.Equal(t, tc.sources, bc.Sources)
			var got []string
			for _, f := range bc.Files {
				got = append(got, f.Path)
				assert.Len(t, f.SHA256, 64)
			}
			assert.Equal(t, tc.files, got)
			assert.Equal(t, bc.ListSHA256(), bc.SHA256)
			staged := tarNames(t, dir, StagedDockerfile)
			for _, s := range tc.sources {
				assert.Contains(t, staged, s, "the staged context sends every COPY source")
			}
			assert.ElementsMatch(t, append(slices.Clone(tc.files), StagedDockerfile), staged, "and nothing else")
		})
	}
}

func TestCopySourcesParsesWhatDockerReads(t *testing.T) {
	df := filepath.Join(t.TempDir(), "Dockerfile")
	require.NoError(t, os.WriteFile(df, []byte(`# syntax=docker/dockerfile:1
FROM scratch AS build
COPY --chown=1:1 --chmod=644 a.txt \
     dir/ /dst/
copy ["spaced name.txt", "/x/"]
ADD https://example.invalid/file.tgz /opt/
ADD ./b/../c.txt /c
COPY --from=build /out /out
COPY <<EOF /etc/motd
hello
EOF
COPY a.txt *.cfg /twice/
`), 0o644))
	srcs, err := CopySources(df)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt", "dir", "spaced name.txt", "c.txt", "*.cfg"}, srcs)

	require.NoError(t, os.WriteFile(df, []byte("FROM scratch\nCOPY ${REQS} /tmp/\n"), 0o644))
	_, err = CopySources(df)
	assert.ErrorContains(t, err, `source "${REQS}" names a build argument`)
}

// A Dockerfile whose sources no candidate root holds fails before any build, naming each
// root and what it lacks.
func TestStageContextNamesWhatIsMissing(t *testing.T) {
	checkout := filepath.Join("testdata", "contexts", "e9132e79")
	df := filepath.Join(t.TempDir(), "Dockerfile")
	require.NoError(t, os.WriteFile(df, []byte("FROM scratch\nCOPY requirements/community-ci.txt nowhere.txt /x/\n"), 0o644))
	_, err := StageContext(df, []string{checkout, filepath.Join(checkout, "requirements")}, filepath.Join(t.TempDir(), "c"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no candidate context folder holds them all")
	assert.Contains(t, err.Error(), checkout+" lacks nowhere.txt")
	assert.Contains(t, err.Error(), filepath.Join(checkout, "requirements")+" lacks requirements/community-ci.txt, nowhere.txt")
}

// The staged context builds for real, from a Dockerfile that copies from requirements/
// beside a .dockerignore that would have dropped it.
func TestPrepareImageFromCopyRoots(t *testing.T) {
	requireDocker(t)
	runID := testRun(t)
	checkout, err := filepath.Abs(filepath.Join("testdata", "contexts", "e9132e79"))
	require.NoError(t, err)
	spec := ImageSpec{Dockerfile: filepath.Join(checkout, "Dockerfile.dev.x86"), CopyRoots: []string{checkout}}
	img := prepared(t, runID, spec, &records{})
	require.NotNil(t, img.Context)
	assert.Equal(t, "requirements/community-ci.txt", img.Context.Files[0].Path)
	assert.NotEmpty(t, img.ID)
}

// BuildTagged (make trtmc-image) builds from the same staged context as the row, under
// the user's tag (a tag without a version is :latest), with no run label: no run's sweep
// removes the image the user made.
func TestBuildTaggedKeepsNoRunLabel(t *testing.T) {
	requireDocker(t)
	checkout, err := filepath.Abs(filepath.Join("testdata", "contexts", "e9132e79"))
	require.NoError(t, err)
	tag := fmt.Sprintf("qualkit-test/build-tagged-%d", os.Getpid())
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag+":latest").Run() })
	spec := ImageSpec{Dockerfile: filepath.Join(checkout, "Dockerfile.dev.x86"), CopyRoots: []string{checkout, filepath.Join(checkout, "requirements")}}
	img, err := BuildTagged(t.Context(), spec, tag, filepath.Join(t.TempDir(), "build.log"))
	require.NoError(t, err)
	assert.Equal(t, tag+":latest", img.Ref)
	require.NotNil(t, img.Context)
	assert.Equal(t, checkout, img.Context.Root)
	assert.Equal(t, "requirements/community-ci.txt", img.Context.Files[0].Path)
	b, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}", img.Ref).Output()
	require.NoError(t, err)
	assert.Equal(t, img.ID+" null", strings.TrimSpace(string(b)))

	_, err = BuildTagged(t.Context(), ImageSpec{Ref: "busybox"}, tag, filepath.Join(t.TempDir(), "build.log"))
	assert.ErrorContains(t, err, "give a Dockerfile and either a Context or CopyRoots")
}

func TestCacheLayerVanished(t *testing.T) {
	assert.True(t, cacheLayerVanished(errors.New("build image: failed to get digest sha256:6703c005: open /var/lib/docker/image/overlay2/imagedb/content/sha256/6703c005: no such file or directory")))
	assert.True(t, cacheLayerVanished(errors.New("Error response from daemon: No such image: sha256:0b3f92ec4caa")))
	assert.False(t, cacheLayerVanished(errors.New("COPY failed: file not found in build context")))
}
