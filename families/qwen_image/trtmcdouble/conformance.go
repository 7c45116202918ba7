package trtmcdouble

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The conformance of the double's Go imitation of trtmc-perf-serve (perfserve.go) to
// TRTMC's own server: the same requests, good and bad, sent to each, and what came back
// compared, status, body, headers, records line and scratch layout, with the values
// that vary from run to run (timings, clocks, generated ids) compared by shape only.
// qual's TestPerfServeConformance runs both servers, in the double's image, with the
// double's worker and bundle; the comparison and the cases are here, and
// conformance_test.go holds the comparison to what it must find.

// ConformanceCase is one exchange with a server: a request, or several sent at once.
type ConformanceCase struct {
	Name      string
	Method    string
	Path      string
	RequestID string // the X-Request-ID header; "" sends none
	Body      []byte
	// Together sends the request this many times at once (ids suffixed -0, -1, ...).
	Together int
	// Hold has the double's worker hold this request (EnvHold) until the cases of While
	// have been answered, then answer it, or, with Garble, write a line no protocol
	// reads: a full lane and a worker that fails, each at a known moment.
	Hold   bool
	While  []ConformanceCase
	Garble bool
}

// Exchange is what one request of a case came back with, and what the server wrote for
// it. A server that did not start is one Exchange too: Status its exit status, Body its
// last line on stderr. The worker's folder, <scratch>/_worker, is the last exchange of
// a run, with no request.
type Exchange struct {
	Case      string
	RequestID string // the id the server answered with (X-Request-ID)
	Status    int
	Header    http.Header
	Body      []byte
	Records   []json.RawMessage // records lines of this request id
	Scratch   []ScratchFile     // files under <scratch>/<request id>/
	// Paths maps paths as this server names them to the names compared: the two servers
	// may see the same files at different places.
	Paths map[string]string
}

// ScratchFile is one file a server wrote: its path, relative and slash-separated, its
// sha256, and, for a .json file, its contents (compared as JSON).
type ScratchFile struct {
	Path, SHA256 string
	JSON         []byte
}

// caseBuilder makes the cases' requests around one reference image.
type caseBuilder struct{ image []byte }

func (cb caseBuilder) file(b []byte) map[string]any {
	return map[string]any{"$file": map[string]any{"suffix": ".png", "b64": base64.StdEncoding.EncodeToString(b)}}
}

// request is the row's edit request with extra's fields set (nil removes one).
func (cb caseBuilder) request(extra map[string]any) map[string]any {
	r := map[string]any{"prompt": "Repaint it in soft watercolors.", "image_path": cb.file(cb.image),
		"negative_prompt": " ", "seed": 42, "num_steps": 20, "guidance_scale": 4.0, "cfg_scale": 4.0,
		"height": 1024, "width": 1024}
	for k, v := range extra {
		if v == nil {
			delete(r, k)
		} else {
			r[k] = v
		}
	}
	return r
}

func caseBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

const taskRoute = "/v1/tasks/generate_image"

func postCase(name, id string, b []byte) ConformanceCase {
	return ConformanceCase{Name: name, Method: http.MethodPost, Path: taskRoute, RequestID: id, Body: b}
}

func getCase(name, path string) ConformanceCase {
	return ConformanceCase{Name: name, Method: http.MethodGet, Path: path}
}

// ConformanceCases are the exchanges both servers get, in order: the read routes, edits
// with and without latent replay, every refusal of the task route in app.py @ 3878755c's
// order, $file inputs in a list, a large input, two requests at once, the OpenAI images
// route, and the routes no handler serves. image is a PNG or JPEG reference image.
func ConformanceCases(image []byte) []ConformanceCase {
	cb := caseBuilder{image}
	file, request := cb.file, cb.request
	big := make([]byte, 24<<20)
	for i := range big {
		big[i] = byte(i * 31)
	}
	return []ConformanceCase{
		getCase("health live", "/health/live"),
		getCase("health ready", "/health/ready"),
		getCase("models", "/v1/models"),
		getCase("serving info", "/v1/serving/info"),
		postCase("edit with latent_seed", "conf-edit-latents", caseBody(map[string]any{"request": request(map[string]any{"latent_seed": 42})})),
		postCase("edit", "conf-edit", caseBody(map[string]any{"request": request(nil)})),
		postCase("edit with a model key", "conf-edit-model", caseBody(map[string]any{"model": "anything", "request": request(nil)})),
		postCase("edit with an unknown request field", "conf-edit-unknown", caseBody(map[string]any{"request": request(map[string]any{"qualkit_unknown": 1})})),
		postCase("edit with $file inputs in a list", "conf-edit-list", caseBody(map[string]any{"request": request(map[string]any{"reference_paths": []any{file(image), file(image)}})})),
		postCase("a request id that is no id", "../not an id", caseBody(map[string]any{"request": request(nil)})),
		postCase("no request id", "", caseBody(map[string]any{"request": request(nil)})),
		postCase("latent_seed not an integer", "conf-bad-latent-seed", caseBody(map[string]any{"request": request(map[string]any{"latent_seed": "forty-two"})})),
		postCase("image_path as a server path", "conf-server-path", caseBody(map[string]any{"request": request(map[string]any{"image_path": "/etc/passwd"})})),
		postCase("an unknown body field", "conf-body-field", caseBody(map[string]any{"request": request(nil), "extra": 1})),
		postCase("request not an object", "conf-request-list", caseBody(map[string]any{"request": []int{1}})),
		postCase("$file with a sibling", "conf-file-sibling", caseBody(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": file(image)["$file"], "x": 1}})})),
		postCase("$file without b64", "conf-file-no-b64", caseBody(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".png"}}})})),
		postCase("$file with a long suffix", "conf-file-suffix", caseBody(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".12345678901234567", "b64": "AA=="}}})})),
		postCase("$file with bad base64", "conf-file-base64", caseBody(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".png", "b64": "not base64!"}}})})),
		postCase("a body that is not JSON", "conf-not-json", []byte("not json")),
		{Name: "another operation", Method: http.MethodPost, Path: "/v1/tasks/embed", RequestID: "conf-other-operation", Body: caseBody(map[string]any{"request": request(nil)})},
		postCase("a 24 MiB input that is no image", "conf-large", caseBody(map[string]any{"request": request(map[string]any{"image_path": file(big)})})),
		{Name: "two edits at once", Method: http.MethodPost, Path: taskRoute, RequestID: "conf-together", Body: caseBody(map[string]any{"request": request(nil)}), Together: 2},
		{Name: "the OpenAI images route", Method: http.MethodPost, Path: "/v1/images/generations", RequestID: "conf-openai",
			Body: caseBody(map[string]any{"prompt": "A watercolor house.", "size": "1024x1024", "seed": 7, "num_inference_steps": 20})},
		{Name: "the OpenAI images route with an unknown field", Method: http.MethodPost, Path: "/v1/images/generations", RequestID: "conf-openai-field",
			Body: caseBody(map[string]any{"prompt": "A watercolor house.", "image": "x"})},
		{Name: "GET on the task route", Method: http.MethodGet, Path: taskRoute},
		getCase("an unknown route", "/qualkit/unknown"),
	}
}

// ConformanceFlags are the flags, beyond the row's, of the second server both get
// (cli.py @ 3878755c accepts each): a lane with no queue (a second request while one
// runs is 429), a fresh worker for each request, the testcase and task named, base-request and measurement
// overrides as the CLI parses them (JSON, else the text; the measurement's integers
// through int(); telemetry.* accepted).
var ConformanceFlags = []string{"--max-queue", "0", "--isolate-requests", "--testcase", "qwen-image-edit-2511", "--task", "image_edit",
	"--set", "request.num_steps=8", "--set", "request.guidance_scale=4.50",
	"--set", `measurement.warmup="2"`, "--set", "telemetry.gpu=off"}

// FlagConformanceCases are the exchanges the server with ConformanceFlags gets: its
// serving info, two edits (each in a fresh worker), an edit sent while the worker holds
// another (429 with Retry-After, deterministic: the lane is known to be busy), a worker
// that answers with no JSON (503), then the backend unavailable for good: an edit, the
// readiness probe, the serving info.
func FlagConformanceCases(image []byte) []ConformanceCase {
	request := caseBuilder{image}.request
	edit := caseBody(map[string]any{"request": request(nil)})
	held := postCase("an edit the worker holds", "conf-held", edit)
	held.Hold, held.While = true, []ConformanceCase{postCase("an edit while the lane is busy (--max-queue 0)", "conf-busy", edit)}
	garbled := postCase("an edit the worker answers with no JSON", "conf-garbled", edit)
	garbled.Hold, garbled.Garble = true, true
	return []ConformanceCase{
		getCase("serving info", "/v1/serving/info"),
		postCase("edit (--isolate-requests)", "conf-isolated-1", edit),
		postCase("another edit, in a fresh worker", "conf-isolated-2", edit),
		held,
		garbled,
		postCase("an edit once the worker failed (503, sticky)", "conf-after-failure", edit),
		getCase("health ready once the worker failed", "/health/ready"),
		getCase("serving info once the worker failed", "/v1/serving/info"),
	}
}

// StartupConformanceFlags are flags, beyond the row's, with which neither server may
// start, each compared by exit status and last line: --memory-probe (accepted, then
// `import pynvml` fails: the double's image has no NVML, as a host without a GPU),
// --set values catalog.py @ 0dd9052f refuses, a testcase and a task the manifest has not.
var StartupConformanceFlags = [][]string{
	{"--memory-probe"},
	{"--set", "measurement.warmup=-1"},
	{"--set", "request"},
	{"--testcase", "qualkit-no-such-case"},
	{"--task", "qualkit_no_such_task"},
}

// ConformanceServer is a running server the cases go to, and where it writes, as seen
// from this machine.
type ConformanceServer struct {
	Name    string // what it is, named in the case of its worker's folder
	URL     string
	Records string // its --records file
	Scratch string // its --scratch folder
	Hold    string // the worker's EnvHold folder; "" when no case holds a request
	// Paths maps paths as the server names them to the names compared (Exchange.Paths).
	Paths map[string]string
}

// RunConformance sends the cases to the server, one after the other (the requests of a
// Together case at once, the cases of a held one's While while it is held), and reads,
// for each request, the records lines and scratch files the server wrote for its id;
// last, the worker's folder.
func RunConformance(ctx context.Context, srv ConformanceServer, cases []ConformanceCase) ([]Exchange, error) {
	client := &http.Client{Timeout: 5 * time.Minute}
	var out []Exchange
	for _, c := range cases {
		got, err := srv.send(ctx, client, c)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	lines, err := os.ReadFile(srv.Records)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for i := range out {
		ex := &out[i]
		ex.Paths = srv.Paths
		for l := range bytes.SplitSeq(bytes.TrimSpace(lines), []byte("\n")) {
			var rec struct {
				RequestID string `json:"request_id"`
			}
			if json.Unmarshal(l, &rec) == nil && rec.RequestID == ex.RequestID && ex.RequestID != "" {
				ex.Records = append(ex.Records, json.RawMessage(slices.Clone(l)))
			}
		}
		if ex.RequestID == "" || !filepath.IsLocal(ex.RequestID) {
			continue
		}
		if ex.Scratch, err = scratchFiles(filepath.Join(srv.Scratch, ex.RequestID)); err != nil {
			return nil, err
		}
	}
	worker, err := scratchFiles(filepath.Join(srv.Scratch, "_worker"))
	if err != nil {
		return nil, err
	}
	return append(out, Exchange{Case: "the worker's folder <scratch>/_worker (" + srv.Name + ")", Scratch: worker, Paths: srv.Paths}), nil
}

// send runs one case: its request, or its requests at once, or its held request with
// the cases of While sent while the worker holds it.
func (srv ConformanceServer) send(ctx context.Context, client *http.Client, c ConformanceCase) ([]Exchange, error) {
	if c.Hold {
		return srv.held(ctx, client, c)
	}
	n := max(c.Together, 1)
	got := make([]Exchange, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		id := c.RequestID
		if c.Together > 1 {
			id = fmt.Sprintf("%s-%d", c.RequestID, i)
		}
		wg.Go(func() { got[i], errs[i] = exchange(ctx, client, srv.URL, c, id) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("case %q: %w", c.Name, err)
	}
	return got, nil
}

// held sends c, waits until the worker holds it (<id>.held), sends the cases of c.While,
// then releases it (<id>.release, "garble" or "reply").
func (srv ConformanceServer) held(ctx context.Context, client *http.Client, c ConformanceCase) ([]Exchange, error) {
	if srv.Hold == "" {
		return nil, fmt.Errorf("case %q holds its request: the server needs a hold folder (%s)", c.Name, EnvHold)
	}
	hold := filepath.Join(srv.Hold, c.RequestID)
	if err := os.WriteFile(hold+".hold", nil, 0o644); err != nil {
		return nil, err
	}
	var first Exchange
	var firstErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, firstErr = exchange(ctx, client, srv.URL, c, c.RequestID)
	}()
	for !isFile(hold + ".held") {
		select {
		case <-done:
			return nil, fmt.Errorf("case %q: answered (%v) before the worker held it: does the worker read %s?", c.Name, firstErr, EnvHold)
		case <-ctx.Done():
			return nil, fmt.Errorf("case %q: the worker never held the request: %w", c.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	var during []Exchange
	for _, w := range c.While {
		got, err := srv.send(ctx, client, w)
		if err != nil {
			return nil, err
		}
		during = append(during, got...)
	}
	release := "reply"
	if c.Garble {
		release = "garble"
	}
	// Written whole, then renamed: the worker never reads a half-written release.
	if err := os.WriteFile(hold+".release.tmp", []byte(release), 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(hold+".release.tmp", hold+".release"); err != nil {
		return nil, err
	}
	<-done
	if firstErr != nil {
		return nil, fmt.Errorf("case %q: %w", c.Name, firstErr)
	}
	return append([]Exchange{first}, during...), nil
}

// scratchFiles lists the files under dir, with their sha256 and, for JSON, contents.
func scratchFiles(dir string) ([]ScratchFile, error) {
	var out []ScratchFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f := ScratchFile{Path: filepath.ToSlash(rel), SHA256: fmt.Sprintf("%x", sha256.Sum256(b))}
		if strings.HasSuffix(p, ".json") {
			f.JSON = b
		}
		out = append(out, f)
		return nil
	})
	return out, err
}

func exchange(ctx context.Context, client *http.Client, base string, c ConformanceCase, id string) (Exchange, error) {
	req, err := http.NewRequestWithContext(ctx, c.Method, base+c.Path, bytes.NewReader(c.Body))
	if err != nil {
		return Exchange{}, err
	}
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	resp, err := client.Do(req)
	if err != nil {
		return Exchange{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return Exchange{Case: c.Name, RequestID: resp.Header.Get("X-Request-ID"), Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}

// Difference is one way the imitation answered a case otherwise than TRTMC's server.
type Difference struct {
	Case, Where   string
	Real, Imitate string
}

func (d Difference) String() string {
	return fmt.Sprintf("%s: %s: TRTMC's server %s, the imitation %s", d.Case, d.Where, d.Real, d.Imitate)
}

// KnownDifference is a difference the imitation keeps, and why; Where matches a
// Difference's Where exactly, or as a prefix when it ends in "*"; Case, when given,
// its case exactly.
type KnownDifference struct {
	Case, Where, Reason string
}

// ImitationDifferences are what the imitation answers otherwise than TRTMC's server, on
// purpose. The conformance test fails on any other difference, and on one of these it
// no longer finds.
var ImitationDifferences = []KnownDifference{
	{Where: "header server", Reason: "TRTMC's server is uvicorn, which names itself (server: uvicorn); the imitation is Go's net/http and does not claim to be uvicorn"},
	{Case: "serve --task qualkit_no_such_task", Where: "body $", Reason: "TRTMC's catalog looks the task up in its task table (task_adapters.py @ 0dd9052f § _DEFAULTS: \"task '...' has no benchmark implementation\"); the imitation holds no task table and serves only the legacy image_edit task, so it refuses any other task with its own message"},
}

// CompareExchanges lists every difference between TRTMC's exchanges and the imitation's,
// case by case in order: status, request id, headers, the body, each records line and
// each scratch file as JSON (keys in their order, numbers as spelled, the layout of the
// text), the other scratch files by their sha256.
func CompareExchanges(real, imitation []Exchange) []Difference {
	var out []Difference
	if len(real) != len(imitation) {
		return []Difference{{Case: "all", Where: "exchanges", Real: fmt.Sprint(len(real)), Imitate: fmt.Sprint(len(imitation))}}
	}
	// Requests sent at once may come back in either order: pair them by id.
	real, imitation = slices.Clone(real), slices.Clone(imitation)
	byID(real)
	byID(imitation)
	for i := range real {
		a, b := real[i], imitation[i]
		diff := func(where string, x, y any) {
			xs, ys := fmt.Sprint(x), fmt.Sprint(y)
			if xs != ys {
				out = append(out, Difference{Case: a.Case, Where: where, Real: xs, Imitate: ys})
			}
		}
		if a.Case != b.Case {
			diff("case", a.Case, b.Case)
			continue
		}
		diff("status", a.Status, b.Status)
		diff("x-request-id", idShape(a.RequestID), idShape(b.RequestID))
		for _, h := range headerNames(a.Header, b.Header) {
			diff("header "+h, headerShape(h, a.Header.Get(h)), headerShape(h, b.Header.Get(h)))
		}
		out = append(out, compareJSON(a.Case, "body", a.Body, b.Body, a.Paths, b.Paths)...)
		diff("records lines", len(a.Records), len(b.Records))
		for k := range min(len(a.Records), len(b.Records)) {
			out = append(out, compareJSON(a.Case, "records line", a.Records[k], b.Records[k], a.Paths, b.Paths)...)
		}
		names := func(fs []ScratchFile) string {
			var s []string
			for _, f := range fs {
				s = append(s, f.Path)
			}
			return strings.Join(s, " ")
		}
		diff("scratch", names(a.Scratch), names(b.Scratch))
		for _, fa := range a.Scratch {
			k := slices.IndexFunc(b.Scratch, func(f ScratchFile) bool { return f.Path == fa.Path })
			if k < 0 {
				continue
			}
			if fb := b.Scratch[k]; fa.JSON != nil && fb.JSON != nil {
				out = append(out, compareJSON(a.Case, "scratch "+fa.Path, fa.JSON, fb.JSON, a.Paths, b.Paths)...)
			} else {
				diff("scratch "+fa.Path+" sha256", fa.SHA256, fb.SHA256)
			}
		}
	}
	return out
}

// byID sorts each run of one case's exchanges by request id.
func byID(exs []Exchange) {
	for i := 0; i < len(exs); {
		j := i + 1
		for j < len(exs) && exs[j].Case == exs[i].Case {
			j++
		}
		slices.SortFunc(exs[i:j], func(a, b Exchange) int { return strings.Compare(a.RequestID, b.RequestID) })
		i = j
	}
}

// Unexplained is what of diffs no known difference explains, and the known differences
// none of diffs shows any more.
func Unexplained(diffs []Difference, known []KnownDifference) (unexplained []Difference, stale []KnownDifference) {
	seen := map[int]bool{}
	for _, d := range diffs {
		i := slices.IndexFunc(known, func(k KnownDifference) bool {
			where := k.Where == d.Where || strings.HasSuffix(k.Where, "*") && strings.HasPrefix(d.Where, strings.TrimSuffix(k.Where, "*"))
			return where && (k.Case == "" || k.Case == d.Case)
		})
		if i < 0 {
			unexplained = append(unexplained, d)
			continue
		}
		seen[i] = true
	}
	for i, k := range known {
		if !seen[i] {
			stale = append(stale, k)
		}
	}
	return unexplained, stale
}

// Plant is a difference EnvPlant can plant, and the differences the conformance test
// must find for it (Case "" for any case; Real and Imitate are not compared).
type Plant struct {
	Name  string
	Finds []Difference
}

// Plants are the differences the imitation can be made to have, one for each kind of
// check: a value, an object's key order, a number's spelling, the worker's session
// file, a header of the 429, the records' layout.
var Plants = []Plant{
	{"error-type", []Difference{{Where: "body $.error.type"}}}, // the imitation's old answer: the code
	{"key-order", []Difference{{Case: "health ready", Where: "body $"}}},
	{"number-spelling", []Difference{{Case: "serving info", Where: "body $.base_request.guidance_scale"},
		{Where: "scratch worker-session.json $.request.guidance_scale"}}}, // -1, not -1.0
	{"session-field", []Difference{{Where: "scratch worker-session.json $"}, {Where: "scratch worker-session.json $.case_name"}}},
	{"retry-after", []Difference{{Case: "an edit while the lane is busy (--max-queue 0)", Where: "header retry-after"}}},
	{"records-layout", []Difference{{Where: "records line layout"}}}, // Go's compact JSON
}

// PlantNames are the names of Plants.
func PlantNames() []string {
	var names []string
	for _, p := range Plants {
		names = append(names, p.Name)
	}
	return names
}

// CheckPlants holds the differences found with EnvPlant naming every plant to them:
// each plant's Finds not found (missed), and the differences no plant makes (other).
func CheckPlants(diffs []Difference, plants []Plant) (missed, other []Difference) {
	matches := func(f, d Difference) bool { return (f.Case == "" || f.Case == d.Case) && f.Where == d.Where }
	for _, p := range plants {
		for _, f := range p.Finds {
			if !slices.ContainsFunc(diffs, func(d Difference) bool { return matches(f, d) }) {
				missed = append(missed, Difference{Case: f.Case, Where: f.Where + " (plant " + p.Name + ")"})
			}
		}
	}
	for _, d := range diffs {
		if !slices.ContainsFunc(plants, func(p Plant) bool {
			return slices.ContainsFunc(p.Finds, func(f Difference) bool { return matches(f, d) })
		}) {
			other = append(other, d)
		}
	}
	return missed, other
}

// ignoredHeaders vary by run or are the transport's.
var ignoredHeaders = map[string]bool{"Date": true, "Content-Length": true}

func headerNames(a, b http.Header) []string {
	var names []string
	for _, h := range []http.Header{a, b} {
		for k := range h {
			if !ignoredHeaders[k] && !slices.Contains(names, strings.ToLower(k)) {
				names = append(names, strings.ToLower(k))
			}
		}
	}
	sort.Strings(names)
	return names
}

var serverTiming = regexp.MustCompile(`^model;dur=[0-9]+\.[0-9]{3}$`)

func headerShape(name, v string) string {
	switch {
	case v == "":
		return "(absent)"
	case name == "x-request-id":
		return idShape(v)
	case name == "server-timing" && serverTiming.MatchString(v):
		return "model;dur=<ms, 3 decimals>"
	}
	return v
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// idShape is a request id, or "<generated uuid4 hex>" for one the server made.
func idShape(id string) string {
	if generatedID.MatchString(id) {
		return "<generated uuid4 hex>"
	}
	return id
}

// volatile are the JSON keys whose values vary from run to run: compared by kind only
// (a number spelled as an integer or as a float, a string).
var volatile = map[string]bool{"queue_ms": true, "model_call_ms": true, "handler_ms": true, "runtime_e2e_wall_ms": true,
	"time": true, "load_ms": true, "created": true, "hostname": true, "inference_time_s": true}

// compareJSON lists the differences of two JSON documents, where (body, records line,
// a scratch file) and the JSON path of each: a value, or an object's keys in their
// order. A value absent under a present parent is a difference; under an absent parent,
// the parent says it. Documents equal so far are compared by their layout too (the
// whitespace between tokens, string escapes: what a client that reads bytes sees).
func compareJSON(c, where string, a, b []byte, pa, pb map[string]string) []Difference {
	sa, sb := jsonShape(a, pa), jsonShape(b, pb)
	if notJSON(sa) || notJSON(sb) { // text: compared whole
		if sa[0].value != sb[0].value {
			return []Difference{{Case: c, Where: where + " $", Real: sa[0].value, Imitate: sb[0].value}}
		}
		return nil
	}
	ia, ib := map[string]int{}, map[string]int{}
	for i, l := range sa {
		ia[l.path] = i
	}
	for i, l := range sb {
		ib[l.path] = i
	}
	var out []Difference
	report := func(path, x, y string) {
		out = append(out, Difference{Case: c, Where: strings.TrimSpace(where + " " + path), Real: x, Imitate: y})
	}
	for _, l := range sa {
		j, ok := ib[l.path]
		switch {
		case !ok:
			if _, parent := ib[l.parent]; parent {
				report(l.path, l.value, "(absent)")
			}
		case sb[j].value != l.value:
			report(l.path, l.value, sb[j].value)
		}
	}
	for _, l := range sb {
		if _, ok := ia[l.path]; !ok {
			if _, parent := ia[l.parent]; parent {
				report(l.path, "(absent)", l.value)
			}
		}
	}
	if len(out) == 0 {
		if x, y := jsonLayout(a), jsonLayout(b); x != y {
			report("layout", quoteClip(x, 300), quoteClip(y, 300))
		}
	}
	return out
}

// quoteClip is s quoted (its whitespace shown), cut after n bytes.
func quoteClip(s string, n int) string {
	if len(s) > n {
		return strconv.Quote(s[:n]) + "..."
	}
	return strconv.Quote(s)
}

// shapeLine is one line of a document's shape: a JSON path, its parent's, and its value.
type shapeLine struct{ path, parent, value string }

// jsonShape is a JSON document as lines in document order, read token by token so that
// nothing is lost to decoding: an object as its keys in their order, an array as its
// length, a number as spelled (4.0 is not 4), a string quoted; the volatile values as
// their kind, generated ids and paths by their shape, paths through paths (Exchange.Paths).
// A document that is no JSON is one line of its text.
func jsonShape(b []byte, paths map[string]string) []shapeLine {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out []shapeLine
	err := shapeValue(dec, "$", "", "", paths, &out)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			err = errors.New("extra data")
		}
	}
	if err != nil {
		return []shapeLine{{path: "$", value: notJSONPrefix + clip(b, 200)}}
	}
	return out
}

const notJSONPrefix = "not JSON: "

func notJSON(lines []shapeLine) bool {
	return len(lines) == 1 && strings.HasPrefix(lines[0].value, notJSONPrefix) && lines[0].parent == ""
}

func shapeValue(dec *json.Decoder, path, parent, key string, paths map[string]string, out *[]shapeLine) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	line := shapeLine{path: path, parent: parent}
	switch x := t.(type) {
	case json.Delim:
		i := len(*out)
		*out = append(*out, line)
		var keys []string
		n := 0
		for dec.More() {
			child := fmt.Sprintf("%s[%d]", path, n)
			ckey := ""
			if x == '{' {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				ckey = kt.(string)
				keys = append(keys, strconv.Quote(ckey))
				child = path + "." + ckey
			}
			if err := shapeValue(dec, child, path, ckey, paths, out); err != nil {
				return err
			}
			n++
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if x == '{' {
			(*out)[i].value = "{" + strings.Join(keys, ",") + "}"
		} else {
			(*out)[i].value = fmt.Sprintf("[%d items]", n)
		}
		return nil
	case json.Number:
		line.value = string(x)
		if volatile[key] {
			line.value = "<integer>"
			if strings.ContainsAny(string(x), ".eE") {
				line.value = "<float>"
			}
		}
	case string:
		switch {
		case volatile[key]:
			line.value = "<string>"
		case key == "id" || key == "request_id":
			line.value = strconv.Quote(idShape(x))
		default:
			line.value = strconv.Quote(normalisePaths(x, paths))
		}
	default: // bool, nil
		line.value = fmt.Sprint(x)
		if x == nil {
			line.value = "null"
		}
	}
	*out = append(*out, line)
	return nil
}

// generatedPaths are scratch paths named by a generated request id.
var generatedPaths = regexp.MustCompile(`/[0-9a-f]{32}/`)

// normalisePaths names the paths in s as paths says (the longest first, each only as a
// whole path or its prefix: /src is not in /usr/src or /srcs), and scratch folders
// named by a generated id by their shape.
func normalisePaths(s string, paths map[string]string) string {
	from := slices.Collect(maps.Keys(paths))
	slices.SortFunc(from, func(a, b string) int { return len(b) - len(a) })
	inPath := func(c byte) bool {
		return c == '/' || c == '.' || c == '_' || c == '-' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
	}
	var out strings.Builder
	for i := 0; i < len(s); {
		k := -1
		if i == 0 || !inPath(s[i-1]) {
			k = slices.IndexFunc(from, func(f string) bool {
				end := i + len(f)
				return strings.HasPrefix(s[i:], f) && (end == len(s) || s[end] == '/' || !inPath(s[end]))
			})
		}
		if k < 0 {
			out.WriteByte(s[i])
			i++
			continue
		}
		out.WriteString(paths[from[k]])
		i += len(from[k])
	}
	return generatedPaths.ReplaceAllString(out.String(), "/<generated uuid4 hex>/")
}

// jsonLayout is a JSON text without what its tokens say: the whitespace and punctuation
// between them, each string as its quotes and escapes ("\u00e9" where Python's
// ensure_ascii escapes, "" where Go writes é), a number or literal as "#".
func jsonLayout(b []byte) string {
	var out strings.Builder
	inString, number := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			n := 2
			if i+1 < len(b) && b[i+1] == 'u' {
				n = 6
			}
			out.Write(b[i:min(i+n, len(b))])
			i += n - 1
		case c == '"':
			inString = !inString
			out.WriteByte(c)
			number = false
		case inString:
		case strings.IndexByte("{}[],: \t\r\n", c) >= 0:
			out.WriteByte(c)
			number = false
		case !number:
			out.WriteByte('#')
			number = true
		}
	}
	return out.String()
}
