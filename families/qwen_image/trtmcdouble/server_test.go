package trtmcdouble

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverEnv is a bundle (64x48 output) and the photo.
type serverEnv struct {
	p      *proc
	bundle string
	image  []byte
}

func newServerEnv(t *testing.T) serverEnv {
	t.Helper()
	dir := t.TempDir()
	spec := adapterSpec(t)
	spec.ImageWidth, spec.ImageHeight = 64, 48
	bundle := filepath.Join(dir, Profile+".bundle")
	writeTestBundle(t, bundle, spec)
	r := newRunner(t, dir)
	return serverEnv{p: &proc{env: r.env, wd: dir, self: r.self, stdout: io.Discard, stderr: io.Discard}, bundle: bundle, image: testPhoto(t)}
}

// start serves the handler of a server started with args (after the bundle).
func (e serverEnv) start(t *testing.T, loadDelay time.Duration, args ...string) (*server, *httptest.Server) {
	t.Helper()
	cfg, err := parseServer(append([]string{e.bundle}, args...))
	require.NoError(t, err)
	s, err := newServer(e.p, cfg, loadDelay)
	require.NoError(t, err)
	t.Cleanup(s.close)
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// newTestServer serves s's handler and returns its base URL.
func newTestServer(t *testing.T, s *server) string {
	t.Helper()
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// form is a multipart body: text fields, then the image as a file part (nil: none).
func form(t *testing.T, fields map[string]string, image []byte) (io.Reader, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for k, v := range fields {
		require.NoError(t, w.WriteField(k, v))
	}
	if image != nil {
		f, err := w.CreateFormFile("image", "photo.jpeg")
		require.NoError(t, err)
		_, err = f.Write(image)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return &b, w.FormDataContentType()
}

func postEdit(t *testing.T, url string, fields map[string]string, image []byte, header ...string) (*http.Response, map[string]any) {
	t.Helper()
	body, ct := form(t, fields, image)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/images/edits", body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var got map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	return resp, got
}

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var got map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	return resp.StatusCode, got
}

var editForm = map[string]string{"prompt": "Make it autumn.", "model": HFID, "n": "1", "size": "64x48", "seed": "42",
	"num_inference_steps": "20", "true_cfg_scale": "4.0", "guidance_scale": "1.0", "negative_prompt": " ", "response_format": "b64_json"}

func TestServerRoutes(t *testing.T) {
	e := newServerEnv(t)
	// A load longer than the test is loading throughout, however slow the host: no race
	// with the clock (a 200 ms load was over before a request under a stress pair).
	_, loading := e.start(t, time.Hour, "--model-name", HFID, "--startup-timeout", "7200")
	code, got := getJSON(t, loading.URL+"/health/live")
	assert.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"status": "live"}, got)
	code, got = getJSON(t, loading.URL+"/health/ready")
	assert.Equal(t, 503, code)
	assert.Equal(t, map[string]any{"status": "not_ready", "degraded": false}, got)
	resp, body := postEdit(t, loading.URL, editForm, e.image)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, map[string]any{"message": "the model is loading; poll /health/ready", "type": "server_error", "param": nil, "code": "not_ready"}, body["error"])

	s, ts := e.start(t, 200*time.Millisecond, "--model-name", HFID)
	require.Eventually(t, func() bool { c, _ := getJSON(t, ts.URL+"/health/ready"); return c == 200 }, 5*time.Second, 20*time.Millisecond)
	_, got = getJSON(t, ts.URL+"/health/ready")
	assert.Equal(t, map[string]any{"status": "ready", "degraded": false}, got)

	code, got = getJSON(t, ts.URL+"/v1/models")
	assert.Equal(t, 200, code)
	assert.Equal(t, map[string]any{"object": "list", Marker: true, "data": []any{map[string]any{"id": HFID, "object": "model",
		"created": float64(s.started.Unix()), "owned_by": "tensorrt-model-connect"}}}, got)

	for _, path := range []string{"/v1/serving/info", "/v1/chat/completions"} {
		code, got = getJSON(t, ts.URL+path)
		assert.Equal(t, 404, code, "trtmc-server has no %s in the double (it serves text there, no serving info at all)", path)
		assert.Equal(t, map[string]any{"detail": "Not Found"}, got)
	}
}

func TestServerEditB64JSON(t *testing.T) {
	e := newServerEnv(t)
	records := filepath.Join(t.TempDir(), "records.jsonl")
	_, ts := e.start(t, 0, "--model-name", HFID, "--records", records)

	before := time.Now().Unix()
	resp, got := postEdit(t, ts.URL, editForm, e.image, "X-Request-ID", "req-0001:a.b")
	after := time.Now().Unix()
	require.Equal(t, 200, resp.StatusCode, got)
	assert.Equal(t, "req-0001:a.b", resp.Header.Get("X-Request-ID"))
	assert.Regexp(t, `^model;dur=[0-9]+\.[0-9]{3}$`, resp.Header.Get("Server-Timing"))
	data := got["data"].([]any)
	require.Len(t, data, 1)
	png, err := base64.StdEncoding.DecodeString(data[0].(map[string]any)["b64_json"].(string))
	require.NoError(t, err)
	want, err := Edit(e.image, "Make it autumn.", Settings{Seed: 42, Steps: 20, CFGScale: 4, GuidanceScale: 1, NegativePrompt: " ", Width: 64, Height: 48})
	require.NoError(t, err)
	assert.Equal(t, want, png)
	assert.Equal(t, true, got[Marker])
	created := int64(got["created"].(float64))
	assert.True(t, before <= created && created <= after, "created %d, want the request's time, %d to %d", created, before, after)
	timing := got["trtmc_timing"].(map[string]any)
	for _, k := range []string{"queue_ms", "model_call_ms", "handler_ms"} {
		assert.GreaterOrEqual(t, timing[k], 0.0, k)
	}
	assert.GreaterOrEqual(t, timing["handler_ms"], timing["model_call_ms"])
	assert.Equal(t, fmt.Sprintf("model;dur=%.3f", timing["model_call_ms"]), resp.Header.Get("Server-Timing"))

	b, err := os.ReadFile(records)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 1)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.InDelta(t, float64(time.Now().UnixMicro())/1e6, rec["time"], 10)
	delete(rec, "time")
	assert.Equal(t, map[string]any{"request_id": "req-0001:a.b", "route": "/v1/images/edits", "operation": "generate_image",
		"backend": "trtmc", "timing": timing, "observation": map[string]any{"height": 48.0, "width": 64.0, "media_type": "image"},
		Marker: true}, rec, "the record carries the response's timing")

	resp, _ = postEdit(t, ts.URL, map[string]string{"prompt": "Make it autumn."}, e.image)
	require.Equal(t, 200, resp.StatusCode)
	b, err = os.ReadFile(records)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(b), "\n"), "appended, one line per request")
}

func TestServerRequestIDs(t *testing.T) {
	e := newServerEnv(t)
	_, ts := e.start(t, 0)
	fresh := regexp.MustCompile(`^[0-9a-f]{32}$`)
	long := strings.Repeat("a", 129)
	for given, echoed := range map[string]bool{
		"abc": true, "A1._:-z": true, strings.Repeat("a", 128): true,
		"": false, "-starts-with-dash": false, "has space": false, "slash/no": false, long: false,
	} {
		resp, _ := postEdit(t, ts.URL, map[string]string{"prompt": "p", "size": "8x8"}, e.image, "X-Request-ID", given)
		require.Equal(t, 200, resp.StatusCode)
		got := resp.Header.Get("X-Request-ID")
		if echoed {
			assert.Equal(t, given, got)
		} else {
			assert.Regexp(t, fresh, got, "given %q", given)
		}
	}
}

func TestServerEditRejects(t *testing.T) {
	e := newServerEnv(t)
	_, ts := e.start(t, 0, "--model-name", "qwen-edit", "--max-body-bytes", "100000")
	with := func(kv ...string) map[string]string {
		m := map[string]string{"prompt": "p"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<drop>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	big := encodeTestPNG(t, noise(300, 300))
	for name, tc := range map[string]struct {
		fields map[string]string
		image  []byte
		status int
		want   string
	}{
		"unknown field":      {with("mask", "x"), e.image, 400, "unsupported fields: mask"},
		"unknown fields":     {with("user", "u", "quality", "hd"), e.image, 400, "unsupported fields: quality, user"},
		"n=2":                {with("n", "2"), e.image, 400, "n must be 1"},
		"other model":        {with("model", HFID), e.image, 400, `model "Qwen/Qwen-Image-Edit-2511" is not served here`},
		"no prompt":          {with("prompt", "<drop>"), e.image, 400, "prompt is required"},
		"no image":           {with(), nil, 400, "image is required"},
		"image as text":      {with("image", "abc"), nil, 400, "image must be a file part"},
		"not an image":       {with(), []byte("GIF89a......"), 400, "neither PNG nor JPEG"},
		"bad response fmt":   {with("response_format", "png"), e.image, 400, `response_format must be b64_json, not "png"`},
		"url":                {with("response_format", "url"), e.image, 400, `response_format must be b64_json, not "url"`},
		"bad size":           {with("size", "big"), e.image, 400, `size "big" is not WxH`},
		"zero size":          {with("size", "0x10"), e.image, 400, "width and height must be"},
		"bad seed":           {with("seed", "x"), e.image, 400, `seed "x" is not an integer`},
		"bad steps":          {with("num_inference_steps", "1.5"), e.image, 400, "num_inference_steps"},
		"zero steps":         {with("num_inference_steps", "0"), e.image, 400, "must be at least 1"},
		"bad true_cfg_scale": {with("true_cfg_scale", "high"), e.image, 400, "true_cfg_scale"},
		"bad guidance":       {with("guidance_scale", "x"), e.image, 400, "guidance_scale"},
		"too large":          {with(), big, 413, "request body exceeds limit"},
	} {
		t.Run(name, func(t *testing.T) {
			resp, got := postEdit(t, ts.URL, tc.fields, tc.image)
			assert.Equal(t, tc.status, resp.StatusCode)
			errObj := got["error"].(map[string]any)
			assert.Contains(t, errObj["message"], tc.want)
			code := map[int]string{400: "invalid_request", 413: "content_too_large"}[tc.status]
			assert.Equal(t, code, errObj["code"], "trtmc-server's error body: a code name, not the status")
			assert.Equal(t, "invalid_request_error", errObj["type"])
			assert.NotEmpty(t, resp.Header.Get("X-Request-ID"))
		})
	}

	t.Run("not multipart", func(t *testing.T) {
		resp, err := http.Post(ts.URL+"/v1/images/edits", "application/json", strings.NewReader(`{"prompt":"p"}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 400, resp.StatusCode)
		b, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(b), "multipart/form-data")
		assert.Contains(t, string(b), `"code":"invalid_request"`)
	})
	t.Run("field twice", func(t *testing.T) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		require.NoError(t, w.WriteField("prompt", "a"))
		require.NoError(t, w.WriteField("prompt", "b"))
		require.NoError(t, w.Close())
		resp, err := http.Post(ts.URL+"/v1/images/edits", w.FormDataContentType(), &b)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 400, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(body), "field prompt is given twice")
	})
	t.Run("second file part", func(t *testing.T) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		require.NoError(t, w.WriteField("prompt", "a"))
		f, _ := w.CreateFormFile("image", "a.jpeg")
		_, _ = f.Write(e.image)
		f, _ = w.CreateFormFile("prompt_file", "b.txt")
		_, _ = f.Write([]byte("x"))
		require.NoError(t, w.Close())
		resp, err := http.Post(ts.URL+"/v1/images/edits", w.FormDataContentType(), &b)
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, 400, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(body), "unsupported fields: prompt_file")
	})
}

func TestServerServesOneRequestAtATime(t *testing.T) {
	e := newServerEnv(t)
	s, ts := e.start(t, 0)
	entered, release := make(chan struct{}), make(chan struct{})
	s.beforeEdit = func() { close(entered); <-release }

	var wg sync.WaitGroup
	var first *http.Response
	wg.Go(func() { first, _ = postEdit(t, ts.URL, map[string]string{"prompt": "p"}, e.image) })
	<-entered
	resp, got := postEdit(t, ts.URL, map[string]string{"prompt": "p"}, e.image)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, map[string]any{"message": "all model worker replicas are busy", "type": "rate_limit_error", "param": nil, "code": "server_busy"}, got["error"])
	code, _ := getJSON(t, ts.URL+"/health/live")
	assert.Equal(t, 200, code, "health answers while an edit runs")
	close(release)
	wg.Wait()
	assert.Equal(t, 200, first.StatusCode)

	s.beforeEdit = nil
	resp, _ = postEdit(t, ts.URL, map[string]string{"prompt": "p"}, e.image)
	assert.Equal(t, 200, resp.StatusCode, "free again")
}

func TestServerServedBytesMatchTheCLI(t *testing.T) {
	e := newServerEnv(t)
	_, ts := e.start(t, 0)
	resp, got := postEdit(t, ts.URL, map[string]string{"prompt": "Make it autumn.", "seed": "7", "true_cfg_scale": "4", "num_inference_steps": "20", "size": "64x48"}, e.image)
	require.Equal(t, 200, resp.StatusCode)
	served, err := base64.StdEncoding.DecodeString(got["data"].([]any)[0].(map[string]any)["b64_json"].(string))
	require.NoError(t, err)

	dir := e.p.wd
	image := writeFile(t, filepath.Join(dir, "in.jpeg"), string(e.image))
	plugins := filepath.Join(dir, "models")
	writeFile(t, filepath.Join(plugins, "qwen_image", libModelQwen), "lib")
	out := filepath.Join(dir, "native.png")
	res := newRunner(t, dir).run("trtmc", "run", e.bundle, "--prompt", "Make it autumn.", "--image", image, "--cfg-scale", "4",
		"--num-inference-steps", "20", "--seed", "7", "--height", "48", "--width", "64", "--output", out, "--model-plugin-dir", plugins)
	require.Equal(t, 0, res.code, res.stderr)
	native, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, served, native, "the native Task and the server give the same bytes")
}

func TestServerRuntimeRootLayouts(t *testing.T) {
	e := newServerEnv(t)
	flat, nested := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(flat, libModelQwen), "lib")
	writeFile(t, filepath.Join(nested, "models", "qwen_image", libModelQwen), "lib")
	for _, root := range []string{flat, nested} {
		cfg, err := parseServer([]string{e.bundle, "--runtime-root", root})
		require.NoError(t, err)
		s, err := newServer(e.p, cfg, 0)
		require.NoError(t, err)
		s.close()
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServerMainOnLoopbackShutsDownGracefully(t *testing.T) {
	e := newServerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan int, 1)
	worker := writeFile(t, filepath.Join(t.TempDir(), "trtmc-server"), "native")
	p := &proc{ctx: ctx, args: []string{"/opt/qualkit/bin/trtmcdouble", "trtmc-server-control-plane", e.bundle, "--port", "0", "--model-name", "m", "--worker-binary", worker},
		env: map[string]string{}, stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, wd: e.p.wd, self: e.p.self}
	go func() { done <- dispatch(p) }()

	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:[0-9]+)`)
	var base string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(stderr.String())
		if m != nil {
			base = "http://" + m[1]
		}
		return m != nil
	}, 5*time.Second, 10*time.Millisecond)
	code, got := getJSON(t, base+"/health/live")
	assert.Equal(t, 200, code)
	assert.Equal(t, "live", got["status"])
	require.Eventually(t, func() bool { c, _ := getJSON(t, base+"/health/ready"); return c == 200 }, 5*time.Second, 50*time.Millisecond)

	cancel() // what SIGTERM does through Main's signal context
	select {
	case c := <-done:
		assert.Equal(t, 0, c)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not shut down")
	}
	assert.Contains(t, stderr.String(), "shut down")
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		assert.Contains(t, sc.Text(), "qualkit contract double")
	}
}

// The control plane's command line is cli.py @ a9ed5f69's: its flags, its defaults, and
// its refusals in its order, each a usage error (exit 2) as argparse's parser.error makes.
func TestServerCommandLine(t *testing.T) {
	e := newServerEnv(t)
	cfg, err := parseServer([]string{e.bundle, "--model-name", "m", "--host", "::1", "--port=9000", "--runtime-root", "/rt",
		"--startup-timeout", "1800", "--request-timeout", "1800", "--records", "r.jsonl", "--max-body-bytes", "4194304", "--worker-binary", "/w"})
	require.NoError(t, err)
	assert.Equal(t, serverConfig{bundle: e.bundle, modelName: "m", host: "::1", port: 9000, runtimeRoot: "/rt", startupTimeout: 1800,
		requestTimeout: 1800, records: "r.jsonl", maxBody: 4 << 20, workerBinary: "/w"}, cfg)
	cfg, err = parseServer([]string{e.bundle})
	require.NoError(t, err)
	assert.Equal(t, serverConfig{bundle: e.bundle, host: "127.0.0.1", port: 8000, startupTimeout: 120, requestTimeout: 120,
		maxBody: 1 << 20}, cfg, "cli.py's defaults: 120 s timeouts, a 1 MiB body")

	r := newRunner(t, e.p.wd)
	res := r.run("trtmc-server-control-plane", "--help")
	assert.Equal(t, 0, res.code)
	for _, flag := range []string{"--model-name", "--host", "--port", "--runtime-root", "--startup-timeout", "--request-timeout",
		"--records", "--max-body-bytes", "Serve text-generation bundles through persistent native workers"} {
		assert.Contains(t, res.stdout, flag)
	}
	assert.NotContains(t, res.stdout, "--worker-binary", "argparse.SUPPRESS")

	worker := writeFile(t, filepath.Join(t.TempDir(), "trtmc-server"), "native")
	ok := []string{e.bundle, "--model-name", "m", "--worker-binary", worker}
	noLib := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"the adapter's old flags": {append(ok, "--scratch", "/s", "--keep-artifacts"), 2, "trtmc-server: error: unrecognized arguments: --scratch --keep-artifacts"},
		"a response format":       {append(ok, "--response-format", "artifact"), 2, "unrecognized arguments: --response-format artifact"},
		"extra positional":        {append(ok, "other"), 2, "unrecognized arguments: other"},
		"missing value":           {append(ok, "--port"), 2, "argument --port: expected one argument"},
		"all interfaces":          {append(ok, "--host", "0.0.0.0"), 2, "--host must be a loopback IP address"},
		"host name":               {append(ok, "--host", "localhost"), 2, "'localhost' does not appear to be an IPv4 or IPv6 address"},
		"lan address":             {append(ok, "--host", "10.0.0.5"), 2, "--host must be a loopback IP address"},
		"port out of range":       {append(ok, "--port", "70000"), 2, "--port must be between 0 and 65535"},
		"zero timeout":            {append(ok, "--startup-timeout", "0"), 2, "worker timeouts must be positive"},
		"bad body limit":          {append(ok, "--max-body-bytes", "0"), 2, "argument --max-body-bytes: invalid positive value: '0'"},
		"no bundle":               {[]string{"--worker-binary", worker}, 2, "provide a bundle or at least one --model NAME=PATH"},
		"no model name":           {[]string{e.bundle, "--worker-binary", worker}, 2, "--model-name is required with the positional bundle"},
		"bundle missing":          {[]string{"/no/x.bundle", "--model-name", "m", "--worker-binary", worker}, 2, "bundle does not exist"},
		"no worker binary":        {[]string{e.bundle, "--model-name", "m"}, 2, "trtmc-server: error: native worker executable is unavailable"},
		"runtime root not a dir":  {append(ok, "--runtime-root", worker), 2, "--runtime-root must be a directory"},
		"runtime without lib":     {append(ok, "--runtime-root", noLib), 1, "holds no libtrtmc_model_qwen_image.so"},
		"startup too short":       {append(ok, "--startup-timeout", "0.1"), 1, "exceeds --startup-timeout"},
		"records unwritable":      {append(ok, "--records", filepath.Join(noLib, "no", "r.jsonl")), 1, "--records"},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.run(append([]string{"trtmc-server-control-plane"}, tc.args...)...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
}

// The adapter's command line of the time (the Python module from PYTHONPATH, no
// worker binary) is refused as the real trtmc-server's control plane refuses it.
func TestControlPlaneWithoutWorkerBinary(t *testing.T) {
	e := newServerEnv(t)
	r := newRunner(t, e.p.wd)
	res := r.run("trtmc-server-control-plane", e.bundle, "--model-name", "m", "--host", "127.0.0.1", "--port", "1",
		"--records", "r.jsonl", "--startup-timeout", "1800", "--request-timeout", "1800")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "native worker executable is unavailable")
	res = r.run("trtmcdouble", "trtmc-server-control-plane", e.bundle, "--model-name", "m", "--worker-binary", "/nowhere/trtmc-server")
	assert.Equal(t, 2, res.code, "the role reached through the double's own name")
	assert.Contains(t, res.stderr, "native worker executable is unavailable")
}

// The native trtmc-server execs `python3 -P -m trtmc_server ARGS --worker-binary <itself>`
// with its control plane, <exe dir>/server/python, first on PYTHONPATH (main.cpp @
// 0f958bfb); it refuses _serve-worker, and needs the control plane beside it.
func TestNativeServerPassesItsWorkerBinary(t *testing.T) {
	e := newServerEnv(t)
	bin := t.TempDir()
	python := filepath.Join(bin, "python3")
	writeFile(t, python, "#!/bin/sh\n")
	require.NoError(t, os.Chmod(python, 0o755))
	writeFile(t, filepath.Join(bin, "notpython", "python3"), "not executable") // 0644: skipped on PATH

	build := t.TempDir()
	native := filepath.Join(build, "trtmc-server")
	r := newRunner(t, e.p.wd)
	self, err := os.ReadFile(r.self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(native, self, 0o755))
	r.self = native // the process's own executable: the native binary
	r = r.with("PATH", filepath.Join(bin, "notpython")+":"+bin, "PYTHONPATH", "/site/extra", "HOME", "/home/q")

	res := r.run(native, e.bundle, "--model-name", "m", "--port", "1")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "no control plane at "+filepath.Join(build, "server", "python")+"/trtmc_server")
	assert.Empty(t, *r.execs, "nothing is exec'd without the control plane")

	writeFile(t, filepath.Join(build, "server", "python", "trtmc_server", "__main__.py"), "# control plane")
	res = r.run(native, e.bundle, "--model-name", "m", "--host", "127.0.0.1")
	assert.Equal(t, 1, res.code, "the exec failed (the hook's error)")
	assert.Contains(t, res.stderr, "trtmc-server: exec "+python+": "+errExecRecorded.Error())
	require.Len(t, *r.execs, 1)
	call := (*r.execs)[0]
	assert.Equal(t, python, call.path, "python3 from the process's PATH, executable files only")
	assert.Equal(t, []string{"python3", "-P", "-m", "trtmc_server", e.bundle, "--model-name", "m", "--host", "127.0.0.1", "--worker-binary", native}, call.argv)
	assert.ElementsMatch(t, []string{"PATH=" + filepath.Join(bin, "notpython") + ":" + bin, "HOME=/home/q",
		"PYTHONPATH=" + filepath.Join(build, "server", "python") + ":/site/extra"}, call.env, "the control plane first on PYTHONPATH, the rest of the environment kept")

	*r.execs = nil
	r = r.with("PYTHONPATH", "")
	delete(r.env, "PYTHONPATH")
	res = r.run("trtmcdouble", "trtmc-server", "--help")
	assert.Equal(t, 1, res.code)
	require.Len(t, *r.execs, 1)
	assert.Equal(t, []string{"python3", "-P", "-m", "trtmc_server", "--help", "--worker-binary", native}, (*r.execs)[0].argv, "the role reached through the double's own name")
	assert.Contains(t, (*r.execs)[0].env, "PYTHONPATH="+filepath.Join(build, "server", "python"), "no PYTHONPATH before: the control plane alone")

	*r.execs = nil
	res = r.run(native, "_serve-worker", "--bundle", e.bundle)
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "spawns no worker")
	assert.Empty(t, *r.execs)

	r = r.with("PATH", filepath.Join(bin, "notpython"))
	res = r.run(native, e.bundle, "--model-name", "m")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "trtmc-server: python3: python3 not found on PATH")
	assert.Empty(t, *r.execs)
}

// A body over --max-body-bytes is 413 content_too_large, by its declared length or by
// what is read (app.py @ a9ed5f69 § _BodyLimitMiddleware).
func TestServerBodyLimit(t *testing.T) {
	e := newServerEnv(t)
	_, ts := e.start(t, 0, "--max-body-bytes", "2048")
	resp, got := postEdit(t, ts.URL, editForm, e.image)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, map[string]any{"message": "request body exceeds limit", "type": "invalid_request_error", "param": nil, "code": "content_too_large"}, got["error"])

	body, ct := form(t, editForm, e.image)
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/images/edits", io.NopCloser(body)) // no Content-Length: counted as read
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode)
}
