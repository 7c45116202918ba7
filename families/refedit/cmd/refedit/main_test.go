package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"log"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit/edit"
	"qualkit/families/refedit/server"
)

// refedit runs the CLI in-process and returns its exit code and output.
func refedit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := dispatch(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func buildBundle(t *testing.T, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "refedit.bundle")
	code, _, stderr := refedit(t, append([]string{"build", "-o", path}, extra...)...)
	require.Equal(t, 0, code, stderr)
	return path
}

func writePNG(t *testing.T, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 17), uint8(y * 23), 90, 0xff})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	path := filepath.Join(t.TempDir(), "in.png")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

func TestBuildPrintsSHA256AndIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.bundle"), filepath.Join(dir, "b.bundle")
	code, outA, _ := refedit(t, "build", "-o", a)
	require.Equal(t, 0, code)
	code, outB, _ := refedit(t, "build", "--seed", "0", "-o", b)
	require.Equal(t, 0, code)
	dataA, err := os.ReadFile(a)
	require.NoError(t, err)
	dataB, err := os.ReadFile(b)
	require.NoError(t, err)
	assert.Equal(t, dataA, dataB)
	assert.Equal(t, edit.SHA256(dataA)+"  "+a+"\n", outA)
	assert.True(t, strings.HasPrefix(outB, edit.SHA256(dataA)))

	sized := buildBundle(t, "--width", "32", "--height", "16", "--num-inference-steps", "7", "--guidance-scale", "0.5", "--seed", "11")
	p, err := edit.Load(sized)
	require.NoError(t, err)
	assert.Equal(t, edit.Defaults{Width: 32, Height: 16, NumInferenceSteps: 7, GuidanceScale: 0.5, Seed: 11}, p.Bundle().Defaults)
}

func TestUsageErrorsExit2(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 4, 4)
	out := filepath.Join(t.TempDir(), "out.png")
	tests := []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"paint"}, `unknown command "paint"`},
		{[]string{"build"}, "-o FILE is required"},
		{[]string{"build", "-o", out, "--width", "4"}, "--width and --height go together"},
		{[]string{"build", "-o", out, "--num-inference-steps", "0"}, "num_inference_steps: want an integer in 1..100, got 0"},
		{[]string{"build", "-o", out, "extra"}, "takes no positional arguments"},
		{[]string{"build", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"serve"}, "want exactly one BUNDLE argument, got 0"},
		{[]string{"serve", bundle}, "--model-name NAME is required"},
		{[]string{"serve", bundle, "--model-name", "m", "--port", "70000"}, "--port 70000"},
		{[]string{"serve", bundle, "--model-name", "m", "--queue-depth", "-1"}, "--queue-depth -1"},
		{[]string{"run", bundle, "--prompt", "blur", "--output", out}, "--image IN is required"},
		{[]string{"run", bundle, "--image", img, "--output", out}, "--prompt P is required"},
		{[]string{"run", bundle, "--image", img, "--prompt", "blur"}, "--output OUT.png is required"},
		{[]string{"run", "--image", img, "--prompt", "blur", "--output", out}, "want exactly one BUNDLE"},
		{[]string{"run", bundle, "--image", img, "--prompt", "blur", "--output", out, "--size", "0x1"}, "--size: want WxH"},
		{[]string{"run", bundle, "--image", img, "--prompt", "blur", "--output", out, "--guidance-scale", "9"}, "--guidance-scale: want a number in (0, 3]"},
		{[]string{"run", bundle, "--image", img, "--prompt", "make it nice", "--output", out}, "--prompt: no supported edit"},
		{[]string{"version", "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := refedit(t, tt.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

func TestHelpExits0(t *testing.T) {
	for _, cmd := range []string{"build", "serve", "run"} {
		code, _, stderr := refedit(t, cmd, "-h")
		assert.Equal(t, 0, code)
		assert.Contains(t, stderr, "usage: refedit "+cmd)
	}
	code, stdout, _ := refedit(t, "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "refedit serve BUNDLE")
}

func TestVersion(t *testing.T) {
	code, stdout, _ := refedit(t, "version")
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^refedit 0\.1\.0 \(bundle format refedit-bundle v2, go`, stdout)
}

func TestRunWritesPNGAndReport(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 10, 6)
	out := filepath.Join(t.TempDir(), "out.png")
	// Flags after the positional BUNDLE, and before it.
	code, stdout, stderr := refedit(t, "run", "--image", img, bundle, "--prompt", "add film grain",
		"--size", "20x12", "--seed", "42", "--num-inference-steps", "3", "--guidance-scale", "2", "--output", out)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 1, strings.Count(stdout, "\n"), "one JSON line")

	var report runReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &report))
	assert.Equal(t, edit.Effective{Edit: "grain", Settings: edit.Settings{Width: 20, Height: 12, NumInferenceSteps: 3, GuidanceScale: 2, Seed: 42}, Precision: "fp32"}, report.Settings)
	assert.Greater(t, report.Timing["task_ms"], 0.0)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, edit.SHA256(data), report.OutputSHA256)
	in, err := os.ReadFile(img)
	require.NoError(t, err)
	assert.Equal(t, edit.SHA256(in), report.InputSHA256)
	decoded, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, image.Rect(0, 0, 20, 12), decoded.Bounds())
}

func TestRunFailuresExit1(t *testing.T) {
	bundle := buildBundle(t)
	out := filepath.Join(t.TempDir(), "out.png")
	notImage := filepath.Join(t.TempDir(), "x.png")
	require.NoError(t, os.WriteFile(notImage, []byte("hello"), 0o644))
	code, _, stderr := refedit(t, "run", bundle, "--image", notImage, "--prompt", "blur", "--output", out)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "not a PNG, JPEG or WebP")
	code, _, stderr = refedit(t, "run", filepath.Join(t.TempDir(), "none.bundle"), "--image", notImage, "--prompt", "blur", "--output", out)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "load bundle")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no output on failure")
}

// logBuffer collects the server log while it runs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestServeMatchesRunAndShutsDown(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 12, 8)
	dir := t.TempDir()
	records := filepath.Join(dir, "records.jsonl")
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{bundle: bundle, host: "127.0.0.1", records: records,
			Config: server.Config{ModelName: "m", MaxBodyBytes: 1 << 20, QueueDepth: 2}}, log.New(logs, "refedit: ", 0))
	}()
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+) `)
	require.Eventually(t, func() bool { return addr.MatchString(logs.String()) }, 10*time.Second, 5*time.Millisecond)
	base := addr.FindStringSubmatch(logs.String())[1]
	p, err := edit.Load(bundle)
	require.NoError(t, err)
	assert.Contains(t, logs.String(), p.SHA256())

	resp, err := http.Get(base + "/health/ready")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	imgBytes, err := os.ReadFile(img)
	require.NoError(t, err)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("prompt", "sharpen"))
	require.NoError(t, mw.WriteField("seed", "42"))
	fw, err := mw.CreateFormFile("image", "image.png")
	require.NoError(t, err)
	_, err = fw.Write(imgBytes)
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	req, err := http.NewRequest(http.MethodPost, base+"/v1/images/edits", &body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Request-ID", "cli-1")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var edited struct {
		Data []struct {
			B64JSON string `json:"b64_json"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(raw, &edited))

	out := filepath.Join(dir, "native.png")
	code, stdout, stderr := refedit(t, "run", bundle, "--image", img, "--prompt", "sharpen", "--seed", "42", "--output", out)
	require.Equal(t, 0, code, stderr)
	var report runReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &report))
	native, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, edited.Data[0].B64JSON, base64.StdEncoding.EncodeToString(native), "HTTP and native bytes are identical")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	assert.Contains(t, logs.String(), "POST /v1/images/edits 200")
	assert.Contains(t, logs.String(), "stopped")
	recs, err := os.ReadFile(records)
	require.NoError(t, err)
	assert.Contains(t, string(recs), `"request_id":"cli-1"`)
	assert.Contains(t, string(recs), report.OutputSHA256)
}

func TestServeFailsOnABadBundle(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.bundle")
	require.NoError(t, os.WriteFile(bad, []byte(`{"format":"other"}`), 0o644))
	err := serve(context.Background(), serveOptions{bundle: bad, host: "127.0.0.1", Config: server.Config{ModelName: "m", MaxBodyBytes: 1}}, log.New(io.Discard, "", 0))
	assert.ErrorContains(t, err, `bundle format "other"`)
}

func TestParseAcceptsFlagsAroundPositionals(t *testing.T) {
	c := newCommand("x", "x", io.Discard)
	port := c.fs.Int("port", 0, "")
	pos, err := c.parse([]string{"--port", "1", "A", "B", "--port", "2", "--", "--port"})
	require.NoError(t, err)
	assert.Equal(t, []string{"A", "B", "--port"}, pos)
	assert.Equal(t, 2, *port)
}
