package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit/server"
)

func TestFaultFlagsParse(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		taskOnly bool
		want     server.Fault
	}{
		{nil, false, server.Fault{}},
		{[]string{"--fault", "jpeg"}, true, server.Fault{Name: server.FaultJPEG}},
		{[]string{"--fault", "crash:4"}, false, server.Fault{Name: server.FaultCrash, K: 4}},
		{[]string{"--fault", "slow:2"}, false, server.Fault{Name: server.FaultSlow, K: 2, Delay: server.DefaultFaultDelay}},
		{[]string{"--fault", "slow", "--fault-delay", "250ms"}, false, server.Fault{Name: server.FaultSlow, K: 1, Delay: 250 * time.Millisecond}},
	} {
		c := newCommand("x", "x", io.Discard)
		ff := addFaultFlags(c.fs, true, server.FaultNames())
		_, err := c.parse(tc.args)
		require.NoError(t, err)
		got, err := ff.parse("x", c.given(), tc.taskOnly)
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.want, got, "%q", tc.args)
	}
}

func TestFaultFlagUsageErrorsExit2(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 4, 4)
	out := filepath.Join(t.TempDir(), "out.png")
	serve := []string{"serve", bundle, "--model-name", "m", "--port", "0"}
	run := []string{"run", bundle, "--image", img, "--prompt", "blur", "--output", out}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(serve, "--fault", "nope"), `--fault: unknown fault "nope"`},
		{append(serve, "--fault", "jpeg:2"), "jpeg takes no :K"},
		{append(serve, "--fault", "crash:0"), "K must be an edit request number >= 1"},
		{append(serve, "--fault-delay", "1s"), "--fault-delay applies only to --fault slow[:K]"},
		{append(serve, "--fault", "jpeg", "--fault-delay", "1s"), "--fault-delay applies only to --fault slow[:K]"},
		{append(serve, "--fault", "slow", "--fault-delay", "0s"), "--fault-delay 0s: want a duration > 0"},
		{append(run, "--fault", "status-500"), "--fault status-500:1 is a fault of the HTTP server only; run takes ignore-reference, "},
		{append(run, "--fault", "never-ready"), "is a fault of the HTTP server only"},
		{append(run, "--fault-delay", "1s"), "flag provided but not defined: -fault-delay"},
	} {
		t.Run(strings.Join(tc.args[3:], " "), func(t *testing.T) {
			code, _, stderr := refedit(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tc.want)
		})
	}
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "a usage error writes nothing")
}

func TestRunFault(t *testing.T) {
	bundle := buildBundle(t)
	img := writePNG(t, 12, 8)
	dir := t.TempDir()
	clean, faulty := filepath.Join(dir, "clean.png"), filepath.Join(dir, "drift.png")

	code, stdout, stderr := refedit(t, "run", bundle, "--image", img, "--prompt", "invert", "--output", clean)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, `"fault"`, "no fault unless asked")
	assert.NotContains(t, stderr, "FAULT")

	code, stdout, stderr = refedit(t, "run", bundle, "--image", img, "--prompt", "invert", "--output", faulty, "--fault", "drift")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "FAULT INJECTION ON: refedit run --fault drift")
	var report runReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &report))
	assert.Equal(t, "drift", report.Fault)

	a, b := decodePNGFile(t, clean), decodePNGFile(t, faulty)
	differ := 0
	for y := range 8 {
		for x := range 12 {
			if a.At(x, y) != b.At(x, y) {
				differ++
			}
		}
	}
	assert.Equal(t, 1, differ, "drift changes one pixel")

	jpegOut := filepath.Join(dir, "out.png")
	code, _, stderr = refedit(t, "run", bundle, "--image", img, "--prompt", "invert", "--output", jpegOut, "--fault", "jpeg")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(jpegOut)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff}), "a JPEG despite the name")
}

func decodePNGFile(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	return img
}

func TestServeFaultIsLoud(t *testing.T) {
	bundle := buildBundle(t)
	logs := &logBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, serveOptions{bundle: bundle, host: "127.0.0.1", Config: server.Config{ModelName: "m",
			MaxBodyBytes: 1 << 20, QueueDepth: 2, Fault: server.Fault{Name: server.FaultNeverReady}}}, log.New(logs, "refedit: ", 0))
	}()
	addr := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+) `)
	require.Eventually(t, func() bool { return addr.MatchString(logs.String()) }, 10*time.Second, 5*time.Millisecond)
	first, _, _ := strings.Cut(logs.String(), "\n")
	assert.Equal(t, "refedit: FAULT INJECTION ON: refedit serve --fault never-ready "+
		"(/health/ready answers 503 for ever, as if the model never loaded). "+
		"This is a deliberately broken refedit for a negative control: never qualify it.", first)

	resp, err := http.Get(addr.FindStringSubmatch(logs.String())[1] + "/health/ready")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "never-ready", resp.Header.Get(server.FaultHeader))
	assert.JSONEq(t, `{"fault":"never-ready","status":"loading"}`, string(body))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
}
