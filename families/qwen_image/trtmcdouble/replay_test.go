package trtmcdouble

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/latents"
)

// The digest is what TRTMC's server reads: whitespace between JSON tokens is nothing to
// it, key order and number spelling are kept, and the method and path count.
func TestRequestDigest(t *testing.T) {
	d := RequestDigest("POST", "/v1/tasks/generate_image", []byte(`{"request": {"prompt": "p", "seed": 42}}`))
	assert.Equal(t, d, RequestDigest("POST", "/v1/tasks/generate_image", []byte("{\"request\":{\"prompt\":\"p\",\n \"seed\":42}}")))
	for _, other := range []string{
		RequestDigest("POST", "/v1/tasks/generate_image", []byte(`{"request": {"seed": 42, "prompt": "p"}}`)),
		RequestDigest("POST", "/v1/tasks/generate_image", []byte(`{"request": {"prompt": "p", "seed": 42.0}}`)),
		RequestDigest("POST", "/v1/tasks/embed", []byte(`{"request": {"prompt": "p", "seed": 42}}`)),
		RequestDigest("GET", "/v1/tasks/generate_image", []byte(`{"request": {"prompt": "p", "seed": 42}}`)),
	} {
		assert.NotEqual(t, d, other)
	}
	assert.NotEqual(t, RequestDigest("POST", "/p", []byte("not json")), RequestDigest("POST", "/p", []byte("not  json")), "a body that is no JSON is taken as it is")
}

func TestServeArgs(t *testing.T) {
	shape, values := ServeArgs([]string{"--profile", "p", "--bundle", "/b/x.bundle", "--port", "8123", "--keep-artifacts"})
	assert.Equal(t, []string{"--profile", "p", "--bundle", "{{bundle}}", "--port", "{{port}}", "--keep-artifacts"}, shape)
	assert.Equal(t, map[string]string{"{{bundle}}": "/b/x.bundle", "{{port}}": "8123"}, values)
}

const testBody = `{"request": {"prompt": "p"}}`

func testRecording(t *testing.T) fstest.MapFS {
	session, png := `{"bundle": "{{bundle}}"}`, "\x89PNG {{bundle}}"
	rec := Recording{
		Command: []string{"--bundle", "{{bundle}}", "--port", "{{port}}", "--records", "{{records}}", "--scratch", "{{scratch}}", "--keep-artifacts"},
		Help:    "usage: trtmc-perf-serve serve [-h] --bundle BUNDLE\n",
		Startup: []File{{Path: "_worker/worker-session.json", Blob: sha256Hex([]byte(session)), Text: true}},
		Exchanges: []Exchange{{Digest: RequestDigest("POST", "/v1/tasks/generate_image", []byte(testBody)), Method: "POST", Path: "/v1/tasks/generate_image",
			Status: 200, Header: map[string]string{"x-request-id": "{{request_id}}", "content-type": "application/json"},
			Body: `{"id":"{{request_id}}","bundle":"{{bundle}}"}`, Ms: 50,
			Records: []string{`{"request_id": "{{request_id}}", "time": {{time}}}`},
			Files:   []File{{Path: "{{request_id}}/output.image.1.0.png", Blob: sha256Hex([]byte(png))}}}},
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	return fstest.MapFS{"recording.json": {Data: b}, "blobs/" + sha256Hex([]byte(session)): {Data: []byte(session)},
		"blobs/" + sha256Hex([]byte(png)): {Data: []byte(png)}}
}

// replaying starts the replay of fsys, of bundle in env, on a free port and returns its
// URL and a function that stops it and returns its exit status and stderr.
func replaying(t *testing.T, fsys fstest.MapFS, dir, bundle string, env map[string]string) (string, func() (int, string)) {
	port, err := freePort("127.0.0.1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var stderr bytes.Buffer
	p := &proc{ctx: ctx, args: []string{"trtmc-perf-serve", "serve", "--bundle", bundle, "--port", port, "--records", filepath.Join(dir, "records.jsonl"),
		"--scratch", filepath.Join(dir, "scratch"), "--keep-artifacts"}, env: env, stdout: io.Discard, stderr: &stderr, wd: dir}
	done := make(chan int)
	go func() { done <- replay(p, fsys) }()
	url := "http://127.0.0.1:" + port
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	return url, func() (int, string) { cancel(); code := <-done; return code, stderr.String() }
}

func post(t *testing.T, url, id, body string) (*http.Response, string) {
	req, err := http.NewRequest("POST", url+"/v1/tasks/generate_image", strings.NewReader(body))
	require.NoError(t, err)
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// A recorded request is answered as recorded, for this run: its id, the serve flags'
// paths and the clock filled in, its files and records line written, after as long as
// TRTMC's server took. Another request is a 500 naming its digest and how to re-record.
func TestReplayServesTheRecording(t *testing.T) {
	dir := t.TempDir()
	url, stop := replaying(t, testRecording(t), dir, "/b/x.bundle", nil)
	start := time.Now()
	resp, body := post(t, url, "req-1", "{\"request\":{\"prompt\":\"p\"}}\n")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "as long as TRTMC's server took")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "req-1", resp.Header.Get("X-Request-ID"))
	assert.JSONEq(t, `{"id":"req-1","bundle":"/b/x.bundle"}`, body)
	b, err := os.ReadFile(filepath.Join(dir, "scratch", "req-1", "output.image.1.0.png"))
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG {{bundle}}", string(b), "a binary file as recorded")
	b, err = os.ReadFile(filepath.Join(dir, "scratch", "_worker", "worker-session.json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"bundle": "/b/x.bundle"}`, string(b), "a text file filled in")
	var line struct {
		RequestID string  `json:"request_id"`
		Time      float64 `json:"time"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "records.jsonl"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &line))
	assert.Equal(t, "req-1", line.RequestID)
	assert.InDelta(t, float64(time.Now().Unix()), line.Time, 5)

	resp, _ = post(t, url, "../not an id", testBody)
	assert.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get("X-Request-ID"), "an id that is no id: a fresh one (app.py § request_id_of)")

	resp, body = post(t, url, "req-2", `{"request": {"prompt": "another"}}`)
	assert.Equal(t, 500, resp.StatusCode)
	digest := RequestDigest("POST", "/v1/tasks/generate_image", []byte(`{"request": {"prompt": "another"}}`))
	assert.Contains(t, body, digest)
	assert.Contains(t, body, RecordCommand)
	assert.NoDirExists(t, filepath.Join(dir, "scratch", "req-2"))
	code, stderr := stop()
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stderr, digest, "the server's log names it too")
}

// The replay makes again the files it can, rather than keeping their bytes: the request's
// inputs (an image sent in base64, the noise of its latent_seed) from its body, the
// worker's output by running the double's worker on the request recorded. A file made
// other than recorded (here the worker runs the bundle's steps, not the request's) is a
// 500 naming its sha256 and how to re-record.
func TestReplayMakesFilesAgainAndRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, "x.bundle")
	writeTestBundle(t, bundle, adapterSpec(t))
	writeFile(t, filepath.Join(dir, "runtime", libModelQwen), "lib")
	img := fixtureImage(t, "rings-640x382.png")
	noise, err := latents.Raw(7, 16, 6, 8)
	require.NoError(t, err)
	body := fmt.Sprintf(`{"request": {"prompt": "p", "image": {"$file": {"suffix": ".png", "b64": %q}}, "latent_seed": 7}}`, base64.StdEncoding.EncodeToString(img))
	request := `{"prompt": "p", "image_path": "{{scratch}}/{{request_id}}/inputs/input-0000.png", "initial_latents_path": "{{scratch}}/{{request_id}}/inputs/initial_latents.f32", "num_steps": 2, "height": 48, "width": 64}`
	// What the worker writes for the request, run here as TRTMC's server ran it.
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "in.png"), img, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(work, "noise.f32"), noise, 0o644))
	h, err := ReadBundle(bundle)
	require.NoError(t, err)
	base := filepath.Join(work, "output")
	_, err = (&worker{p: &proc{}, header: h}).run(workerLine{ArtifactBase: &base,
		Request: json.RawMessage(strings.NewReplacer("{{scratch}}/{{request_id}}/inputs/input-0000.png", filepath.Join(work, "in.png"),
			"{{scratch}}/{{request_id}}/inputs/initial_latents.f32", filepath.Join(work, "noise.f32")).Replace(request))})
	require.NoError(t, err)
	out, err := os.ReadFile(base + ".image.1.0.png")
	require.NoError(t, err)
	rec := Recording{Command: []string{"--bundle", "{{bundle}}", "--port", "{{port}}", "--records", "{{records}}", "--scratch", "{{scratch}}", "--keep-artifacts"},
		Exchanges: []Exchange{{Digest: RequestDigest("POST", "/v1/tasks/generate_image", []byte(body)), Method: "POST", Path: "/v1/tasks/generate_image",
			Status: 200, Header: map[string]string{"x-request-id": "{{request_id}}"}, Body: `{}`, Files: []File{
				{Path: "{{request_id}}/inputs/initial_latents.f32", Blob: sha256Hex(noise), Size: len(noise), From: "request"},
				{Path: "{{request_id}}/inputs/input-0000.png", Blob: sha256Hex(img), Size: len(img), From: "request"},
				{Path: "{{request_id}}/output.image.1.0.png", Blob: sha256Hex(out), Size: len(out), From: "worker", Request: json.RawMessage(request)}}}}}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	fsys := fstest.MapFS{"recording.json": {Data: b}}

	url, stop := replaying(t, fsys, dir, bundle, nil)
	resp, _ := post(t, url, "req-1", body)
	assert.Equal(t, 200, resp.StatusCode)
	for name, want := range map[string][]byte{"inputs/input-0000.png": img, "inputs/initial_latents.f32": noise, "output.image.1.0.png": out} {
		got, err := os.ReadFile(filepath.Join(dir, "scratch", "req-1", name))
		require.NoError(t, err)
		assert.Equal(t, sha256Hex(want), sha256Hex(got), name)
	}
	code, _ := stop()
	assert.Equal(t, exitOK, code)

	url, stop = replaying(t, fsys, dir, bundle, map[string]string{EnvIgnoreSteps: "1"})
	resp, msg := post(t, url, "req-2", body)
	assert.Equal(t, 500, resp.StatusCode)
	assert.Contains(t, msg, "output.image.1.0.png")
	assert.Contains(t, msg, sha256Hex(out))
	assert.Contains(t, msg, RecordCommand)
	stop()
}

// The replay serves the recorded command line only (paths and port aside), and prints
// the recorded --help.
func TestReplayRefusesAnotherCommandLine(t *testing.T) {
	var out, errOut bytes.Buffer
	p := &proc{args: []string{"trtmc-perf-serve", "serve", "--help"}, stdout: &out, stderr: &errOut}
	assert.Equal(t, exitOK, replay(p, testRecording(t)))
	assert.Equal(t, "usage: trtmc-perf-serve serve [-h] --bundle BUNDLE\n", out.String())

	p = &proc{args: []string{"trtmc-perf-serve", "serve", "--bundle", "/b", "--port", "1", "--records", "r", "--scratch", "s", "--isolate-requests"}, stdout: &out, stderr: &errOut}
	assert.Equal(t, exitUsage, replay(p, testRecording(t)))
	assert.Contains(t, errOut.String(), "no recording of this command line")
	assert.Contains(t, errOut.String(), "--isolate-requests")
	assert.Contains(t, errOut.String(), RecordCommand)
}

// The recorder passes a request through unchanged and logs the exchange: its digest, the
// id sent, TRTMC's status, headers and body.
func TestRecorderPassesThroughAndLogs(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Request-ID", r.Header.Get("X-Request-ID"))
		w.Header().Set("Server-Timing", "model;dur=1.000")
		w.WriteHeader(201)
		w.Write(append([]byte("echo "), b...))
	}))
	defer upstream.Close()
	var log bytes.Buffer
	front := httptest.NewServer(&recorder{target: upstream.URL, log: json.NewEncoder(&log)})
	defer front.Close()
	resp, body := post(t, front.URL, "req-1", testBody)
	assert.Equal(t, 201, resp.StatusCode)
	assert.Equal(t, "echo "+testBody, body)
	assert.Equal(t, "req-1", resp.Header.Get("X-Request-ID"))
	var ex RecordedExchange
	require.NoError(t, json.Unmarshal(log.Bytes(), &ex))
	assert.Equal(t, RequestDigest("POST", "/v1/tasks/generate_image", []byte(testBody)), ex.Digest)
	assert.Equal(t, "req-1", ex.RequestID)
	assert.Equal(t, 201, ex.Status)
	assert.Equal(t, "echo "+testBody, ex.Body)
	assert.Equal(t, "model;dur=1.000", ex.Header.Get("Server-Timing"), "TRTMC's headers")
}

// The committed recording is whole: every exchange and file it names is there.
func TestCommittedRecordingIsWhole(t *testing.T) {
	fsys := os.DirFS(RecordingDir)
	rec, err := LoadRecording(fsys)
	require.NoError(t, err)
	require.NotEmpty(t, rec.Exchanges, "re-record with `%s`", RecordCommand)
	assert.Contains(t, rec.Command, "{{scratch}}")
	seen := map[string]bool{}
	for _, ex := range rec.Exchanges {
		assert.False(t, seen[ex.Digest], "one exchange per digest")
		seen[ex.Digest] = true
		for _, f := range append(ex.Files, rec.Startup...) {
			if f.From == "" {
				_, err := Blob(fsys, f.Blob)
				assert.NoError(t, err, f.Path)
			}
		}
	}
}
