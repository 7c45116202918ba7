package trtmcdouble

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"qualkit/families/qwen_image/latents"
)

// Without TRTMC's own perf-serve beside the clone, the double's perf-serve row is served
// by a replay of what TRTMC's server answered the same requests (recorded by record.go,
// kept in RecordingDir). Nothing of TRTMC's server is imitated here: a request the
// recording has not is answered 500, naming its digest and RecordCommand.

// RecordingDir is relative to this package.
const RecordingDir = "testdata/perfserve"

// RecordCommand re-records the exchanges (it needs TRTMC's perf-serve snapshot).
const RecordCommand = "make perf-serve-recording TRTMC_PERF_SERVE=../shared/trtmc-perf-serve"

//go:embed testdata/perfserve
var recorded embed.FS

// Recording is what TRTMC's perf-serve answered, a run's values as Placeholders.
type Recording struct {
	// Command is `serve`'s arguments; the replay serves only this command line.
	Command []string `json:"command"`
	Help    string   `json:"help"`    // what `serve --help` printed
	Startup []File   `json:"startup"` // the files under <scratch> once the server was ready
	// Exchanges are in the order they were first seen; one per request digest.
	Exchanges []Exchange `json:"exchanges"`
}

// Exchange is one request's answer and what the server wrote for it.
type Exchange struct {
	Digest string            `json:"digest"` // RequestDigest of the request
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Status int               `json:"status"`
	Header map[string]string `json:"header"` // lower-case names; none of the transport's
	Body   string            `json:"body"`
	// Ms is how long TRTMC's server took to answer; the replay takes as long, so every
	// timing the server reports stays within what the client measures.
	Ms      float64  `json:"ms"`
	Records []string `json:"records,omitempty"` // the records lines of the request
	Files   []File   `json:"files,omitempty"`   // under <scratch>, {{request_id}}/...
}

// File is a file the server wrote: its path under <scratch>, its bytes' sha256 (Blob) and
// size, and where the replay gets them (From): "" blobs/<sha256> (a Text file's
// placeholders filled); "request" the request's body (BodyFile); "worker" the double's
// worker run again on Request, the request it was given. Other bytes are refused.
type File struct {
	Path    string          `json:"path"`
	Blob    string          `json:"blob"`
	Size    int             `json:"size"`
	From    string          `json:"from,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
	Text    bool            `json:"text,omitempty"`
}

// Placeholders stand for a run's values in a recording: the serve flags' paths and
// port, the request id, and a records line's time (seconds since the epoch).
var Placeholders = map[string]string{"--bundle": "{{bundle}}", "--runtime-root": "{{runtime_root}}", "--worker": "{{worker}}",
	"--records": "{{records}}", "--scratch": "{{scratch}}", "--port": "{{port}}"}

// RequestDigest names a request by what TRTMC's server reads of it: the method, the path
// and the body. app.py @ 3878755c reads no query and no header but x-request-id (§
// request_id_of), which AIPerf makes fresh per request, so it is left out; the body goes
// through json.loads, so a JSON body is compacted (keys in order, numbers as spelled).
func RequestDigest(method, urlPath string, body []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, body) != nil {
		b.Reset()
		b.Write(body)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", method, urlPath)
	h.Write(b.Bytes())
	return hex.EncodeToString(h.Sum(nil))
}

// ServeArgs splits serve's arguments into the recorded shape and the values by placeholder.
func ServeArgs(args []string) (shape []string, values map[string]string) {
	values = map[string]string{}
	for i := 0; i < len(args); i++ {
		shape = append(shape, args[i])
		if ph, ok := Placeholders[args[i]]; ok && i+1 < len(args) {
			values[ph] = args[i+1]
			shape = append(shape, ph)
			i++
		}
	}
	return shape, values
}

// Blob reads a recorded blob (blobs/<sha256>).
func Blob(fsys fs.FS, sum string) ([]byte, error) {
	return fs.ReadFile(fsys, path.Join("blobs", sum))
}

// BodyFile is the file of sum and size that a request body holds: a base64 string of
// it (an input the client sent: {"$file": {"b64": ...}} or a data URL), or the noise
// latents.Raw draws for its latent_seed (the Qwen adapter's key, perfserveref.go); nil
// when it holds neither.
func BodyFile(body []byte, sum string, size int) []byte {
	for _, m := range base64String.FindAllSubmatch(body, -1) {
		if b, err := base64.StdEncoding.DecodeString(string(m[1])); err == nil && sha256Hex(b) == sum {
			return b
		}
	}
	if m := latentSeed.FindSubmatch(body); m != nil && size%4 == 0 {
		seed, _ := strconv.ParseUint(string(m[1]), 10, 64)
		if b, err := latents.Raw(seed, size/4); err == nil && sha256Hex(b) == sum {
			return b
		}
	}
	return nil
}

var (
	base64String = regexp.MustCompile(`"(?:data:[^",]*base64,)?([A-Za-z0-9+/]{16,}=*)"`)
	latentSeed   = regexp.MustCompile(`"latent_seed":\s*([0-9]+)`)
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// LoadRecording reads a recording from fsys.
func LoadRecording(fsys fs.FS) (Recording, error) {
	var rec Recording
	b, err := fs.ReadFile(fsys, "recording.json")
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(b, &rec)
}

type replayer struct {
	p       *proc
	rec     Recording
	blobs   fs.FS
	byKey   map[string]*Exchange
	fill    map[string]string // placeholder -> this run's value
	records *os.File
	mu      sync.Mutex // one request at a time, as TRTMC's one execution lane
}

// replayMain plays `python -m trtmc_perf_serving serve ARGS` from the recording.
func replayMain(p *proc) int {
	blobs, err := fs.Sub(recorded, RecordingDir)
	if err != nil {
		return p.fail(exitFail, "trtmc-perf-serve (qualkit contract double, replay): %v", err)
	}
	return replay(p, blobs)
}

func replay(p *proc, blobs fs.FS) int {
	fail := func(code int, format string, a ...any) int {
		return p.fail(code, "trtmc-perf-serve (qualkit contract double, replay): "+format, a...)
	}
	rec, err := LoadRecording(blobs)
	if err != nil {
		return fail(exitFail, "the recording: %v", err)
	}
	if len(p.args) < 2 || p.args[1] != "serve" {
		return fail(exitUsage, "only `serve` was recorded")
	}
	args := p.args[2:]
	if slices.Contains(args, "--help") || slices.Contains(args, "-h") {
		fmt.Fprint(p.stdout, rec.Help)
		return exitOK
	}
	shape, values := ServeArgs(args)
	if !slices.Equal(shape, rec.Command) {
		return fail(exitUsage, "no recording of this command line\n  given:    %s\n  recorded: %s\nre-record TRTMC's perf-serve with `%s`",
			strings.Join(shape, " "), strings.Join(rec.Command, " "), RecordCommand)
	}
	r := &replayer{p: p, rec: rec, blobs: blobs, byKey: map[string]*Exchange{}, fill: values}
	for i := range rec.Exchanges {
		r.byKey[rec.Exchanges[i].Digest] = &rec.Exchanges[i]
	}
	scratch := p.abs(values["{{scratch}}"])
	for _, f := range rec.Startup {
		if err = r.write(scratch, f, "", nil); err != nil {
			return fail(exitFail, "%v", err)
		}
	}
	if r.records, err = appendTo(p.abs(values["{{records}}"])); err != nil {
		return fail(exitFail, "%v", err)
	}
	defer r.records.Close()
	ln, err := net.Listen("tcp", net.JoinHostPort(hostOf(args), values["{{port}}"]))
	if err != nil {
		return fail(exitFail, "%v", err)
	}
	fmt.Fprintf(p.stderr, "trtmc-perf-serve (qualkit contract double, replay of TRTMC's perf-serve recorded in %s: %d exchanges) on http://%s\n",
		RecordingDir, len(rec.Exchanges), ln.Addr())
	return serveUntilDone(p, ln, r, "trtmc-perf-serve", "trtmc-perf-serve: ")
}

func appendTo(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
}

// hostOf is serve's --host, 127.0.0.1 by default (cli.py @ 3878755c).
func hostOf(args []string) string {
	if i := slices.Index(args, "--host"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return "127.0.0.1"
}

func (r *replayer) filled(s, id string) string {
	kv := []string{"{{request_id}}", id, "{{time}}", strconv.FormatFloat(float64(time.Now().UnixNano())/1e9, 'f', -1, 64)}
	for ph, v := range r.fill {
		kv = append(kv, ph, v)
	}
	return strings.NewReplacer(kv...).Replace(s)
}

// write writes a recorded file under scratch, for request id and its body: its bytes
// from where the recording says (File), refused unless they are the sha256 recorded.
func (r *replayer) write(scratch string, f File, id string, body []byte) error {
	dst := filepath.Join(scratch, filepath.FromSlash(r.filled(f.Path, id)))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	b, err := Blob(r.blobs, f.Blob)
	switch f.From {
	case "request":
		b, err = BodyFile(body, f.Blob, f.Size), nil
	case "worker":
		b, err = r.work(dst, r.filled(string(f.Request), id))
	}
	if err != nil {
		return fmt.Errorf("recording: %s: %w", f.Path, err)
	}
	if sum := sha256Hex(b); sum != f.Blob {
		return fmt.Errorf("qualkit contract double: the replay made %s with sha256 %s, TRTMC's perf-serve wrote sha256 %s (the double's worker or the request changed): re-record with `%s`",
			f.Path, sum, f.Blob, RecordCommand)
	}
	if f.Text {
		b = []byte(r.filled(string(b), id))
	}
	return os.WriteFile(dst, b, 0o644)
}

// work runs the double's worker on request (its paths this run's), as TRTMC's server ran
// it for the recording, writing dst, and returns dst's bytes.
func (r *replayer) work(dst, request string) ([]byte, error) {
	h, err := ReadBundle(r.p.abs(r.fill["{{bundle}}"]))
	if err != nil {
		return nil, err
	}
	w := &worker{p: r.p, header: h, ignoreSteps: r.p.getenv(EnvIgnoreSteps) == "1"}
	base := strings.TrimSuffix(dst, ".image.1.0.png")
	if _, err := w.run(workerLine{Request: json.RawMessage(request), ArtifactBase: &base}); err != nil {
		return nil, err
	}
	return os.ReadFile(dst)
}

func (r *replayer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	digest := RequestDigest(req.Method, req.URL.Path, body)
	ex := r.byKey[digest]
	if ex == nil {
		msg := fmt.Sprintf("qualkit contract double: TRTMC's perf-serve was never recorded answering this request (%s %s, digest %s): re-record with `%s`",
			req.Method, req.URL.Path, digest, RecordCommand)
		fmt.Fprintln(r.p.stderr, msg)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": "server_error", "code": "qualkit_not_recorded"}})
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := ""
	if _, ok := ex.Header["x-request-id"]; ok {
		id = requestID(req.Header.Get("X-Request-ID"))
	}
	select {
	case <-time.After(time.Duration(ex.Ms * float64(time.Millisecond))):
	case <-req.Context().Done():
		return
	}
	scratch := r.p.abs(r.fill["{{scratch}}"])
	for _, f := range ex.Files { // the worker's inputs first: they sort before output*
		if err := r.write(scratch, f, id, body); err != nil {
			fmt.Fprintln(r.p.stderr, err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for _, line := range ex.Records {
		if _, err := r.records.WriteString(r.filled(line, id) + "\n"); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	for k, v := range ex.Header {
		w.Header().Set(k, r.filled(v, id))
	}
	w.WriteHeader(ex.Status)
	io.WriteString(w, r.filled(ex.Body, id))
}
