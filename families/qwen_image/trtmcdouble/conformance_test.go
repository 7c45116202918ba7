package trtmcdouble

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conformancePair is an exchange as both servers answered it: a success with its
// headers, records line and scratch files, the worker's session among them.
func conformancePair() Exchange {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Request-ID", "conf-edit")
	h.Set("Server-Timing", "model;dur=132.500")
	h.Set("Date", "Sat, 05 Dec 2026 17:37:12 GMT")
	return Exchange{Case: "edit", RequestID: "conf-edit", Status: 200, Header: h,
		Body:    []byte(`{"id":"conf-edit","object":"task.result","trtmc_timing":{"queue_ms":0.0055,"model_call_ms":132.5},"trtmc_observation":{"height":1024,"cfg":4.0,"artifact":"/conf/scratch/conf-edit/output.image.1.0.png"}}`),
		Records: []json.RawMessage{[]byte(`{"request_id": "conf-edit", "time": 1796492228.7580285, "observation": {"height": 1024}}`)},
		Scratch: []ScratchFile{{Path: "inputs/input-0000.png", SHA256: "aa"},
			{Path: "worker-session.json", SHA256: "bb", JSON: []byte("{\n  \"schema_version\": 2,\n  \"case_name\": \"qwen-image-edit-2511\",\n  \"request\": {\n    \"guidance_scale\": -1.0\n  }\n}")}}}
}

// clone is a deep enough copy of an exchange to change one part of it.
func (ex Exchange) clone() Exchange {
	c := ex
	c.Header = ex.Header.Clone()
	c.Records = slices.Clone(ex.Records)
	c.Scratch = slices.Clone(ex.Scratch)
	return c
}

// Every kind of difference is found, named where it is; what varies by run (timings,
// clocks, generated ids, the date) is not one.
func TestCompareExchanges(t *testing.T) {
	sub := func(b []byte, old, new string) []byte {
		require.Contains(t, string(b), old)
		return []byte(strings.Replace(string(b), old, new, 1))
	}
	cases := []struct {
		name   string
		change func(*Exchange)
		where  []string // nil: no difference
	}{
		{"the same", func(*Exchange) {}, nil},
		{"other timings, clock and date", func(e *Exchange) {
			e.Body = sub(e.Body, `"queue_ms":0.0055`, `"queue_ms":8.8`)
			e.Records[0] = sub(e.Records[0], "1796492228.7580285", "1796492239.1")
			e.Header.Set("Server-Timing", "model;dur=9.000")
			e.Header.Set("Date", "Sun, 06 Dec 2026 10:00:00 GMT")
		}, nil},
		{"status", func(e *Exchange) { e.Status = 201 }, []string{"status"}},
		{"a header missing", func(e *Exchange) { e.Header.Del("Server-Timing") }, []string{"header server-timing"}},
		{"a header added", func(e *Exchange) { e.Header.Set("Retry-After", "1") }, []string{"header retry-after"}},
		{"a header's value", func(e *Exchange) { e.Header.Set("Content-Type", "text/plain") }, []string{"header content-type"}},
		{"server-timing not to the millisecond", func(e *Exchange) { e.Header.Set("Server-Timing", "model;dur=132.5") }, []string{"header server-timing"}},
		{"another request id", func(e *Exchange) { e.RequestID = "conf-other"; e.Header.Set("X-Request-ID", "conf-other") }, []string{"x-request-id", "header x-request-id"}},
		{"a body value", func(e *Exchange) { e.Body = sub(e.Body, `"task.result"`, `"task"`) }, []string{"body $.object"}},
		{"a body key missing", func(e *Exchange) { e.Body = sub(e.Body, `"object":"task.result",`, ``) }, []string{"body $", "body $.object"}},
		{"a body key added", func(e *Exchange) { e.Body = sub(e.Body, `"object"`, `"extra":1,"object"`) }, []string{"body $", "body $.extra"}},
		{"a subtree missing is named once", func(e *Exchange) {
			e.Body = sub(e.Body, `,"trtmc_timing":{"queue_ms":0.0055,"model_call_ms":132.5}`, ``)
		}, []string{"body $", "body $.trtmc_timing"}},
		{"key order", func(e *Exchange) {
			e.Body = sub(e.Body, `"id":"conf-edit","object":"task.result"`, `"object":"task.result","id":"conf-edit"`)
		}, []string{"body $"}},
		{"a number's spelling", func(e *Exchange) { e.Body = sub(e.Body, `"cfg":4.0`, `"cfg":4`) }, []string{"body $.trtmc_observation.cfg"}},
		{"an integer for a float timing", func(e *Exchange) { e.Body = sub(e.Body, `"model_call_ms":132.5`, `"model_call_ms":132`) }, []string{"body $.trtmc_timing.model_call_ms"}},
		{"a number for a string", func(e *Exchange) { e.Body = sub(e.Body, `"height":1024`, `"height":"1024"`) }, []string{"body $.trtmc_observation.height"}},
		{"the body's layout", func(e *Exchange) { e.Body = sub(e.Body, `"object":`, `"object": `) }, []string{"body layout"}},
		{"a trailing newline", func(e *Exchange) { e.Body = append(e.Body, '\n') }, []string{"body layout"}},
		{"a body that is no JSON", func(e *Exchange) { e.Body = []byte("Internal Server Error") }, []string{"body $"}},
		{"a records line missing", func(e *Exchange) { e.Records = nil }, []string{"records lines"}},
		{"a records line's value", func(e *Exchange) { e.Records[0] = sub(e.Records[0], `"height": 1024`, `"height": 512`) }, []string{"records line $.observation.height"}},
		{"a records line's layout (Go's compact JSON)", func(e *Exchange) {
			e.Records[0] = sub(e.Records[0], `{"request_id": "conf-edit", "time": `, `{"request_id":"conf-edit","time":`)
		}, []string{"records line layout"}},
		{"non-ASCII not escaped", func(e *Exchange) {
			e.Records[0] = sub(e.Records[0], `"conf-edit"`, `"conf-edit\u00e9"`)
			e.RequestID, e.Records[0] = "conf-edit", sub(e.Records[0], `\u00e9`, "é")
		}, []string{"records line $.request_id"}},
		{"a scratch file missing", func(e *Exchange) { e.Scratch = e.Scratch[1:] }, []string{"scratch"}},
		{"a scratch file's bytes", func(e *Exchange) { e.Scratch[0].SHA256 = "cc" }, []string{"scratch inputs/input-0000.png sha256"}},
		{"a session file field missing", func(e *Exchange) {
			e.Scratch[1].JSON = sub(e.Scratch[1].JSON, "\n  \"case_name\": \"qwen-image-edit-2511\",", "")
		}, []string{"scratch worker-session.json $", "scratch worker-session.json $.case_name"}},
		{"a session file value", func(e *Exchange) { e.Scratch[1].JSON = sub(e.Scratch[1].JSON, "-1.0", "-1") }, []string{"scratch worker-session.json $.request.guidance_scale"}},
		{"a session file's layout", func(e *Exchange) { e.Scratch[1].JSON = sub(e.Scratch[1].JSON, "\n    \"guidance", "\n  \"guidance") }, []string{"scratch worker-session.json layout"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			real, imitation := conformancePair(), conformancePair().clone()
			c.change(&imitation)
			var got []string
			for _, d := range CompareExchanges([]Exchange{real}, []Exchange{imitation}) {
				assert.Equal(t, "edit", d.Case)
				assert.NotEqual(t, d.Real, d.Imitate, d.String())
				got = append(got, d.Where)
			}
			assert.ElementsMatch(t, c.where, got)
		})
	}
}

// The ASCII escapes Python writes are the layout's, not the value's: "\u00e9" and "é"
// are one string, in another layout.
func TestCompareExchangesEnsureASCII(t *testing.T) {
	real, imitation := conformancePair(), conformancePair().clone()
	real.Records[0] = []byte(`{"prompt": "caf\u00e9"}`)
	imitation.Records[0] = []byte(`{"prompt": "café"}`)
	diffs := CompareExchanges([]Exchange{real}, []Exchange{imitation})
	require.Len(t, diffs, 1)
	assert.Equal(t, "records line layout", diffs[0].Where)
	assert.Equal(t, `"{\"\": \"\\u00e9\"}"`, diffs[0].Real)
	assert.Equal(t, `"{\"\": \"\"}"`, diffs[0].Imitate)
}

// Paths are compared by the names each server's Paths gives them, and scratch folders of
// generated ids by their shape; without a name, another place is a difference.
func TestCompareExchangesPaths(t *testing.T) {
	real, imitation := conformancePair(), conformancePair().clone()
	imitation.Body = []byte(strings.Replace(string(real.Body), "/conf/scratch/conf-edit", "/elsewhere/scratch/conf-edit", 1))
	assert.Equal(t, []string{"body $.trtmc_observation.artifact"}, wheres(CompareExchanges([]Exchange{real}, []Exchange{imitation})))
	real.Paths = map[string]string{"/conf/scratch": "<scratch>", "/conf": "<conf>"}
	imitation.Paths = map[string]string{"/elsewhere/scratch": "<scratch>"}
	assert.Empty(t, CompareExchanges([]Exchange{real}, []Exchange{imitation}))

	real.Body = []byte(`{"id":"0123456789abcdef0123456789abcdef","artifact":"/s/0123456789abcdef0123456789abcdef/output.png"}`)
	imitation.Body = []byte(`{"id":"fedcba9876543210fedcba9876543210","artifact":"/s/fedcba9876543210fedcba9876543210/output.png"}`)
	assert.Empty(t, CompareExchanges([]Exchange{real}, []Exchange{imitation}), "generated ids compare by shape")
	imitation.Body = []byte(`{"id":"conf-1","artifact":"/s/fedcba9876543210fedcba9876543210/output.png"}`)
	assert.Equal(t, []string{"body $.id"}, wheres(CompareExchanges([]Exchange{real}, []Exchange{imitation})))
}

func wheres(diffs []Difference) []string {
	var out []string
	for _, d := range diffs {
		out = append(out, d.Where)
	}
	return out
}

// Exchanges are paired in order; a run of one case's exchanges (requests sent at once)
// by request id, whatever order they came back in; a missing exchange or another case
// in its place is a difference, not a shifted comparison.
func TestCompareExchangesPairing(t *testing.T) {
	ex := func(c, id string, status int) Exchange {
		return Exchange{Case: c, RequestID: id, Status: status, Body: []byte(`{}`)}
	}
	real := []Exchange{ex("one", "a", 200), ex("two at once", "t-0", 200), ex("two at once", "t-1", 429), ex("last", "z", 404)}
	imitation := []Exchange{ex("one", "a", 200), ex("two at once", "t-1", 429), ex("two at once", "t-0", 200), ex("last", "z", 404)}
	assert.Empty(t, CompareExchanges(real, imitation))
	assert.Equal(t, "two at once", imitation[1].Case, "the caller's slices keep their order")
	assert.Equal(t, "t-1", imitation[1].RequestID)

	imitation[2].Status = 500
	assert.Equal(t, []Difference{{Case: "two at once", Where: "status", Real: "200", Imitate: "500"}}, CompareExchanges(real, imitation))
	assert.Equal(t, []Difference{{Case: "all", Where: "exchanges", Real: "4", Imitate: "3"}}, CompareExchanges(real, imitation[:3]))
	swapped := slices.Clone(real)
	swapped[0], swapped[3] = swapped[3], swapped[0]
	assert.Equal(t, []string{"case", "case"}, wheres(CompareExchanges(real, swapped)))
}

func TestByID(t *testing.T) {
	exs := []Exchange{{Case: "a", RequestID: "2"}, {Case: "a", RequestID: "1"}, {Case: "b", RequestID: "0"}, {Case: "a", RequestID: "0"}}
	byID(exs)
	var got []string
	for _, e := range exs {
		got = append(got, e.Case+e.RequestID)
	}
	assert.Equal(t, []string{"a1", "a2", "b0", "a0"}, got, "each run of a case sorted by id, the runs kept apart")
}

func TestUnexplained(t *testing.T) {
	known := []KnownDifference{{Where: "header server", Reason: "uvicorn names itself"}, {Where: "body $.platform*", Reason: "a prefix"},
		{Case: "serve --task x", Where: "body $", Reason: "one case only"}, {Where: "records line layout", Reason: "gone since"}}
	diffs := []Difference{
		{Case: "edit", Where: "header server"},
		{Case: "info", Where: "body $.platform.torch"},
		{Case: "info", Where: "body $.platforms"},
		{Case: "edit", Where: "body $.error.type"},
		{Case: "edit", Where: "header server-timing"},
		{Case: "serve --task x", Where: "body $"},
		{Case: "serve --set y", Where: "body $"},
	}
	unexplained, stale := Unexplained(diffs, known)
	assert.Equal(t, []Difference{{Case: "edit", Where: "body $.error.type"}, {Case: "edit", Where: "header server-timing"}, {Case: "serve --set y", Where: "body $"}}, unexplained,
		"only an exact Where, or a prefix ending in *, and the Case when one is given, explains a difference")
	assert.Equal(t, []KnownDifference{{Where: "records line layout", Reason: "gone since"}}, stale, "a listed difference no longer seen is reported")

	unexplained, stale = Unexplained(nil, known)
	assert.Empty(t, unexplained)
	assert.Len(t, stale, 4)
}

func TestJSONShape(t *testing.T) {
	lines := func(b string) []string {
		var out []string
		for _, l := range jsonShape([]byte(b), map[string]string{"/conf/scratch": "<scratch>"}) {
			out = append(out, l.path+" "+l.value)
		}
		return out
	}
	assert.Equal(t, []string{`$ {"b","a","queue_ms","time","id","p"}`, "$.b [2 items]", "$.b[0] 4.0", "$.b[1] 1e-05",
		`$.a {"x"}`, "$.a.x null", "$.queue_ms <float>", "$.time <integer>", `$.id "<generated uuid4 hex>"`,
		`$.p "<scratch>/<generated uuid4 hex>/output.png"`},
		lines(`{"b":[4.0,1e-05],"a":{"x":null},"queue_ms":0.004,"time":17,"id":"0123456789abcdef0123456789abcdef","p":"/conf/scratch/0123456789abcdef0123456789abcdef/output.png"}`))
	assert.Equal(t, []string{"$ not JSON: {\"a\":1} {}"}, lines(`{"a":1} {}`))
	assert.Equal(t, []string{`$ "<scratch>/x /usr/conf/scratch/y <scratch>"`, `$ "/conf/scratchy"`}, append(lines(`"/conf/scratch/x /usr/conf/scratch/y /conf/scratch"`), lines(`"/conf/scratchy"`)...),
		"a path is named whole, not inside another")
	assert.Equal(t, []string{"$ not JSON: "}, lines(``))
}

// A plant not found is missed; a difference no plant makes is other.
func TestCheckPlants(t *testing.T) {
	plants := []Plant{{"a", []Difference{{Where: "body $.error.type"}}}, {"b", []Difference{{Case: "health ready", Where: "body $"}}}}
	diffs := []Difference{{Case: "x", Where: "body $.error.type"}, {Case: "y", Where: "body $.error.type"}, {Case: "health ready", Where: "body $"}}
	missed, other := CheckPlants(diffs, plants)
	assert.Empty(t, missed)
	assert.Empty(t, other)
	missed, other = CheckPlants(append(diffs[:2:2], Difference{Case: "models", Where: "body $"}), plants)
	assert.Equal(t, []Difference{{Case: "health ready", Where: "body $ (plant b)"}}, missed)
	assert.Equal(t, []Difference{{Case: "models", Where: "body $"}}, other)
	assert.Equal(t, []string{"error-type", "key-order", "number-spelling", "session-field", "retry-after", "records-layout"}, PlantNames())
}

// RunConformance against a stand-in server with a stand-in worker that holds what the
// test asks it to (EnvHold's files): a held request, a request sent while it is held, a
// garbled one, two at once; the records lines and scratch files each request wrote, and
// the worker's folder last.
func TestRunConformance(t *testing.T) {
	dir := t.TempDir()
	srv := ConformanceServer{Name: "stand-in", Records: filepath.Join(dir, "records.jsonl"), Scratch: filepath.Join(dir, "scratch"), Hold: filepath.Join(dir, "hold")}
	require.NoError(t, os.MkdirAll(srv.Hold, 0o755))
	writeFile(t, filepath.Join(srv.Scratch, "_worker", "worker-session.json"), `{"case_name": "c"}`)
	var mu sync.Mutex
	busy := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-ID")
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		if busy {
			mu.Unlock()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		mu.Unlock()
		// No require here: this is the server's goroutine; a failure is a 500 the test sees.
		fail := func(err error) bool {
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
			}
			return err != nil
		}
		input := filepath.Join(srv.Scratch, id, "inputs", "input-0000.png")
		if fail(os.MkdirAll(filepath.Dir(input), 0o755)) || fail(os.WriteFile(input, []byte(id), 0o644)) {
			return
		}
		release := ""
		if base := filepath.Join(srv.Hold, id); isFile(base + ".hold") {
			mu.Lock()
			busy = true // the lane is taken while the worker holds the request
			mu.Unlock()
			if fail(os.WriteFile(base+".held", nil, 0o644)) {
				return
			}
			for !isFile(base + ".release") {
				time.Sleep(time.Millisecond)
			}
			b, _ := os.ReadFile(base + ".release")
			release = string(b)
			mu.Lock()
			busy = false
			mu.Unlock()
		}
		if release == "garble" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		f, err := os.OpenFile(srv.Records, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if fail(err) {
			return
		}
		fmt.Fprintf(f, "{\"request_id\": %q}\n", id)
		f.Close()
		w.Header().Set("X-Request-ID", id)
		fmt.Fprintf(w, `{"id":%q}`, id)
	}))
	defer ts.Close()
	srv.URL = ts.URL
	held := postCase("held", "h", []byte(`{}`))
	held.Hold, held.While = true, []ConformanceCase{postCase("while held", "w", []byte(`{}`))}
	garbled := postCase("garbled", "g", []byte(`{}`))
	garbled.Hold, garbled.Garble = true, true
	together := postCase("together", "t", []byte(`{}`))
	together.Together = 2
	cases := []ConformanceCase{held, garbled, together, postCase("after", "a", []byte(`{}`))}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got, err := RunConformance(ctx, srv, cases)
	require.NoError(t, err)
	var summary []string
	for _, e := range got {
		summary = append(summary, fmt.Sprintf("%s %s %d records=%d scratch=%d", e.Case, e.RequestID, e.Status, len(e.Records), len(e.Scratch)))
	}
	assert.Equal(t, []string{"held h 200 records=1 scratch=1", "while held  429 records=0 scratch=0", "garbled  503 records=0 scratch=0",
		"together t-0 200 records=1 scratch=1", "together t-1 200 records=1 scratch=1", "after a 200 records=1 scratch=1",
		"the worker's folder <scratch>/_worker (stand-in)  0 records=0 scratch=1"}, summary,
		"the second request went while the first was held (429); the held one answered after it")
	assert.Equal(t, `{"case_name": "c"}`, string(got[6].JSONFile(t, "worker-session.json")))

	// Without a hold folder, a held case is an error that says what is missing.
	srv.Hold = ""
	_, err = RunConformance(ctx, srv, []ConformanceCase{held})
	require.ErrorContains(t, err, EnvHold)
}

// JSONFile is the contents of the exchange's JSON scratch file at path.
func (ex Exchange) JSONFile(t *testing.T, path string) []byte {
	t.Helper()
	for _, f := range ex.Scratch {
		if f.Path == path {
			return f.JSON
		}
	}
	t.Fatalf("no scratch file %s in %v", path, ex.Scratch)
	return nil
}
