package trtmcdouble

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// The conformance of the double's Go imitation of trtmc-perf-serve (perfserve.go) to
// TRTMC's own server: the same requests, good and bad, sent to each, and what came back
// compared, status, body, headers, records line and scratch layout, with the values
// that vary from run to run (timings, clocks, generated ids) compared by shape only.
// qual's TestPerfServeConformance runs both servers, in the double's image, with the
// double's worker and bundle; the comparison and the cases are here, where unit tests
// hold them.

// ConformanceCase is one exchange with a server: a request, or several sent at once.
type ConformanceCase struct {
	Name      string
	Method    string
	Path      string
	RequestID string // the X-Request-ID header; "" sends none
	Body      []byte
	// Together sends the request this many times at once (ids suffixed -0, -1, ...).
	Together int
}

// Exchange is what one request of a case came back with, and what the server wrote for it.
type Exchange struct {
	Case      string
	RequestID string // the id the server answered with (X-Request-ID)
	Status    int
	Header    http.Header
	Body      []byte
	Records   []json.RawMessage // records lines of this request id
	Scratch   []string          // files under <scratch>/<request id>/, relative
}

// ConformanceCases are the exchanges both servers get, in order: the read routes, edits
// with and without latent replay, every refusal of the task route in app.py @ 3878755c's
// order, $file inputs in a list, a large input, two requests at once, the OpenAI images
// route, and the routes no handler serves. image is a PNG or JPEG reference image.
func ConformanceCases(image []byte) []ConformanceCase {
	file := func(b []byte) map[string]any {
		return map[string]any{"$file": map[string]any{"suffix": ".png", "b64": base64.StdEncoding.EncodeToString(b)}}
	}
	request := func(extra map[string]any) map[string]any {
		r := map[string]any{"prompt": "Repaint it in soft watercolors.", "image_path": file(image),
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
	body := func(v any) []byte {
		b, _ := json.Marshal(v)
		return b
	}
	task := "/v1/tasks/generate_image"
	post := func(name, id string, b []byte) ConformanceCase {
		return ConformanceCase{Name: name, Method: http.MethodPost, Path: task, RequestID: id, Body: b}
	}
	get := func(name, path string) ConformanceCase {
		return ConformanceCase{Name: name, Method: http.MethodGet, Path: path}
	}
	big := make([]byte, 24<<20)
	for i := range big {
		big[i] = byte(i * 31)
	}
	return []ConformanceCase{
		get("health live", "/health/live"),
		get("health ready", "/health/ready"),
		get("models", "/v1/models"),
		get("serving info", "/v1/serving/info"),
		post("edit with latent_seed", "conf-edit-latents", body(map[string]any{"request": request(map[string]any{"latent_seed": 42})})),
		post("edit", "conf-edit", body(map[string]any{"request": request(nil)})),
		post("edit with a model key", "conf-edit-model", body(map[string]any{"model": "anything", "request": request(nil)})),
		post("edit with an unknown request field", "conf-edit-unknown", body(map[string]any{"request": request(map[string]any{"qualkit_unknown": 1})})),
		post("edit with $file inputs in a list", "conf-edit-list", body(map[string]any{"request": request(map[string]any{"reference_paths": []any{file(image), file(image)}})})),
		post("a request id that is no id", "../not an id", body(map[string]any{"request": request(nil)})),
		post("no request id", "", body(map[string]any{"request": request(nil)})),
		post("latent_seed not an integer", "conf-bad-latent-seed", body(map[string]any{"request": request(map[string]any{"latent_seed": "forty-two"})})),
		post("image_path as a server path", "conf-server-path", body(map[string]any{"request": request(map[string]any{"image_path": "/etc/passwd"})})),
		post("an unknown body field", "conf-body-field", body(map[string]any{"request": request(nil), "extra": 1})),
		post("request not an object", "conf-request-list", body(map[string]any{"request": []int{1}})),
		post("$file with a sibling", "conf-file-sibling", body(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": file(image)["$file"], "x": 1}})})),
		post("$file without b64", "conf-file-no-b64", body(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".png"}}})})),
		post("$file with a long suffix", "conf-file-suffix", body(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".12345678901234567", "b64": "AA=="}}})})),
		post("$file with bad base64", "conf-file-base64", body(map[string]any{"request": request(map[string]any{"image_path": map[string]any{"$file": map[string]any{"suffix": ".png", "b64": "not base64!"}}})})),
		post("a body that is not JSON", "conf-not-json", []byte("not json")),
		{Name: "another operation", Method: http.MethodPost, Path: "/v1/tasks/embed", RequestID: "conf-other-operation", Body: body(map[string]any{"request": request(nil)})},
		post("a 24 MiB input that is no image", "conf-large", body(map[string]any{"request": request(map[string]any{"image_path": file(big)})})),
		{Name: "two edits at once", Method: http.MethodPost, Path: task, RequestID: "conf-together", Body: body(map[string]any{"request": request(nil)}), Together: 2},
		{Name: "the OpenAI images route", Method: http.MethodPost, Path: "/v1/images/generations", RequestID: "conf-openai",
			Body: body(map[string]any{"prompt": "A watercolor house.", "size": "1024x1024", "seed": 7, "num_inference_steps": 20})},
		{Name: "the OpenAI images route with an unknown field", Method: http.MethodPost, Path: "/v1/images/generations", RequestID: "conf-openai-field",
			Body: body(map[string]any{"prompt": "A watercolor house.", "image": "x"})},
		{Name: "GET on the task route", Method: http.MethodGet, Path: task},
		get("an unknown route", "/qualkit/unknown"),
	}
}

// RunConformance sends the cases to the server at base, one after the other (the
// requests of a Together case at once), and reads, for each request, the records lines
// and scratch files the server wrote for its id.
func RunConformance(ctx context.Context, base, records, scratch string, cases []ConformanceCase) ([]Exchange, error) {
	client := &http.Client{Timeout: 5 * time.Minute}
	var out []Exchange
	for _, c := range cases {
		n := max(c.Together, 1)
		got := make([]Exchange, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			id := c.RequestID
			if c.Together > 1 {
				id = fmt.Sprintf("%s-%d", c.RequestID, i)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], errs[i] = exchange(ctx, client, base, c, id)
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				return nil, fmt.Errorf("case %q: %w", c.Name, errs[i])
			}
		}
		out = append(out, got...)
	}
	lines, err := os.ReadFile(records)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for i := range out {
		ex := &out[i]
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
		dir := filepath.Join(scratch, ex.RequestID)
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				ex.Scratch = append(ex.Scratch, filepath.ToSlash(rel))
			}
			return nil
		})
	}
	return out, nil
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
// Difference's Where exactly, or as a prefix when it ends in "*".
type KnownDifference struct {
	Where, Reason string
}

// ImitationDifferences are what the imitation answers otherwise than TRTMC's server, on
// purpose. The conformance test fails on any other difference, and on one of these it
// no longer finds.
var ImitationDifferences = []KnownDifference{
	{"header server", "TRTMC's server is uvicorn, which names itself (server: uvicorn); the imitation is Go's net/http and does not claim to be uvicorn"},
}

// CompareExchanges lists every difference between TRTMC's exchanges and the imitation's,
// case by case in order.
func CompareExchanges(real, imitation []Exchange) []Difference {
	var out []Difference
	if len(real) != len(imitation) {
		return []Difference{{Case: "all", Where: "exchanges", Real: fmt.Sprint(len(real)), Imitate: fmt.Sprint(len(imitation))}}
	}
	// Requests sent at once may come back in either order: pair them by id.
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
		diff("status", a.Status, b.Status)
		diff("x-request-id", idShape(a.RequestID), idShape(b.RequestID))
		for _, h := range headerNames(a.Header, b.Header) {
			diff("header "+h, headerShape(h, a.Header.Get(h)), headerShape(h, b.Header.Get(h)))
		}
		diff("body", jsonShape(a.Body), jsonShape(b.Body))
		diff("records lines", len(a.Records), len(b.Records))
		for k := range min(len(a.Records), len(b.Records)) {
			diff("records line", jsonShape(a.Records[k]), jsonShape(b.Records[k]))
		}
		diff("scratch", strings.Join(a.Scratch, " "), strings.Join(b.Scratch, " "))
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
			return k.Where == d.Where || strings.HasSuffix(k.Where, "*") && strings.HasPrefix(d.Where, strings.TrimSuffix(k.Where, "*"))
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

// volatile are the JSON keys whose values vary from run to run: compared by type only.
var volatile = map[string]bool{"queue_ms": true, "model_call_ms": true, "handler_ms": true, "runtime_e2e_wall_ms": true,
	"time": true, "load_ms": true, "created": true, "hostname": true, "inference_time_s": true}

// jsonShape renders a JSON document with sorted keys, numbers as float64, the volatile
// values as their type, and generated ids as their shape; a body that is no JSON as is.
func jsonShape(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "not JSON: " + clip(b, 200)
	}
	out, _ := json.Marshal(shape("", v))
	return string(out)
}

func shape(key string, v any) any {
	if volatile[key] {
		switch v.(type) {
		case float64:
			return "<number>"
		case string:
			return "<string>"
		}
	}
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, val := range x {
			m[k] = shape(k, val)
		}
		return m
	case []any:
		for i := range x {
			x[i] = shape("", x[i])
		}
		return x
	case string:
		if key == "id" || key == "request_id" {
			return idShape(x)
		}
		return generatedPaths.ReplaceAllString(x, "/<generated uuid4 hex>/")
	}
	return v
}

// generatedPaths are scratch paths named by a generated request id.
var generatedPaths = regexp.MustCompile(`/[0-9a-f]{32}/`)
