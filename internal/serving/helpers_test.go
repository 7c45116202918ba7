package serving

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"qualkit/internal/schema"
)

// records is a Recorder that keeps what it is given, as commands.jsonl would.
type records struct {
	mu   sync.Mutex
	recs []schema.CommandRecord
}

func (r *records) Record(rec schema.CommandRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Through JSON, as the evidence keeps it.
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	var back schema.CommandRecord
	if err := json.NewDecoder(bufio.NewReader(bytes.NewReader(b))).Decode(&back); err != nil {
		return err
	}
	r.recs = append(r.recs, back)
	return nil
}

func (r *records) all() []schema.CommandRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]schema.CommandRecord(nil), r.recs...)
}

// dockerRun is the record of the server's `docker run`.
func (r *records) dockerRun(t *testing.T) schema.CommandRecord {
	t.Helper()
	for _, rec := range r.all() {
		if len(rec.Args) > 1 && rec.Args[0] == "docker" && rec.Args[1] == "run" {
			return rec
		}
	}
	t.Fatalf("no docker run record among %d", len(r.all()))
	return schema.CommandRecord{}
}

// requireDocker fails the test, with the reason and the cure, when no daemon answers.
func requireDocker(t *testing.T) schema.DaemonInfo {
	t.Helper()
	if testing.Short() {
		t.Skip("a container test: `make test` runs it (`make check` runs with -short, without containers)")
	}
	// The reaper's image cannot be pulled here; the harness removes what it starts itself.
	t.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	d, err := Docker(t.Context())
	if err != nil {
		t.Fatalf("container tests need a Docker engine: %v", err)
	}
	return d
}

// serverImage builds testdata/containerserver statically and writes a FROM scratch
// Dockerfile next to it: the spec of the image the tests run. The program's host path is
// mapped to /containerserver, where the image holds it.
func serverImage(t *testing.T) (ImageSpec, string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "containerserver")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./testdata/containerserver")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build test server: %v\n%s", err, out)
	}
	df := "FROM scratch\nCOPY containerserver /containerserver\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	return ImageSpec{Context: dir, Paths: map[string]string{bin: "/containerserver"}}, bin
}

// testRun returns a run id of its own for each test and removes the run's images at the end.
func testRun(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	runID := fmt.Sprintf("%s-%d-%s", time.Now().UTC().Format("20060102T150405Z"), os.Getpid(), name)
	t.Cleanup(func() {
		if err := RemoveRunImages(context.Background(), runID); err != nil {
			t.Errorf("RemoveRunImages: %v", err)
		}
	})
	return runID
}

func rowOf(t *testing.T) string {
	return "row-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
}

// prepared builds the test image for run, its build log in dir.
func prepared(t *testing.T, runID string, spec ImageSpec, rec Recorder) Image {
	t.Helper()
	img, err := PrepareImage(t.Context(), spec, runID, rowOf(t), filepath.Join(t.TempDir(), "image-build.log"), WithRecorder(rec, "serve"))
	if err != nil {
		t.Fatalf("PrepareImage: %v", err)
	}
	return img
}

func serverSpec(t *testing.T, bin string, args ...string) ServerSpec {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return ServerSpec{
		Cmd:   Command{Args: append([]string{bin, "-port", strconv.Itoa(port)}, args...)},
		Port:  port,
		Ready: 30 * time.Second,
		Log:   filepath.Join(t.TempDir(), "server.log"),
	}
}

func dockerAPI(t *testing.T) *testcontainers.DockerClient {
	t.Helper()
	cli, err := testcontainers.NewDockerClientWithOpts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// runContainers is `docker ps -a --filter label=qualkit.run=<runID>`.
func runContainers(t *testing.T, runID string) []string {
	t.Helper()
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	res, err := dockerAPI(t).ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	var out []string
	for _, c := range res.Items {
		out = append(out, fmt.Sprintf("%s %v %s", shortID(c.ID), c.Names, c.State))
	}
	return out
}

func runImages(t *testing.T, runID string) []string {
	t.Helper()
	f := make(client.Filters).Add("label", LabelRun+"="+runID)
	res, err := dockerAPI(t).ImageList(context.Background(), client.ImageListOptions{Filters: f})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	var out []string
	for _, img := range res.Items {
		out = append(out, shortID(img.ID)+" "+strings.Join(img.RepoTags, ","))
	}
	return out
}

func requireNoContainers(t *testing.T, runID string) {
	t.Helper()
	if left := runContainers(t, runID); len(left) > 0 {
		t.Errorf("containers of run %s left behind: %v", runID, left)
	}
}

// waitForLog polls the log file, which is written by a stream, until it holds want (10 s
// at most).
func waitForLog(t *testing.T, path, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return logHolds(ctx, path, want)
}

// cancelOnceLogged calls cancel once the log at path holds want, or when ctx ends.
func cancelOnceLogged(ctx context.Context, cancel context.CancelFunc, path, want string) {
	logHolds(ctx, path, want)
	cancel()
}

// logHolds polls the log at path until it holds want or ctx ends, and returns it.
func logHolds(ctx context.Context, path, want string) string {
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) || ctx.Err() != nil {
			return string(b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
