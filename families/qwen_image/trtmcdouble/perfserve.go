package trtmcdouble

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"qualkit/families/qwen_image/latents"
)

// The double's Go imitation of trtmc-perf-serve, for clones without TRTMC's own sources
// beside them (qual's TestPerfServeConformance holds it to TRTMC's server where both can
// run; ImitationDifferences lists what it keeps otherwise, and why). It plays
// `python -m trtmc_perf_serving serve --backend trtmc` as cli.py @ 3878755c does: resolve
// the profile's base request from the family's manifest (catalog.py, task_adapters.py @
// 0dd9052f), start the persistent worker with the session file types.py @ d4a4aa37 §
// worker_request writes (backends/trtmc.py @ 7b798a32), then serve app.py @ 3878755c's
// routes: POST /v1/tasks/{operation} with the body {"request": {...}} merged over the base
// request, $file inputs written under <scratch>/<request id>/inputs/ (files.py @
// c94a23d3), latent_seed replayed as NumPy's noise (latents.py @ d3e1a549), the worker's
// PNG at <scratch>/<request id>/output.image.1.0.png and its media digest
// (digests.py @ 7d4725ab), kept only with --keep-artifacts, one records line per success.

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
                             [--operation OPERATION] [--task SELECTED_TASK]
                             [--manifest-root MANIFEST_ROOT] [--set FIELD=VALUE]
                             --backend {trtmc,reference} [--bundle BUNDLE]
                             [--runtime-root RUNTIME_ROOT] [--worker WORKER]
                             [--mode {eager,compile}] [--precision {fp16,bf16,fp32}]
                             [--reference-model REFERENCE_MODEL]
                             [--reference-revision REFERENCE_REVISION]
                             [--revision REVISION]
                             [--reference-options REFERENCE_OPTIONS]
                             [--reference-adapter REFERENCE_ADAPTER]
                             [--latent-replay-adapter LATENT_REPLAY_ADAPTER]
                             [--trust-remote-code] [--deterministic]
                             [--model-name MODEL_NAME] [--host HOST] [--port PORT]
                             --records RECORDS --scratch SCRATCH
                             [--max-queue MAX_QUEUE] [--keep-artifacts]
                             [--memory-probe] [--isolate-requests]
                             [--full-observations]
                             [--request-timeout REQUEST_TIMEOUT]`

const perfServeHelp = perfServeUsage + `

serve one operation of one backend (qualkit contract double: the trtmc backend only,
played by qualkit's Go imitation of TRTMC's perf-serve; no GPU, no TensorRT)

options:
  --profile PROFILE  --testcase TESTCASE  --operation OPERATION  --task SELECTED_TASK
  --manifest-root MANIFEST_ROOT (default families)  --set FIELD=VALUE
  --backend {trtmc,reference}  --bundle BUNDLE  --runtime-root RUNTIME_ROOT  --worker WORKER
  --model-name MODEL_NAME  --host HOST (default 127.0.0.1)  --port PORT (default 8000)
  --records RECORDS  --scratch SCRATCH  --max-queue MAX_QUEUE (default 64)
  --keep-artifacts  --memory-probe  --isolate-requests  --full-observations
  --request-timeout REQUEST_TIMEOUT (default 900.0)`

// perfServeConfig is a parsed serve command line.
type perfServeConfig struct {
	profile, testcase, operation, task, manifestRoot      string
	sets                                                  []string
	backend, bundle, runtimeRoot, worker, revision        string
	modelName, host, records, scratch                     string
	port, maxQueue                                        int
	keepArtifacts, fullObservations, isolate, memoryProbe bool
	requestTimeout                                        float64
	latentReplayAdapter                                   string
}

// perfServeMain plays `python -m trtmc_perf_serving ARGS`: the serve subcommand, with
// cli.py's exits: argparse's usage errors (2), "trtmc-perf-serve: <message>" for its
// ValueError and RuntimeError (2).
func perfServeMain(p *proc, args []string) int {
	usage := func(format string, a ...any) int {
		return p.fail(exitUsage, "%s\ntrtmc-perf-serve serve: error: %s", perfServeUsage, fmt.Sprintf(format, a...))
	}
	refuse := func(format string, a ...any) int { return p.fail(exitUsage, "trtmc-perf-serve: "+format, a...) }
	if len(args) == 0 || args[0] != "serve" {
		return p.fail(exitUsage, "usage: trtmc-perf-serve [-h] {serve,platform,reference-env,payload} ...\ntrtmc-perf-serve: error: the qualkit contract double plays only the serve subcommand")
	}
	a, err := perfServeParser.parse(args[1:])
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return usage("argument %s: expected one argument", mv.flag)
	case a.has("--help"):
		fmt.Fprintln(p.stdout, perfServeHelp)
		return exitOK
	case len(a.unknown) > 0 || len(a.pos) > 0:
		return p.fail(exitUsage, "usage: trtmc-perf-serve [-h] {serve,platform,reference-env,payload} ...\ntrtmc-perf-serve: error: unrecognized arguments: %s", strings.Join(append(a.unknown, a.pos...), " "))
	}
	var missing []string
	for _, f := range []string{"--profile", "--backend", "--records", "--scratch"} {
		if !a.has(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return usage("the following arguments are required: %s", strings.Join(missing, ", "))
	}
	c := perfServeConfig{profile: a.get("--profile"), testcase: a.get("--testcase"), operation: a.get("--operation"),
		task: a.get("--task"), manifestRoot: a.get("--manifest-root"), sets: a.vals["--set"], backend: a.get("--backend"),
		bundle: a.get("--bundle"), runtimeRoot: a.get("--runtime-root"), worker: a.get("--worker"), revision: a.get("--revision"),
		modelName: a.get("--model-name"), host: a.get("--host"), records: a.get("--records"), scratch: a.get("--scratch"),
		keepArtifacts: a.has("--keep-artifacts"), fullObservations: a.has("--full-observations"),
		isolate: a.has("--isolate-requests"), memoryProbe: a.has("--memory-probe"), latentReplayAdapter: a.get("--latent-replay-adapter")}
	if c.manifestRoot == "" {
		c.manifestRoot = "families"
	}
	if c.host == "" {
		c.host = "127.0.0.1"
	}
	if !oneOf("trtmc", "reference")(c.backend) {
		return usage("argument --backend: invalid choice: '%s' (choose from 'trtmc', 'reference')", c.backend)
	}
	if c.port, err = intArg("--port", a.get("--port"), 8000); err != nil {
		return usage("argument --port: invalid int value: '%s'", a.get("--port"))
	}
	if c.maxQueue, err = intArg("--max-queue", a.get("--max-queue"), 64); err != nil {
		return usage("argument --max-queue: invalid int value: '%s'", a.get("--max-queue"))
	}
	if c.requestTimeout, err = floatArg("--request-timeout", a.get("--request-timeout"), 900); err != nil {
		return usage("argument --request-timeout: invalid float value: '%s'", a.get("--request-timeout"))
	}
	prof, err := resolveProfile(p, c)
	if err != nil {
		return refuse("%v", err)
	}
	switch {
	case c.memoryProbe:
		// gpu_memory.py @ c4687b2b § open_probe imports pynvml, which the double's image lacks:
		// the real server dies the same way, with a traceback, before the worker starts.
		return p.fail(exitFail, "ModuleNotFoundError: No module named 'pynvml'")
	case c.backend == "reference":
		return refuse("the qualkit contract double plays only the trtmc backend: the reference backend runs diffusers on a GPU")
	case c.bundle == "" || c.runtimeRoot == "" || c.worker == "":
		return refuse("the trtmc backend requires --bundle, --runtime-root, and --worker")
	case c.latentReplayAdapter != "":
		return refuse("--latent-replay-adapter: the qualkit contract double replays latents only by the checkpoint's own configs")
	}
	ps, err := startPerfServe(p, c, prof)
	if err != nil {
		return refuse("%v", err)
	}
	defer ps.close()
	ln, err := net.Listen("tcp", net.JoinHostPort(c.host, strconv.Itoa(c.port)))
	if err != nil {
		return p.fail(exitFail, "ERROR:    [Errno 98] error while attempting to bind on address ('%s', %d): %v", c.host, c.port, err)
	}
	fmt.Fprintf(p.stderr, "trtmc-perf-serve (qualkit contract double, Go imitation): %s on http://%s, worker %s\n", c.profile, ln.Addr(), c.worker)
	return serveUntilDone(p, ln, ps.handler(), "trtmc-perf-serve", "trtmc-perf-serve: ")
}

// servingProfile is the resolved profile (profiles.py @ ca938e40 § ServingProfile).
type servingProfile struct {
	model    manifest
	testcase testcase
	base     *object // the worker request's "request"
	session  *object // the worker session (types.py @ d4a4aa37 § worker_request)
	snapshot string  // the checkpoint's local snapshot, for latent replay
}

// resolveProfile finds the profile's manifest under --manifest-root
// (<root>/*/tests/manifests/*.json, by file stem, name or hf_id: catalog.py @ 0dd9052f §
// resolve) and resolves its testcase into the base request of the legacy image_edit
// task (task_adapters.py @ 0dd9052f § _image_generation_request; resolve_case fills a
// zero height and width from the manifest's image_height and image_width), with --set
// overrides of request.* and measurement.* fields (catalog.py § apply_overrides).
func resolveProfile(p *proc, c perfServeConfig) (servingProfile, error) {
	root := p.abs(c.manifestRoot)
	if !isDir(root) {
		return servingProfile{}, fmt.Errorf("manifest root does not exist: %s", c.manifestRoot)
	}
	paths, _ := filepath.Glob(filepath.Join(root, "*", "tests", "manifests", "*.json"))
	var found []string
	var m manifest
	for _, path := range paths {
		b, err := os.ReadFile(path)
		var mm manifest
		if err != nil || json.Unmarshal(b, &mm) != nil {
			continue
		}
		if stem := strings.TrimSuffix(filepath.Base(path), ".json"); c.profile == stem || c.profile == mm.Name || c.profile == mm.HFID {
			found, m = append(found, path), mm
		}
	}
	switch {
	case len(found) == 0:
		return servingProfile{}, fmt.Errorf("unknown model '%s' under %s", c.profile, c.manifestRoot)
	case len(found) > 1:
		return servingProfile{}, fmt.Errorf("ambiguous model '%s': %s", c.profile, strings.Join(found, ", "))
	case m.Task != "image_edit":
		return servingProfile{}, fmt.Errorf("the qualkit contract double serves the image_edit task, not %q", m.Task)
	case c.operation != "" && c.operation != "generate_image":
		return servingProfile{}, fmt.Errorf("task image_edit cannot run operation %s", c.operation)
	case c.task != "" && c.task != m.Task:
		return servingProfile{}, fmt.Errorf("the qualkit contract double serves the bound task %s, not %s", m.Task, c.task)
	}
	tc := m.Testcases[0]
	if c.testcase != "" {
		n := 0
		for _, t := range m.Testcases {
			if t.Name == c.testcase {
				tc, n = t, n+1
			}
		}
		if n != 1 {
			return servingProfile{}, fmt.Errorf("model '%s' has no unique testcase '%s'", m.Name, c.testcase)
		}
	}
	base := newObject()
	base.set("prompt", tc.Prompt)
	neg := ""
	if tc.NegativePrompt != nil {
		neg = *tc.NegativePrompt
	}
	base.set("negative_prompt", neg)
	base.set("seed", json.Number(strconv.FormatInt(tc.Seed, 10)))
	base.set("num_steps", json.Number(strconv.Itoa(tc.NumInferenceSteps)))
	base.set("guidance_scale", pyFloat(-1))
	cfg := -1.0
	if tc.CFGScale != nil {
		cfg = *tc.CFGScale
	}
	base.set("cfg_scale", pyFloat(cfg))
	base.set("height", json.Number(strconv.Itoa(m.ImageHeight)))
	base.set("width", json.Number(strconv.Itoa(m.ImageWidth)))
	base.set("batch_size", json.Number("1"))
	image := filepath.Join(filepath.Dir(filepath.Dir(found[0])), tc.TestImage)
	if !isFile(image) {
		return servingProfile{}, fmt.Errorf("image asset does not exist: %s", image)
	}
	base.set("image_path", image)
	measurement, err := applyOverrides(base, c.sets)
	if err != nil {
		return servingProfile{}, err
	}
	if v, _ := base.get("guidance_scale"); v == pyFloat(-1) && planted("number-spelling") {
		base.set("guidance_scale", json.Number("-1"))
	}
	bundle := p.abs(c.bundle)
	if real, err := filepath.EvalSymlinks(bundle); err == nil {
		bundle = real // catalog.py § resolve_case: bundle_path.expanduser().resolve()
	}
	session := newObject()
	for _, kv := range [][2]any{{"schema_version", json.Number("2")}, {"case_name", tc.Name}, {"bundle", bundle},
		{"expected_family", m.Family}, {"expected_task", m.Task}, {"runtime_root", p.abs(c.runtimeRoot)},
		{"operation", "generate_image"}, {"request", base}, {"measurement", measurement}} {
		session.set(kv[0].(string), kv[1])
	}
	if planted("session-field") {
		session.del("case_name") // the worker ignores it: only the session file shows it gone
	}
	rev := m.HFRevision
	if rev == "" {
		rev = c.revision
	}
	return servingProfile{model: m, testcase: tc, base: base, session: session, snapshot: hfSnapshot(p.hfHome(), rev)}, nil
}

// measurementSpec is types.py @ d4a4aa37 § MeasurementSpec: the profile's measurement,
// of which the worker's session carries warmup, iterations, timing_scope and
// asset_loading_included.
type measurementSpec struct {
	warmup, iterations, telemetryIntervalMS int64
	telemetry                               any
	timingScope, assetLoadingIncluded       any
}

// check is MeasurementSpec.__post_init__, with its messages.
func (m measurementSpec) check() error {
	switch {
	case m.warmup < 0:
		return errors.New("measurement.warmup must be non-negative")
	case m.iterations <= 0:
		return errors.New("measurement.iterations must be positive")
	case m.telemetry != "auto" && m.telemetry != "off":
		return errors.New("telemetry.gpu must be 'auto' or 'off'")
	case m.telemetryIntervalMS < 100:
		return errors.New("telemetry.interval_ms must be at least 100")
	case m.timingScope != "public_task_call_wall":
		return errors.New("measurement.timing_scope must be 'public_task_call_wall'")
	}
	if _, ok := m.assetLoadingIncluded.(bool); !ok {
		return errors.New("measurement.asset_loading_included must be a boolean")
	}
	return nil
}

// applyOverrides is cli.py @ 3878755c § _overrides and catalog.py @ 0dd9052f §
// apply_overrides: each --set FIELD=VALUE's value is JSON, else the text; a field given
// twice keeps its first place and last value; request.* sets a base-request field,
// measurement.* and telemetry.* the measurement (warmup, iterations and the interval
// through int()), checked whole after each. It returns the session's measurement.
func applyOverrides(base *object, sets []string) (*object, error) {
	overrides := newObject()
	for _, item := range sets {
		name, raw, ok := strings.Cut(item, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--set expects FIELD=VALUE, got %s", pyRepr(item))
		}
		v, err := decodeOrdered([]byte(raw))
		if err != nil {
			v = raw
		}
		overrides.set(name, v)
	}
	m := measurementSpec{warmup: 1, iterations: 5, telemetryIntervalMS: 1000, telemetry: "auto",
		timingScope: "public_task_call_wall", assetLoadingIncluded: false}
	for _, field := range overrides.keys {
		v := overrides.vals[field]
		ns, name, dot := strings.Cut(field, ".")
		if !dot || name == "" || !oneOf("request", "measurement", "telemetry")(ns) {
			return nil, fmt.Errorf("override must be request.*, measurement.*, or telemetry.*: %s", pyRepr(field))
		}
		if ns == "telemetry" {
			targets := map[string]string{"gpu": "telemetry", "interval_ms": "telemetry_interval_ms"}
			if targets[name] == "" {
				return nil, fmt.Errorf("unknown telemetry field %s", pyRepr(name))
			}
			ns, name = "measurement", targets[name]
		}
		switch {
		case ns == "request":
			base.set(name, v)
			continue
		case !oneOf("warmup", "iterations", "timing_scope", "asset_loading_included", "telemetry", "telemetry_interval_ms")(name):
			return nil, fmt.Errorf("unknown measurement field %s", pyRepr(name))
		}
		var n int64
		if oneOf("warmup", "iterations", "telemetry_interval_ms")(name) {
			var err error
			if n, err = pyIntOf(v); err != nil {
				return nil, err
			}
		}
		switch name {
		case "warmup":
			m.warmup = n
		case "iterations":
			m.iterations = n
		case "telemetry_interval_ms":
			m.telemetryIntervalMS = n
		case "telemetry":
			m.telemetry = v
		case "timing_scope":
			m.timingScope = v
		case "asset_loading_included":
			m.assetLoadingIncluded = v
		}
		if err := m.check(); err != nil {
			return nil, err
		}
	}
	return pairs("warmup", json.Number(strconv.FormatInt(m.warmup, 10)), "iterations", json.Number(strconv.FormatInt(m.iterations, 10)),
		"timing_scope", m.timingScope, "asset_loading_included", m.assetLoadingIncluded), nil
}

// pyIntOf is Python's int() of a JSON value, for the measurement's integers: an integer,
// a float truncated, a bool, or a string of digits; its ValueError message otherwise.
func pyIntOf(v any) (int64, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, err
		}
		return int64(f), nil
	case string:
		i, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(x), "_", ""), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid literal for int() with base 10: %s", pyRepr(x))
		}
		return i, nil
	}
	return 0, fmt.Errorf("int() argument must be a string, a bytes-like object or a real number, not '%s'", pyType(v))
}

// perfServe is the serving state: the profile, the worker, one lane.
type perfServe struct {
	p        *proc
	cfg      perfServeConfig
	prof     servingProfile
	model    string
	identity *object // what /v1/serving/info and the records say the backend is
	info     *object
	records  *os.File
	recMu    sync.Mutex

	lane    chan struct{} // one request in the worker at a time
	mu      sync.Mutex
	waiting int
	dead    error // sticky: the worker died, timed out or desynchronised
	served  int

	workerStderr *os.File
	cmd          *exec.Cmd
	stdin        io.WriteCloser
	lines        chan []byte // the worker's stdout, line by line; closed when it exits
}

// startPerfServe writes the worker's session, starts it and waits for its ready line
// (backends/trtmc.py @ 7b798a32: 900 s); the port opens only then.
func startPerfServe(p *proc, c perfServeConfig, prof servingProfile) (*perfServe, error) {
	ps := &perfServe{p: p, cfg: c, prof: prof, model: c.modelName, lane: make(chan struct{}, 1)}
	if ps.model == "" {
		ps.model = prof.model.Name
	}
	ps.cfg.scratch = p.abs(c.scratch)
	wdir := filepath.Join(ps.cfg.scratch, "_worker")
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		return nil, err
	}
	session, _ := pyDumps(prof.session, true) // json.dumps(dict(session), indent=2)
	if err := os.WriteFile(filepath.Join(wdir, "worker-session.json"), session, 0o644); err != nil {
		return nil, err
	}
	var err error
	if ps.workerStderr, err = os.OpenFile(filepath.Join(wdir, "worker.stderr.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	ready, err := ps.startWorker()
	if err != nil {
		ps.workerStderr.Close()
		return nil, err
	}
	ps.identity = newObject()
	ps.identity.set("backend", "trtmc")
	ps.identity.set("worker", filepath.Clean(c.worker))
	ps.identity.set("bundle", prof.session.vals["bundle"])
	ps.identity.set("isolate_requests", c.isolate)
	for _, k := range []string{"operation", "task", "selected_task", "timing_scope", "asset_loading_included", "load_ms"} {
		v, _ := ready.get(k)
		ps.identity.set(k, v)
	}
	ps.info = newObject()
	ps.info.set("profile", prof.model.Name)
	ps.info.set("testcase", prof.testcase.Name)
	ps.info.set("family", prof.model.Family)
	plat, host := platformBlocks(p)
	ps.info.set("platform", plat)
	ps.info.set("host", host)
	if err := os.MkdirAll(filepath.Dir(p.abs(c.records)), 0o755); err != nil {
		ps.close()
		return nil, err
	}
	if ps.records, err = os.OpenFile(p.abs(c.records), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
		ps.close()
		return nil, err
	}
	return ps, nil
}

// platformBlocks are /v1/serving/info's platform and host blocks, which TRTMC's
// platform.py @ ca938e40 computes in Python (fingerprint, host_details): the double's
// stand-in __main__.py computes them the same way in the image and hands them over in
// QUALKIT_DOUBLE_PLATFORM.
func platformBlocks(p *proc) (any, any) {
	var blocks struct {
		Platform json.RawMessage `json:"platform"`
		Host     json.RawMessage `json:"host"`
	}
	if json.Unmarshal([]byte(p.getenv("QUALKIT_DOUBLE_PLATFORM")), &blocks) == nil && blocks.Platform != nil {
		plat, _ := decodeOrdered(blocks.Platform)
		host, _ := decodeOrdered(blocks.Host)
		return plat, host
	}
	host := newObject()
	name, _ := os.Hostname()
	host.set("hostname", name)
	host.set("machine", map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH])
	return newObject(), host
}

// startWorker starts `WORKER --serve SESSION` and reads its first line.
func (ps *perfServe) startWorker() (*object, error) {
	wdir := filepath.Join(ps.cfg.scratch, "_worker")
	ps.cmd = exec.Command(ps.p.abs(ps.cfg.worker), "--serve", filepath.Join(wdir, "worker-session.json"))
	ps.cmd.Stderr = ps.workerStderr
	ps.cmd.Env = os.Environ()
	var err error
	if ps.stdin, err = ps.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := ps.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := ps.cmd.Start(); err != nil {
		return nil, fmt.Errorf("[Errno 2] No such file or directory: '%s'", ps.cfg.worker)
	}
	ps.lines = make(chan []byte, 16)
	go func(lines chan<- []byte) {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}(ps.lines)
	ready, err := ps.read(900*time.Second, "worker startup")
	if err != nil {
		ps.stopWorker()
		return nil, err
	}
	if ev, _ := ready.get("event"); ev != "ready" {
		ps.stopWorker()
		e, ok := ready.get("error")
		if !ok {
			e = ready
		}
		return nil, fmt.Errorf("worker failed to load: %v", pyStr(e))
	}
	return ready, nil
}

// read is the worker's next protocol line (backends/trtmc.py § _read, with its messages).
func (ps *perfServe) read(timeout time.Duration, label string) (*object, error) {
	select {
	case line, ok := <-ps.lines:
		if !ok {
			ps.cmd.Wait()
			return nil, fmt.Errorf("worker exited during %s (code %d)", label, ps.cmd.ProcessState.ExitCode())
		}
		v, err := decodeOrdered(line)
		o, isObj := v.(*object)
		if err != nil || !isObj {
			// Python reads the line with its newline and shows its first 200 characters' repr.
			text := []rune(string(line) + "\n")
			return nil, fmt.Errorf("worker emitted a non-protocol line: %s", pyRepr(string(text[:min(len(text), 200)])))
		}
		return o, nil
	case <-time.After(timeout):
		return nil, fmt.Errorf("%s timed out after %.0fs", label, timeout.Seconds())
	}
}

func (ps *perfServe) stopWorker() {
	if ps.cmd == nil || ps.cmd.Process == nil || ps.cmd.ProcessState != nil {
		return
	}
	fmt.Fprintln(ps.stdin, `{"id": "shutdown", "type": "shutdown"}`)
	ps.stdin.Close()
	done := make(chan struct{})
	go func() { ps.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		ps.cmd.Process.Kill()
		<-done
	}
}

func (ps *perfServe) close() {
	ps.stopWorker()
	if ps.workerStderr != nil {
		ps.workerStderr.Close()
	}
	if ps.records != nil {
		ps.records.Close()
	}
}

// routes are app.py's routes and the operations each serves.
var perfRoutes = []struct {
	method, path string
	operations   []string
}{
	{"POST", "/v1/completions", []string{"generate"}},
	{"POST", "/v1/chat/completions", []string{"generate"}},
	{"POST", "/v1/embeddings", []string{"embed", "encode"}},
	{"POST", "/v1/ranking", []string{"rerank"}},
	{"POST", "/v1/audio/transcriptions", []string{"transcribe"}},
}

func (ps *perfServe) handler() http.Handler {
	mux := http.NewServeMux()
	route := func(method, path string, h http.HandlerFunc) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method {
				// FastAPI's answer to another method on a served path.
				w.Header().Set("Allow", method)
				writeOrdered(w, http.StatusMethodNotAllowed, pairs("detail", "Method Not Allowed"), nil)
				return
			}
			h(w, r)
		})
	}
	route("GET", "/health/live", func(w http.ResponseWriter, _ *http.Request) {
		writeOrdered(w, http.StatusOK, pairs("status", "live"), nil)
	})
	route("GET", "/health/ready", func(w http.ResponseWriter, _ *http.Request) {
		if ps.unavailable() != nil {
			writeOrdered(w, http.StatusServiceUnavailable, pairs("status", "unavailable"), nil)
			return
		}
		body := pairs("status", "ready", "operation", "generate_image")
		if planted("key-order") {
			body = pairs("operation", "generate_image", "status", "ready")
		}
		writeOrdered(w, http.StatusOK, body, nil)
	})
	route("GET", "/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeOrdered(w, http.StatusOK, pairs("object", "list", "data", []any{pairs("id", ps.model, "object", "model", "owned_by", "trtmc")}), nil)
	})
	route("GET", "/v1/serving/info", func(w http.ResponseWriter, _ *http.Request) {
		info := ps.identity.merged(ps.info)
		info.set("max_queue", ps.cfg.maxQueue)
		info.set("base_request", ps.prof.base)
		writeOrdered(w, http.StatusOK, info, nil)
	})
	route("POST", "/v1/tasks/{name}", func(w http.ResponseWriter, r *http.Request) { ps.guarded(w, r, "/v1/tasks", true, ps.task) })
	route("POST", "/v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		ps.guarded(w, r, "/v1/images/generations", true, ps.imageGeneration)
	})
	for _, rt := range perfRoutes {
		route(rt.method, rt.path, func(w http.ResponseWriter, r *http.Request) { ps.guarded(w, r, rt.path, false, nil) })
	}
	route("GET", "/v1/videos/{job_id}", func(w http.ResponseWriter, _ *http.Request) {
		perfError(w, http.StatusNotFound, "not_found", "unknown video job", "")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeOrdered(w, http.StatusNotFound, pairs("detail", "Not Found"), nil)
	})
	return mux
}

// requestError is what app.py § guarded turns into an error response.
type requestError struct {
	status  int
	code    string
	message string
}

func (e *requestError) Error() string { return e.message }

func invalid(format string, a ...any) *requestError {
	return &requestError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, a...)}
}

// guarded is app.py § guarded: the request id, the route's operations, the sticky
// unavailability, then the handler with its errors mapped to statuses.
func (ps *perfServe) guarded(w http.ResponseWriter, r *http.Request, route string, served bool, h func(*http.Request, string) (*object, map[string]string, error)) {
	id := requestID(r.Header.Get("X-Request-ID"))
	if !served {
		perfError(w, http.StatusNotFound, "route_not_served", fmt.Sprintf("%s is not served for operation 'generate_image'", route), id)
		return
	}
	if ps.unavailable() != nil {
		perfError(w, http.StatusServiceUnavailable, "backend_unavailable", "backend is no longer available", id)
		return
	}
	body, headers, err := h(r, id)
	var re *requestError
	switch {
	case errors.As(err, &re):
		if re.status == http.StatusTooManyRequests && !planted("retry-after") {
			w.Header().Set("Retry-After", "1")
		}
		perfError(w, re.status, re.code, re.message, id)
	case err != nil:
		perfError(w, http.StatusInternalServerError, "backend_failed", err.Error(), id)
	default:
		writeOrdered(w, http.StatusOK, body, headers)
	}
}

// perfError is app.py § _error: {"error": {"message", "type", "code"}}, the type by status,
// with the request id header when there is one.
func perfError(w http.ResponseWriter, status int, code, msg, id string) {
	kind := "invalid_request_error"
	switch {
	case status >= 500:
		kind = "server_error"
	case status == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	}
	if planted("error-type") {
		kind = code // the imitation's old answer
	}
	var headers map[string]string
	if id != "" {
		headers = map[string]string{"X-Request-ID": id}
	}
	writeOrdered(w, status, pairs("error", pairs("message", msg, "type", kind, "code", code)), headers)
}

// EnvPlant plants differences in the imitation, for the conformance test to find: a
// comma-separated list of Plants' names.
const EnvPlant = "QUALKIT_DOUBLE_PLANT"

// planted says whether EnvPlant plants name.
func planted(name string) bool {
	return slices.Contains(strings.Split(os.Getenv(EnvPlant), ","), name)
}

func (ps *perfServe) unavailable() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.dead
}

// task is app.py § task: the operation name, the body's shape, no server paths, then the
// request merged over the base request, executed.
func (ps *perfServe) task(r *http.Request, id string) (*object, map[string]string, error) {
	if name := r.PathValue("name"); name != "generate_image" {
		return nil, nil, invalid("this server serves 'generate_image', not '%s'", name)
	}
	body, err := readJSON(r)
	if err != nil {
		return nil, nil, err
	}
	bo, ok := body.(*object)
	if !ok {
		return nil, nil, invalid(`body must be {"request": {...operation request...}}`)
	}
	request := newObject()
	for _, k := range bo.keys {
		if k != "request" && k != "model" {
			return nil, nil, invalid(`body must be {"request": {...operation request...}}`)
		}
	}
	if v, ok := bo.get("request"); ok {
		if request, ok = v.(*object); !ok {
			return nil, nil, invalid(`body must be {"request": {...operation request...}}`)
		}
	}
	if local := serverPaths(request, ""); len(local) > 0 {
		return nil, nil, invalid(`send %s inline as {"$file": {"suffix": ..., "b64": ...}}, not as a server path`, strings.Join(uniqueSorted(local), ", "))
	}
	result, err := ps.execute(id, "/v1/tasks/generate_image", ps.prof.base.merged(request))
	if err != nil {
		return nil, nil, err
	}
	text := "generate_image"
	if t, ok := result.observation.get("text"); ok {
		text = pyStr(t)
	}
	return ps.respond(pairs("id", id, "object", "task.result", "operation", "generate_image", "text", text), result, id)
}

// imageGeneration is app.py § images with openai.py @ db5a3def § image_generation: the
// OpenAI fields mapped onto the base request (which keeps its own server-side image).
func (ps *perfServe) imageGeneration(r *http.Request, id string) (*object, map[string]string, error) {
	body, err := readJSON(r)
	if err != nil {
		return nil, nil, err
	}
	bo, ok := body.(*object)
	if !ok {
		return nil, nil, &requestError{http.StatusInternalServerError, "backend_failed", "AttributeError: the body is not an object"}
	}
	allowed := map[string]bool{"prompt": true, "size": true, "seed": true, "num_inference_steps": true, "guidance_scale": true,
		"negative_prompt": true, "quality": true, "num_frames": true, "seconds": true, "fps": true,
		"model": true, "stream": true, "stream_options": true, "user": true, "n": true, "response_format": true, "encoding_format": true}
	var unknown []string
	for _, k := range bo.keys {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		return nil, nil, invalid("unsupported fields: %s", strings.Join(uniqueSorted(unknown), ", "))
	}
	if n, ok := bo.get("n"); ok && pyStr(n) != "1" {
		return nil, nil, invalid("only n=1 is supported")
	}
	req := ps.prof.base.clone()
	prompt, _ := bo.get("prompt")
	if prompt == nil {
		prompt = ""
	}
	req.set("prompt", pyStr(prompt))
	if size, ok := bo.get("size"); ok && size != nil && size != "" {
		w, h, ok := strings.Cut(strings.ToLower(pyStr(size)), "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil {
			return nil, nil, invalid("size must be WIDTHxHEIGHT")
		}
		req.set("width", json.Number(strconv.Itoa(wi)))
		req.set("height", json.Number(strconv.Itoa(hi)))
	}
	for _, m := range [][2]string{{"num_inference_steps", "num_steps"}, {"seed", "seed"}, {"guidance_scale", "guidance_scale"},
		{"negative_prompt", "negative_prompt"}, {"num_frames", "num_frames"}} {
		if v, ok := bo.get(m[0]); ok && v != nil {
			if s, isStr := v.(string); isStr && m[1] != "negative_prompt" {
				v = json.Number(s) // multipart fields arrive as strings (openai.py § _number)
			}
			req.set(m[1], v)
		}
	}
	result, err := ps.execute(id, "/v1/images/generations", req)
	if err != nil {
		return nil, nil, err
	}
	url := ""
	for _, k := range []string{"artifact", "path"} {
		if v, ok := result.observation.get(k); ok && url == "" && v != nil && v != "" {
			url = "file://" + pyStr(v)
		}
	}
	out := pairs("created", time.Now().Unix(), "data", []any{pairs("url", url)})
	out.set("inference_time_s", pyFloat(result.modelCallMS/1000))
	return ps.respond(out, result, id)
}

// execution is what execute gives a route to answer with.
type execution struct {
	timing      *object
	observation *object // the whole observation
	reported    any     // the observation as responses and records carry it
	modelCallMS float64
}

// execute is app.py § execute: the request's folder, its $file inputs written there, its
// latent_seed replayed, the worker called through the one lane, the media digest added,
// the records line written; the folder removed unless --keep-artifacts.
func (ps *perfServe) execute(id, route string, request *object) (*execution, error) {
	workdir := filepath.Join(ps.cfg.scratch, id)
	if !ps.cfg.keepArtifacts {
		defer os.RemoveAll(workdir)
	}
	if err := os.MkdirAll(workdir, 0o755); err != nil {
		return nil, err
	}
	n := 0
	resolved, err := materialize(request, filepath.Join(workdir, "inputs"), &n)
	if err != nil {
		return nil, err
	}
	req := resolved.(*object)
	replayed, err := ps.replay(req, filepath.Join(workdir, "inputs"))
	if err != nil {
		return nil, err
	}
	obs, modelMS, queueMS, handlerMS, err := ps.lanedCall(req, filepath.Join(workdir, "output"))
	if err != nil {
		return nil, err
	}
	if digest, err := mediaDigest(workdir); err != nil {
		return nil, err
	} else if digest != nil {
		obs.set("media_digest", digest)
	}
	if replayed != nil {
		obs.set("latent_replay", *replayed)
		if *replayed {
			path, _ := req.get("initial_latents_path")
			b, err := os.ReadFile(pyStr(path))
			if err != nil {
				return nil, err
			}
			sum := sha256.Sum256(b)
			obs.set("initial_latents_sha256", hex.EncodeToString(sum[:]))
		}
	}
	timing := pairs("queue_ms", pyFloat(queueMS), "model_call_ms", pyFloat(modelMS), "handler_ms", pyFloat(handlerMS))
	var reported any = obs
	if !ps.cfg.fullObservations {
		reported = compact(obs)
	}
	// Records.write: json.dumps(record), Python's separators and ensure_ascii.
	record := pairs("request_id", id, "route", route, "operation", "generate_image", "backend", "trtmc",
		"time", pyFloat(float64(time.Now().UnixNano())/1e9), "timing", timing, "observation", reported)
	line, err := pyDumps(record, false)
	if planted("records-layout") {
		line, err = json.Marshal(record)
	}
	if err != nil {
		return nil, err
	}
	ps.recMu.Lock()
	_, err = ps.records.Write(append(line, '\n'))
	ps.recMu.Unlock()
	if err != nil {
		return nil, err
	}
	return &execution{timing: timing, observation: obs, reported: reported, modelCallMS: modelMS}, nil
}

// replay is latents.py @ d3e1a549 § Replay: a request's latent_seed becomes the raw
// float32 noise NumPy draws from it in the pipeline's latent shape, written as
// inputs/initial_latents.f32 and passed as initial_latents_path; nil when the request
// has no latent_seed, false when the pipeline has no known layout (the seed dropped).
func (ps *perfServe) replay(req *object, dir string) (*bool, error) {
	v, ok := req.get("latent_seed")
	if !ok {
		return nil, nil
	}
	req.del("latent_seed")
	h, _ := strconv.Atoi(pyStr(orZero(req.vals["height"])))
	w, _ := strconv.Atoi(pyStr(orZero(req.vals["width"])))
	replayed := false
	if h <= 0 || w <= 0 {
		return &replayed, nil
	}
	shape, err := latents.CheckpointShape(ps.prof.snapshot, h, w)
	if err != nil {
		return nil, err
	}
	seed, err := pyInt(v)
	if err != nil {
		return nil, err
	}
	raw, err := latents.Raw(seed, shape...)
	if err != nil {
		return nil, invalid("%v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "initial_latents.f32")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return nil, err
	}
	req.set("initial_latents_path", path)
	replayed = true
	return &replayed, nil
}

func orZero(v any) any {
	if v == nil {
		return "0"
	}
	return v
}

// pyInt is Python's int() of a JSON value, with its messages.
func pyInt(v any) (uint64, error) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || f < 0 {
			return 0, invalid("latent seed %s: NumPy takes a non-negative seed", x)
		}
		return uint64(f), nil
	case string:
		i, err := strconv.ParseUint(strings.TrimSpace(x), 10, 64)
		if err != nil {
			return 0, invalid("invalid literal for int() with base 10: '%s'", x)
		}
		return i, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("TypeError: int() argument must be a string, a bytes-like object or a real number, not '%s'", pyType(v))
}

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case *object:
		return "dict"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// lanedCall is app.py § Lane.run around backends/trtmc.py § invoke: the queue time from
// the lane's arrival to its start, the handler time of the call, the worker's reply.
func (ps *perfServe) lanedCall(req *object, artifactBase string) (*object, float64, float64, float64, error) {
	ps.mu.Lock()
	if len(ps.lane) > 0 && ps.waiting >= ps.cfg.maxQueue {
		ps.mu.Unlock()
		return nil, 0, 0, 0, &requestError{http.StatusTooManyRequests, "server_busy", "execution lane and queue are full"}
	}
	arrived := time.Now()
	ps.waiting++
	ps.mu.Unlock()
	ps.lane <- struct{}{}
	ps.mu.Lock()
	ps.waiting--
	ps.mu.Unlock()
	started := time.Now()
	obs, model, err := ps.invoke(req, artifactBase)
	handler := time.Since(started)
	<-ps.lane
	if err != nil {
		return nil, 0, 0, 0, err
	}
	return obs, model, msF(started.Sub(arrived)), msF(handler), nil
}

func msF(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// invoke is backends/trtmc.py § invoke: one request line, one reply; a reply for another
// id, a dead or silent worker make the backend unavailable for good.
func (ps *perfServe) invoke(req *object, artifactBase string) (*object, float64, error) {
	if ps.cfg.isolate && ps.served > 0 {
		ps.stopWorker()
		if _, err := ps.startWorker(); err != nil {
			return nil, 0, ps.retire(err)
		}
	}
	if err := ps.unavailable(); err != nil {
		return nil, 0, &requestError{http.StatusServiceUnavailable, "backend_unavailable", "worker is no longer available"}
	}
	ps.served++
	msgID := uuidHex()
	line, err := json.Marshal(pairs("id", msgID, "request", req, "artifact_base", artifactBase, "full_observation", ps.cfg.fullObservations))
	if err != nil {
		return nil, 0, err
	}
	if _, err := ps.stdin.Write(append(line, '\n')); err != nil {
		return nil, 0, ps.retire(fmt.Errorf("worker exited: %v", err))
	}
	reply, err := ps.read(time.Duration(ps.cfg.requestTimeout*float64(time.Second)), "worker request")
	if err != nil {
		return nil, 0, ps.retire(err)
	}
	if rid, _ := reply.get("id"); rid != msgID {
		return nil, 0, ps.retire(errors.New("worker protocol desynchronized"))
	}
	if ok, _ := reply.get("ok"); ok != true {
		msg, has := reply.get("error")
		if !has {
			msg = "worker request failed"
		}
		return nil, 0, &requestError{http.StatusUnprocessableEntity, "backend_rejected_request", pyStr(msg)}
	}
	ov, _ := reply.get("observation")
	obs, ok := ov.(*object)
	if !ok {
		return nil, 0, ps.retire(errors.New("worker reply has no observation"))
	}
	obs = obs.clone()
	wall, _ := obs.get("runtime_e2e_wall_ms")
	obs.del("runtime_e2e_wall_ms")
	ms, err := strconv.ParseFloat(pyStr(wall), 64)
	if err != nil {
		return nil, 0, fmt.Errorf("KeyError: 'runtime_e2e_wall_ms'")
	}
	return obs, ms, nil
}

// retire makes the backend unavailable for good (app.py: state["available"] = False).
func (ps *perfServe) retire(err error) error {
	ps.mu.Lock()
	ps.dead = err
	ps.mu.Unlock()
	if ps.cmd != nil && ps.cmd.Process != nil {
		ps.cmd.Process.Kill()
	}
	return &requestError{http.StatusServiceUnavailable, "backend_unavailable", err.Error()}
}

// respond is app.py § respond: the body with trtmc_timing and the reported observation,
// and the X-Request-ID and Server-Timing headers.
func (ps *perfServe) respond(body *object, result *execution, id string) (*object, map[string]string, error) {
	body.set("trtmc_timing", result.timing)
	body.set("trtmc_observation", result.reported)
	return body, map[string]string{"X-Request-ID": id, "Server-Timing": fmt.Sprintf("model;dur=%.3f", result.modelCallMS)}, nil
}

// readJSON is Starlette's request.json(): the body parsed, or json's message.
func readJSON(r *http.Request) (any, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, invalid("%v", err)
	}
	v, err := decodeOrdered(b)
	if err != nil {
		return nil, invalid("%s", pyJSONError(b))
	}
	return v, nil
}

// pyJSONError is Python's json message for the usual bad body: none starts a value.
func pyJSONError(b []byte) string {
	t := strings.TrimLeft(string(b), " \t\r\n")
	literal := strings.HasPrefix(t, "true") || strings.HasPrefix(t, "false") || strings.HasPrefix(t, "null")
	if t == "" || !strings.ContainsAny(t[:1], `{["-0123456789`) && !literal {
		return fmt.Sprintf("Expecting value: line 1 column %d (char %d)", len(b)-len(t)+1, len(b)-len(t))
	}
	return "Expecting ',' delimiter or a value: the body is not valid JSON"
}

// serverPaths are the *_path and *_paths fields holding plain strings, anywhere in the
// request (files.py @ c94a23d3 § server_path_fields).
func serverPaths(v any, field string) []string {
	isPath := strings.HasSuffix(field, "_path") || strings.HasSuffix(field, "_paths")
	switch x := v.(type) {
	case *object:
		var out []string
		for _, k := range x.keys {
			out = append(out, serverPaths(x.vals[k], k)...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, serverPaths(e, field)...)
		}
		return out
	case string:
		if isPath {
			return []string{field}
		}
	}
	return nil
}

func uniqueSorted(s []string) []string {
	m := map[string]bool{}
	var out []string
	for _, v := range s {
		if !m[v] {
			m[v] = true
			out = append(out, v)
		}
	}
	sortStrings(out)
	return out
}

// materialize replaces each {"$file": {...}} in v with the path of a file written under
// dir as input-NNNN<suffix>, numbered in the order the merged request is walked
// (files.py @ c94a23d3 § materialize_files, _write).
func materialize(v any, dir string, n *int) (any, error) {
	switch x := v.(type) {
	case *object:
		if f, ok := x.get("$file"); ok {
			return writeFileRef(x, f, dir, n)
		}
		out := newObject()
		for _, k := range x.keys {
			c, err := materialize(x.vals[k], dir, n)
			if err != nil {
				return nil, err
			}
			out.set(k, c)
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := materialize(e, dir, n)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return v, nil
}

func writeFileRef(ref *object, f any, dir string, n *int) (string, error) {
	if len(ref.keys) != 1 {
		return "", invalid("$file references cannot carry sibling fields")
	}
	spec, _ := f.(*object)
	var b64 string
	if spec != nil {
		b64, _ = spec.vals["b64"].(string)
	}
	if spec == nil || b64 == "" && spec.vals["b64"] == nil {
		return "", invalid("$file requires a base64 'b64' string")
	}
	if _, isStr := spec.vals["b64"].(string); !isStr {
		return "", invalid("$file requires a base64 'b64' string")
	}
	suffix := ""
	if s, given := spec.get("suffix"); given {
		var ok bool
		if suffix, ok = s.(string); !ok {
			return "", invalid("$file suffix must be a short file extension")
		}
	}
	if len([]rune(suffix)) > 16 || strings.Contains(suffix, "/") || strings.Contains(suffix, "..") {
		return "", invalid("$file suffix must be a short file extension")
	}
	data, err := pyB64Decode(b64)
	if err != nil {
		return "", invalid("$file contains invalid base64: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("input-%04d%s", *n, suffix))
	*n++
	return path, os.WriteFile(path, data, 0o644)
}

// binasciiError is a binascii.Error text, which the real server returns verbatim (and
// which, being Python's, starts with a capital).
type binasciiError string

func (e binasciiError) Error() string { return string(e) }

// pyB64Decode is base64.b64decode(s, validate=True), with binascii's messages.
func pyB64Decode(s string) ([]byte, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	data, pad := 0, false
	for _, c := range s {
		switch {
		case c == '=':
			pad = true
		case strings.ContainsRune(alphabet, c):
			if pad {
				return nil, binasciiError("Discontinuous padding not allowed")
			}
			data++
		default:
			return nil, binasciiError("Only base64 data is allowed")
		}
	}
	if data%4 == 1 {
		return nil, binasciiError(fmt.Sprintf("Invalid base64-encoded string: number of data characters (%d) cannot be 1 more than a multiple of 4", data))
	}
	b, err := base64StdStrict(s)
	if err != nil {
		return nil, binasciiError("Incorrect padding")
	}
	return b, nil
}

// compact is app.py § compact: arrays longer than 64 items become {"$array_length": n}.
func compact(v any) any {
	switch x := v.(type) {
	case *object:
		out := newObject()
		for _, k := range x.keys {
			out.set(k, compact(x.vals[k]))
		}
		return out
	case []any:
		if len(x) > 64 {
			return pairs("$array_length", len(x))
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = compact(e)
		}
		return out
	}
	return v
}

// pairs is an ordered object of key, value, key, value, ...
func pairs(kv ...any) *object {
	o := newObject()
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

// pyStr is Python's str() of a JSON value, for messages and text.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case json.Number:
		return string(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func writeOrdered(w http.ResponseWriter, status int, body any, headers map[string]string) {
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := marshalPlain(body) // Starlette's JSONResponse: compact, nothing escaped for HTML
	w.Write(b)
}

func uuidHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return hex.EncodeToString(b)
}
