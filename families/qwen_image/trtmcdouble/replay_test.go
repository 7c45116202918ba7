package trtmcdouble

import (
	"bytes"
	"context"
	"encoding/json"
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
	rec := Recording{
		Command: []string{"--bundle", "{{bundle}}", "--port", "{{port}}", "--records", "{{records}}", "--scratch", "{{scratch}}", "--keep-artifacts"},
		Help:    "usage: trtmc-perf-serve serve [-h] --bundle BUNDLE\n",
		Startup: []File{{Path: "_worker/worker-session.json", Blob: "session", Text: true}},
		Exchanges: []Exchange{{Digest: RequestDigest("POST", "/v1/tasks/generate_image", []byte(testBody)), Method: "POST", Path: "/v1/tasks/generate_image",
			Status: 200, Header: map[string]string{"x-request-id": "{{request_id}}", "content-type": "application/json"},
			Body: `{"id":"{{request_id}}","bundle":"{{bundle}}"}`, Ms: 50,
			Records: []string{`{"request_id": "{{request_id}}", "time": {{time}}}`},
			Files:   []File{{Path: "{{request_id}}/output.image.1.0.png", Blob: "png"}}}},
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	return fstest.MapFS{"recording.json": {Data: b}, "blobs/session": {Data: []byte(`{"bundle": "{{bundle}}"}`)},
		"blobs/png": {Data: []byte("\x89PNG {{bundle}}")}}
}

// replaying starts the replay of fsys on a free port with args and returns its URL and
// a function that stops it and returns its exit status and stderr.
func replaying(t *testing.T, fsys fstest.MapFS, dir string) (string, func() (int, string)) {
	port, err := freePort("127.0.0.1")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var stderr bytes.Buffer
	p := &proc{ctx: ctx, args: []string{"trtmc-perf-serve", "serve", "--bundle", "/b/x.bundle", "--port", port, "--records", filepath.Join(dir, "records.jsonl"),
		"--scratch", filepath.Join(dir, "scratch"), "--keep-artifacts"}, stdout: io.Discard, stderr: &stderr, wd: dir}
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
	url, stop := replaying(t, testRecording(t), dir)
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
	assert.Equal(t, map[string]string{"x-request-id": "req-1", "server-timing": "model;dur=1.000", "content-type": "text/plain; charset=utf-8"}, AppHeaders(ex.Header),
		"TRTMC's headers, none of the transport's")
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
			_, err := Blob(fsys, f.Blob)
			assert.NoError(t, err, f.Path)
		}
	}
}
