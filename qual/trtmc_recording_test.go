//go:build trtmcperfserve

// This file's name sorts after tables_test.go on purpose: go test runs a package's tests
// in file order, and TestPerfServeConformance reads what TestTRTMCDouble's row recorded.

package qual

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/trtmcdouble"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

var recordPerfServe = flag.Bool("qualkit.record-perf-serve", false,
	"TestPerfServeConformance writes the recording to families/qwen_image/trtmcdouble/"+trtmcdouble.RecordingDir+" instead of comparing ("+trtmcdouble.RecordCommand+")")

// TestPerfServeConformance holds the recording the double's perf-serve row replays
// (families/qwen_image/trtmcdouble/testdata/perfserve) to TRTMC's own perf-serve: the row
// qwen-double-trtmc-perf-serve, which TestTRTMCDouble ran just before in this go test
// run, served every request through the recorder (trtmcdouble/record.go), and what it
// recorded, made a recording again in a temporary folder, must be the committed one, but
// for the values that vary from run to run (timings, clocks). A request the real server
// answered in two ways is no recording at all: it fails here. With
// -qualkit.record-perf-serve (`make perf-serve-recording`) it replaces the committed one.
func TestPerfServeConformance(t *testing.T) {
	require.NotEmpty(t, os.Getenv(perfServeEnv), "the recording is made from TRTMC's own perf-serve: give %s", perfServeEnv)
	row := filepath.Join(suite.Evidence.Dir, "qwen-double-trtmc-perf-serve")
	var res struct{ Status string }
	b, err := os.ReadFile(filepath.Join(row, schema.ResultsFile))
	if err != nil {
		t.Fatalf("no evidence of the row qwen-double-trtmc-perf-serve in %s: this test reads what TestTRTMCDouble's row recorded, so run both (%s)", row, trtmcdouble.RecordCommand)
	}
	require.NoError(t, json.Unmarshal(b, &res))
	require.True(t, schema.Passing(res.Status), "the row qwen-double-trtmc-perf-serve is %s: what it recorded is no recording of the row", res.Status)
	dir := t.TempDir()
	fresh := makeRecording(t, row, dir)
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	committed := filepath.Join(root, "families", "qwen_image", "trtmcdouble", trtmcdouble.RecordingDir)
	if *recordPerfServe {
		require.NoError(t, os.RemoveAll(committed))
		require.NoError(t, os.CopyFS(committed, os.DirFS(dir)))
		t.Logf("recorded %d exchanges of TRTMC's perf-serve to %s", len(fresh.Exchanges), committed)
		return
	}
	old, err := trtmcdouble.LoadRecording(os.DirFS(committed))
	require.NoError(t, err)
	assert.Equal(t, old.Command, fresh.Command, "serve's command line")
	assert.Equal(t, old.Help, fresh.Help, "serve --help")
	assert.Equal(t, comparable(t, committed, old.Startup), comparable(t, dir, fresh.Startup), "the files under <scratch> at start")
	byDigest := map[string]trtmcdouble.Exchange{}
	for _, ex := range old.Exchanges {
		byDigest[ex.Digest] = ex
	}
	for _, ex := range fresh.Exchanges {
		was, ok := byDigest[ex.Digest]
		if !assert.True(t, ok, "%s %s (digest %s) is not in the recording: re-record with `%s`", ex.Method, ex.Path, ex.Digest, trtmcdouble.RecordCommand) {
			continue
		}
		delete(byDigest, ex.Digest)
		what := fmt.Sprintf("%s %s (digest %s): re-record with `%s`", ex.Method, ex.Path, ex.Digest, trtmcdouble.RecordCommand)
		assert.Equal(t, was.Status, ex.Status, what)
		assert.Equal(t, steady(was.Header), steady(ex.Header), what)
		assert.Equal(t, steadyJSON(was.Body), steadyJSON(ex.Body), what)
		assert.Equal(t, steadyLines(was.Records), steadyLines(ex.Records), what)
		assert.Equal(t, comparable(t, committed, was.Files), comparable(t, dir, ex.Files), what)
	}
	for _, ex := range byDigest {
		t.Errorf("the recording has %s %s (digest %s), which the row no longer sends: re-record with `%s`", ex.Method, ex.Path, ex.Digest, trtmcdouble.RecordCommand)
	}
}

// makeRecording makes the recording of a row's evidence (the recorder's exchanges, the
// worker's log, the records and the scratch folder) in dir: each run's values as
// placeholders, one exchange per request digest, each file by its sha256 and size, and
// its bytes a blob only where neither the request's body nor the double's worker makes
// them again (trtmcdouble.File).
func makeRecording(t *testing.T, row, dir string) trtmcdouble.Recording {
	t.Helper()
	scratch := filepath.Join(row, schema.ScratchDir)
	f, err := os.Open(filepath.Join(scratch, trtmcdouble.ExchangesFile))
	require.NoError(t, err)
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var start trtmcdouble.RecordedStart
	require.NoError(t, dec.Decode(&start))
	shape, values := trtmcdouble.ServeArgs(start.Args)
	rec := trtmcdouble.Recording{Command: shape, Help: start.Help}
	// Each path the flags name becomes its placeholder, the longest first (the worker's
	// path holds the runtime root's).
	paths := slices.Collect(maps.Keys(values))
	slices.SortFunc(paths, func(a, b string) int { return len(values[b]) - len(values[a]) })
	var pairs []string
	for _, ph := range paths {
		if strings.HasPrefix(values[ph], "/") {
			pairs = append(pairs, values[ph], ph)
		}
	}
	records := map[string][]string{}
	b, err := os.ReadFile(filepath.Join(row, schema.RecordsFile))
	require.NoError(t, err)
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			RequestID string `json:"request_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r), "records line %s", line)
		records[r.RequestID] = append(records[r.RequestID], line)
	}
	made := map[string]string{} // the worker's artifact -> its request
	if b, err := os.ReadFile(filepath.Join(scratch, trtmcdouble.WorkerLogFile)); err == nil {
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			var l trtmcdouble.WorkerLogLine
			require.NoError(t, json.Unmarshal([]byte(line), &l), "worker log line %s", line)
			made[l.Artifact] = string(l.Request)
		}
	}
	ph := strings.NewReplacer(pairs...)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "blobs"), 0o755))
	files := func(under, id string, ph *strings.Replacer, body []byte) []trtmcdouble.File {
		var out []trtmcdouble.File
		require.NoError(t, filepath.WalkDir(filepath.Join(scratch, under), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(scratch, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			file := trtmcdouble.File{Path: ph.Replace(filepath.ToSlash(rel)), Size: len(b)}
			sum := sha256.Sum256(b)
			file.Blob = hex.EncodeToString(sum[:])
			req, byWorker := made[filepath.Join(values["{{scratch}}"], rel)]
			switch {
			case byWorker:
				file.From, file.Request = "worker", json.RawMessage(ph.Replace(req))
			case trtmcdouble.BodyFile(body, file.Blob, len(b)) != nil:
				file.From = "request"
			default:
				if utf8.Valid(b) {
					b, file.Text = []byte(ph.Replace(string(b))), true
				}
				file.Blob = writeBlob(t, dir, b)
			}
			out = append(out, file)
			return nil
		}))
		return out
	}
	rec.Startup = files("_worker", "", ph, nil)
	seen := map[string]int{}
	for {
		var ex trtmcdouble.RecordedExchange
		if err := dec.Decode(&ex); err != nil {
			break
		}
		id := ex.Header.Get("X-Request-ID")
		ph := ph
		if id != "" {
			ph = strings.NewReplacer(append(slices.Clone(pairs), id, "{{request_id}}")...)
		}
		got := trtmcdouble.Exchange{Digest: ex.Digest, Method: ex.Method, Path: ex.Path, Status: ex.Status,
			Header: map[string]string{}, Body: ph.Replace(ex.Body), Ms: ex.Ms}
		for k, v := range appHeaders(ex.Header) {
			got.Header[k] = ph.Replace(v)
		}
		for _, line := range records[id] {
			got.Records = append(got.Records, recordTime.ReplaceAllString(ph.Replace(line), `"time": {{time}}`))
		}
		if id != "" && filepath.IsLocal(id) {
			got.Files = files(id, id, ph, []byte(ex.Request))
		}
		if i, ok := seen[ex.Digest]; ok {
			was := rec.Exchanges[i]
			require.Equal(t, was.Status, got.Status, "TRTMC's perf-serve answered %s %s (digest %s) twice otherwise: no recording can replay it", ex.Method, ex.Path, ex.Digest)
			require.Equal(t, was.Files, got.Files, "TRTMC's perf-serve wrote other files for %s %s (digest %s) the second time: no recording can replay it", ex.Method, ex.Path, ex.Digest)
			continue
		}
		seen[ex.Digest] = len(rec.Exchanges)
		rec.Exchanges = append(rec.Exchanges, got)
	}
	out, err := json.MarshalIndent(rec, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "recording.json"), append(out, '\n'), 0o644))
	return rec
}

// recordTime is a records line's clock (app.py @ 3878755c § execute: "time": time.time()).
var recordTime = regexp.MustCompile(`"time": [0-9.e+-]+`)

// writeBlob keeps b in dir/blobs under its sha256.
func writeBlob(t *testing.T, dir string, b []byte) string {
	sum := sha256.Sum256(b)
	name := hex.EncodeToString(sum[:])
	require.NoError(t, os.WriteFile(filepath.Join(dir, "blobs", name), b, 0o644))
	return name
}

// comparable is files as compared: binary files by their sha256, text files by their
// steady content.
func comparable(t *testing.T, dir string, files []trtmcdouble.File) map[string]string {
	out := map[string]string{}
	for _, f := range files {
		out[f.Path] = f.From + " " + f.Blob
		if f.Text {
			b, err := trtmcdouble.Blob(os.DirFS(dir), f.Blob)
			require.NoError(t, err)
			out[f.Path] = steadyJSON(string(b))
		}
	}
	return out
}

// volatileKeys hold values that vary from run to run: timings and clocks.
var volatileKeys = map[string]bool{"queue_ms": true, "model_call_ms": true, "handler_ms": true, "runtime_e2e_wall_ms": true,
	"time": true, "load_ms": true, "created": true, "inference_time_s": true}

var volatileNumber = regexp.MustCompile(`[0-9]+\.[0-9]+`)

// steadyJSON is a JSON text without its volatile values (any other text as it is).
func steadyJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(strings.ReplaceAll(s, "{{time}}", "0")), &v) != nil {
		return s
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
				if volatileKeys[k] {
					x[k] = "<varies>"
				}
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	b, _ := json.Marshal(walk(v))
	return string(b)
}

func steadyLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, steadyJSON(l))
	}
	return out
}

// steady is headers without their timings (server-timing: model;dur=...).
func steady(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[k] = volatileNumber.ReplaceAllString(v, "<ms>")
	}
	return out
}

// transportHeaders are the response headers of the transport, not of TRTMC's app: the
// recording keeps none of them (nor uvicorn's name for itself).
var transportHeaders = []string{"content-length", "date", "server", "connection", "transfer-encoding"}

// appHeaders are h's headers that TRTMC's app set, by lower-case name.
func appHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for k := range h {
		if k := strings.ToLower(k); !slices.Contains(transportHeaders, k) {
			out[k] = h.Get(k)
		}
	}
	return out
}
