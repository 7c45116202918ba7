package trtmcdouble

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// trtmc-perf-serve, as TRTMC's sources define it: `python -m trtmc_perf_serving serve`
// (apps/perf_serving/trtmc_perf_serving/cli.py @ 3878755c) loads the profile's base
// request from the family's manifest, starts the persistent worker (`--worker` with
// --serve SESSION.json, backends/trtmc.py @ 7b798a32), then serves POST
// /v1/tasks/{operation} (app.py @ 3878755c § task): the body {"request": {...}} merged
// over the base request, $file inputs written under <scratch>/<request id>/inputs/, the
// worker's PNG at <scratch>/<request id>/output.image.1.<n>.png, kept only with
// --keep-artifacts; one JSON line per successful request in --records.

var perfServeParser = newOptParser(true,
	opt{"--profile", true}, opt{"--testcase", true}, opt{"--operation", true}, opt{"--task", true},
	opt{"--manifest-root", true}, opt{"--set", true},
	opt{"--backend", true}, opt{"--bundle", true}, opt{"--runtime-root", true}, opt{"--worker", true},
	opt{"--mode", true}, opt{"--precision", true}, opt{"--reference-model", true}, opt{"--reference-revision", true},
	opt{"--revision", true}, opt{"--reference-options", true}, opt{"--reference-adapter", true},
	opt{"--latent-replay-adapter", true}, opt{"--trust-remote-code", false}, opt{"--deterministic", false},
	opt{"--model-name", true}, opt{"--host", true}, opt{"--port", true},
	opt{"--records", true}, opt{"--scratch", true}, opt{"--max-queue", true},
	opt{"--keep-artifacts", false}, opt{"--memory-probe", false}, opt{"--isolate-requests", false},
	opt{"--full-observations", false}, opt{"--request-timeout", true},
	opt{"--help|-h", false},
)

const perfServeUsage = `usage: trtmc-perf-serve serve [-h] --profile PROFILE [--testcase TESTCASE]
                             [--operation OPERATION] [--task TASK]
                             [--manifest-root MANIFEST_ROOT] [--set FIELD=VALUE]
                             --backend {trtmc,reference} [--bundle BUNDLE]
                             [--runtime-root RUNTIME_ROOT] [--worker WORKER]
                             [--mode {eager,compile}] [--precision {fp16,bf16,fp32}]
                             [--model-name MODEL_NAME] [--host HOST] [--port PORT]
                             --records RECORDS --scratch SCRATCH
                             [--max-queue MAX_QUEUE] [--keep-artifacts]
                             [--memory-probe] [--isolate-requests]
                             [--full-observations]
                             [--request-timeout REQUEST_TIMEOUT]`

const perfServeHelp = perfServeUsage + `

Serve one profile's operation over HTTP (qualkit contract double: the trtmc backend
only, its worker the double's trtmc_benchmark_worker; no GPU, no TensorRT)

options:
  --profile PROFILE  --testcase TESTCASE  --operation OPERATION  --task TASK
  --manifest-root MANIFEST_ROOT (default families)  --set FIELD=VALUE
  --backend {trtmc,reference}  --bundle BUNDLE  --runtime-root RUNTIME_ROOT  --worker WORKER
  --model-name MODEL_NAME  --host HOST (default 127.0.0.1)  --port PORT (default 8000)
  --records RECORDS  --scratch SCRATCH  --max-queue MAX_QUEUE (default 64)
  --keep-artifacts  --memory-probe  --isolate-requests  --full-observations
  --request-timeout REQUEST_TIMEOUT (default 900.0)`

// perfServeConfig is a parsed serve command line.
type perfServeConfig struct {
	profile, manifestRoot, backend, bundle, runtimeRoot, worker string
	modelName, host, records, scratch                           string
	port, maxQueue                                              int
	keepArtifacts, fullObservations                             bool
	requestTimeout                                              float64
}

// perfServeMain plays `python -m trtmc_perf_serving ARGS`: the serve subcommand.
func perfServeMain(p *proc, args []string) int {
	fail := func(code int, format string, a ...any) int {
		return p.fail(code, "%s\ntrtmc-perf-serve serve: error: %s", perfServeUsage, fmt.Sprintf(format, a...))
	}
	if len(args) == 0 || args[0] != "serve" {
		return p.fail(exitUsage, "usage: trtmc-perf-serve [-h] {serve,payload,reference-env,platform} ...\ntrtmc-perf-serve: error: the qualkit contract double plays only the serve subcommand")
	}
	a, err := perfServeParser.parse(args[1:])
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return fail(exitUsage, "argument %s: expected one argument", mv.flag)
	case a.has("--help"):
		fmt.Fprintln(p.stdout, perfServeHelp)
		return exitOK
	case len(a.unknown) > 0 || len(a.pos) > 0:
		return p.fail(exitUsage, "%s\ntrtmc-perf-serve: error: unrecognized arguments: %s", perfServeUsage, strings.Join(append(a.unknown, a.pos...), " "))
	}
	var missing []string
	for _, f := range []string{"--profile", "--backend", "--records", "--scratch"} {
		if !a.has(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return fail(exitUsage, "the following arguments are required: %s", strings.Join(missing, ", "))
	}
	c := perfServeConfig{profile: a.get("--profile"), manifestRoot: a.get("--manifest-root"), backend: a.get("--backend"),
		bundle: a.get("--bundle"), runtimeRoot: a.get("--runtime-root"), worker: a.get("--worker"),
		modelName: a.get("--model-name"), host: a.get("--host"), records: a.get("--records"), scratch: a.get("--scratch"),
		keepArtifacts: a.has("--keep-artifacts"), fullObservations: a.has("--full-observations")}
	if c.manifestRoot == "" {
		c.manifestRoot = "families"
	}
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if c.backend != "trtmc" && c.backend != "reference" {
		return fail(exitUsage, "argument --backend: invalid choice: '%s' (choose from 'trtmc', 'reference')", c.backend)
	}
	if c.port, err = intArg("--port", a.get("--port"), 8000); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if c.maxQueue, err = intArg("--max-queue", a.get("--max-queue"), 64); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if c.requestTimeout, err = floatArg("--request-timeout", a.get("--request-timeout"), 900); err != nil {
		return fail(exitUsage, "%v", err)
	}
	for _, f := range []string{"--set", "--testcase", "--operation", "--task", "--isolate-requests", "--memory-probe"} {
		if a.has(f) {
			return p.fail(exitUsage, "trtmc-perf-serve: %s is not played by the qualkit contract double", f)
		}
	}
	// cli.py @ 3878755c: ValueError and RuntimeError print "trtmc-perf-serve: <msg>", exit 2.
	switch {
	case c.backend == "reference":
		return p.fail(exitUsage, "trtmc-perf-serve: the qualkit contract double plays only the trtmc backend")
	case c.bundle == "" || c.runtimeRoot == "" || c.worker == "":
		return p.fail(exitUsage, "trtmc-perf-serve: the trtmc backend requires --bundle, --runtime-root, and --worker")
	}
	ps, err := startPerfServe(p, c)
	if err != nil {
		return p.fail(exitUsage, "trtmc-perf-serve: %v", err)
	}
	defer ps.close()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		return p.fail(exitFail, "trtmc-perf-serve: %v", err)
	}
	fmt.Fprintf(p.stderr, "trtmc-perf-serve (qualkit contract double): %s on http://%s, worker %s\n", c.profile, ln.Addr(), c.worker)
	return serveUntilDone(p, ln, ps.handler(), "trtmc-perf-serve", "trtmc-perf-serve: ")
}

// perfServe is the serving state: the profile's base request, the worker, one lane.
type perfServe struct {
	p       *proc
	cfg     perfServeConfig
	model   string
	base    map[string]any
	ready   map[string]any // the worker's ready line
	records *os.File

	lane      sync.Mutex // one request in the worker at a time
	waitingMu sync.Mutex
	waiting   int
	dead      error // sticky: the worker died or desynchronised

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
}

// startPerfServe resolves the profile, writes the worker's session and starts it; the
// port opens only once the worker is ready (the model is loaded before uvicorn runs).
func startPerfServe(p *proc, c perfServeConfig) (*perfServe, error) {
	base, err := profileBaseRequest(p, c)
	if err != nil {
		return nil, err
	}
	ps := &perfServe{p: p, cfg: c, base: base, model: c.modelName}
	if ps.model == "" {
		ps.model = c.profile
	}
	c.scratch = p.abs(c.scratch)
	ps.cfg.scratch = c.scratch
	wdir := filepath.Join(c.scratch, "_worker")
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		return nil, err
	}
	session := map[string]any{"schema_version": 2, "bundle": p.abs(c.bundle), "runtime_root": p.abs(c.runtimeRoot),
		"operation": "generate_image", "request": base, "expected_family": Family, "expected_task": "image_edit"}
	sessionFile := filepath.Join(wdir, "worker-session.json")
	if err := writeJSON(sessionFile, session); err != nil {
		return nil, err
	}
	if ps.records, err = os.OpenFile(p.abs(c.records), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(wdir, "worker.stderr.log"))
	if err != nil {
		return nil, err
	}
	ps.cmd = exec.Command(p.abs(c.worker), "--serve", sessionFile)
	ps.cmd.Stderr = stderr
	ps.cmd.Env = os.Environ()
	if ps.stdin, err = ps.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := ps.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := ps.cmd.Start(); err != nil {
		return nil, fmt.Errorf("backend unavailable: worker %s: %v", c.worker, err)
	}
	ps.stdout = bufio.NewScanner(out)
	ps.stdout.Buffer(make([]byte, 0, 64<<10), 16<<20)
	if !ps.stdout.Scan() {
		ps.close()
		return nil, fmt.Errorf("backend unavailable: the worker exited before it was ready (see %s)", stderr.Name())
	}
	if err := json.Unmarshal(ps.stdout.Bytes(), &ps.ready); err != nil || ps.ready["event"] != "ready" {
		ps.close()
		return nil, fmt.Errorf("backend unavailable: the worker's first line is not ready: %s", clip(ps.stdout.Bytes(), 300))
	}
	return ps, nil
}

// profileBaseRequest is the profile's resolved base request (task_adapters.py @ 0dd9052f
// § _image_generation_request): the testcase's prompt, negative prompt, seed, steps and
// cfg_scale, guidance_scale -1.0, the manifest's size, batch_size 1, and the test image
// as a server path.
func profileBaseRequest(p *proc, c perfServeConfig) (map[string]any, error) {
	root := p.abs(c.manifestRoot)
	matches, _ := filepath.Glob(filepath.Join(root, "*", "tests", "manifests", c.profile+".json"))
	if len(matches) != 1 {
		return nil, fmt.Errorf("profile %s: %d manifests under %s/*/tests/manifests/", c.profile, len(matches), c.manifestRoot)
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", matches[0], err)
	}
	for _, tc := range m.Testcases {
		if tc.Name != c.profile {
			continue
		}
		req := map[string]any{"prompt": tc.Prompt, "seed": tc.Seed, "num_steps": tc.NumInferenceSteps,
			"guidance_scale": -1.0, "height": m.ImageHeight, "width": m.ImageWidth, "batch_size": 1,
			"image_path": filepath.Join(filepath.Dir(filepath.Dir(matches[0])), tc.TestImage)}
		if tc.NegativePrompt != nil {
			req["negative_prompt"] = *tc.NegativePrompt
		}
		if tc.CFGScale != nil {
			req["cfg_scale"] = *tc.CFGScale
		}
		return req, nil
	}
	return nil, fmt.Errorf("%s has no testcase %s", matches[0], c.profile)
}

func (ps *perfServe) close() {
	if ps.cmd != nil && ps.cmd.Process != nil {
		ps.lane.Lock()
		if ps.stdin != nil {
			fmt.Fprintln(ps.stdin, `{"id":"shutdown","type":"shutdown"}`)
			ps.stdin.Close()
		}
		done := make(chan struct{})
		go func() { ps.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(shutdownGrace):
			ps.cmd.Process.Kill()
			<-done
		}
		ps.lane.Unlock()
	}
	if ps.records != nil {
		ps.records.Close()
	}
}

func (ps *perfServe) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, map[string]string{"status": "live"})
	})
	mux.HandleFunc("GET /health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if ps.unavailable() != nil {
			writeJSONResponse(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
			return
		}
		writeJSONResponse(w, http.StatusOK, map[string]string{"status": "ready", "operation": "generate_image"})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSONResponse(w, http.StatusOK, map[string]any{"object": "list",
			"data": []map[string]string{{"id": ps.model, "object": "model", "owned_by": "trtmc"}}})
	})
	mux.HandleFunc("GET /v1/serving/info", func(w http.ResponseWriter, _ *http.Request) {
		info := map[string]any{"backend": "trtmc", "worker": ps.cfg.worker, "bundle": ps.cfg.bundle, "isolate_requests": false,
			"profile": ps.cfg.profile, "testcase": ps.cfg.profile, "family": Family, "max_queue": ps.cfg.maxQueue,
			"base_request": ps.base, Marker: true}
		for _, k := range []string{"operation", "task", "selected_task", "timing_scope", "asset_loading_included", "load_ms"} {
			info[k] = ps.ready[k]
		}
		writeJSONResponse(w, http.StatusOK, info)
	})
	mux.HandleFunc("POST /v1/tasks/{name}", ps.task)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONResponse(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
	return mux
}

func (ps *perfServe) unavailable() error {
	ps.waitingMu.Lock()
	defer ps.waitingMu.Unlock()
	return ps.dead
}

// perfError is perf-serve's error body (app.py @ 3878755c § _error): {"error": {"message",
// "type", "code"}}, with the request id header.
func perfError(w http.ResponseWriter, status int, code, msg string) {
	writeJSONResponse(w, status, map[string]any{"error": map[string]any{"message": msg, "type": code, "code": code}})
}

// task serves POST /v1/tasks/{name}, validating in app.py @ 3878755c § task's order.
func (ps *perfServe) task(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r.Header.Get("X-Request-ID"))
	w.Header().Set("X-Request-ID", id)
	if err := ps.unavailable(); err != nil {
		perfError(w, http.StatusServiceUnavailable, "backend_unavailable", "backend is no longer available")
		return
	}
	if name := r.PathValue("name"); name != "generate_image" {
		perfError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("this server serves 'generate_image', not '%s'", name))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		perfError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		perfError(w, http.StatusBadRequest, "invalid_request", "Expecting value: line 1 column 1 (char 0)")
		return
	}
	var request map[string]any
	shapeOK := true
	for k := range body {
		shapeOK = shapeOK && (k == "request" || k == "model")
	}
	if rq, ok := body["request"]; ok && (json.Unmarshal(rq, &request) != nil || request == nil) {
		shapeOK = false
	}
	if !shapeOK {
		perfError(w, http.StatusBadRequest, "invalid_request", `body must be {"request": {...operation request...}}`)
		return
	}
	if paths := serverPaths(request); len(paths) > 0 {
		perfError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf(`send %s inline as {"$file": {"suffix": ..., "b64": ...}}, not as a server path`, strings.Join(paths, ", ")))
		return
	}
	merged := map[string]any{}
	for k, v := range ps.base {
		merged[k] = v
	}
	for k, v := range request {
		merged[k] = v
	}
	workdir := filepath.Join(ps.cfg.scratch, id)
	if !ps.cfg.keepArtifacts {
		defer os.RemoveAll(workdir)
	}
	n := 0
	if err := materialize(merged, filepath.Join(workdir, "inputs"), &n); err != nil {
		perfError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	ps.waitingMu.Lock()
	if ps.waiting > ps.cfg.maxQueue {
		ps.waitingMu.Unlock()
		w.Header().Set("Retry-After", "1")
		perfError(w, http.StatusTooManyRequests, "server_busy", "execution lane and queue are full")
		return
	}
	ps.waiting++
	ps.waitingMu.Unlock()
	ps.lane.Lock()
	ps.waitingMu.Lock()
	ps.waiting--
	ps.waitingMu.Unlock()
	laneStart := time.Now()
	reply, err := ps.call(id, merged, filepath.Join(workdir, "output"))
	handlerMS := ms(time.Since(laneStart))
	ps.lane.Unlock()
	if err != nil {
		perfError(w, http.StatusServiceUnavailable, "backend_unavailable", err.Error())
		return
	}
	if ok, _ := reply["ok"].(bool); !ok {
		perfError(w, http.StatusUnprocessableEntity, "backend_rejected_request", fmt.Sprint(reply["error"]))
		return
	}
	obs, _ := reply["observation"].(map[string]any)
	modelMS, _ := obs["runtime_e2e_wall_ms"].(float64)
	t := timing{QueueMS: ms(laneStart.Sub(start)), ModelCallMS: modelMS, HandlerMS: handlerMS}
	line, _ := json.Marshal(map[string]any{"request_id": id, "route": "/v1/tasks/generate_image", "operation": "generate_image",
		"backend": "trtmc", "time": float64(time.Now().UnixMicro()) / 1e6, "timing": t, "observation": obs, Marker: true})
	if _, err := ps.records.Write(append(line, '\n')); err != nil {
		perfError(w, http.StatusInternalServerError, "backend_failed", "OSError: "+err.Error())
		return
	}
	w.Header().Set("Server-Timing", fmt.Sprintf("model;dur=%.3f", t.ModelCallMS))
	writeJSONResponse(w, http.StatusOK, map[string]any{"id": id, "object": "task.result", "operation": "generate_image",
		"text": "generate_image", "trtmc_timing": t, "trtmc_observation": obs})
}

// call sends one request line to the worker and reads its reply. A dead or
// desynchronised worker makes the server unavailable for good.
func (ps *perfServe) call(id string, request map[string]any, artifactBase string) (map[string]any, error) {
	if err := os.MkdirAll(filepath.Dir(artifactBase), 0o755); err != nil {
		return nil, err
	}
	line, _ := json.Marshal(map[string]any{"id": id, "request": request, "artifact_base": artifactBase, "full_observation": ps.cfg.fullObservations})
	fail := func(err error) (map[string]any, error) {
		ps.waitingMu.Lock()
		ps.dead = err
		ps.waitingMu.Unlock()
		return nil, err
	}
	if _, err := ps.stdin.Write(append(line, '\n')); err != nil {
		return fail(fmt.Errorf("the worker is gone: %v", err))
	}
	if !ps.stdout.Scan() {
		return fail(errors.New("the worker exited"))
	}
	var reply map[string]any
	if err := json.Unmarshal(ps.stdout.Bytes(), &reply); err != nil || reply["id"] != id {
		return fail(fmt.Errorf("the worker desynchronised: %s", clip(ps.stdout.Bytes(), 200)))
	}
	return reply, nil
}

// serverPaths are the *_path and *_paths fields given as plain strings (files.py @
// c94a23d3 § server_path_fields), sorted.
func serverPaths(request map[string]any) []string {
	var out []string
	for k, v := range request {
		if !strings.HasSuffix(k, "_path") && !strings.HasSuffix(k, "_paths") {
			continue
		}
		switch x := v.(type) {
		case string:
			out = append(out, k)
		case []any:
			for _, e := range x {
				if _, ok := e.(string); ok {
					out = append(out, k)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// materialize replaces each {"$file": {...}} in v with the path of a file written under
// dir as input-NNNN<suffix>, numbered in traversal order (files.py @ c94a23d3 § _write).
func materialize(v map[string]any, dir string, n *int) error {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch x := v[k].(type) {
		case map[string]any:
			if f, ok := x["$file"]; ok {
				path, err := writeFileRef(x, f, dir, n)
				if err != nil {
					return err
				}
				v[k] = path
				continue
			}
			if err := materialize(x, dir, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFileRef(ref map[string]any, f any, dir string, n *int) (string, error) {
	if len(ref) != 1 {
		return "", errors.New("$file references cannot carry sibling fields")
	}
	spec, _ := f.(map[string]any)
	b64, ok := spec["b64"].(string)
	if !ok {
		return "", errors.New("$file requires a base64 'b64' string")
	}
	suffix, ok := spec["suffix"].(string)
	if _, given := spec["suffix"]; !given {
		suffix, ok = "", true
	}
	if !ok || len(suffix) > 16 || strings.Contains(suffix, "/") || strings.Contains(suffix, "..") {
		return "", errors.New("$file suffix must be a short file extension")
	}
	data, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return "", fmt.Errorf("$file contains invalid base64: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("input-%04d%s", *n, suffix))
	*n++
	return path, os.WriteFile(path, data, 0o644)
}

func clip(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
