package trtmcdouble

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// EnvIgnoreSteps set to "1" makes the worker run the bundle's step count whatever a
// request asks: a deliberately faulty worker for the controls stage's negative control.
const EnvIgnoreSteps = "QUALKIT_DOUBLE_IGNORE_STEPS"

const workerHelp = "trtmc_benchmark_worker --request REQUEST.json --output RESULT.json\ntrtmc_benchmark_worker --serve SESSION.json   (JSONL on stdin/stdout)"

var workerParser = newOptParser(false,
	opt{"--serve", true}, opt{"--request", true}, opt{"--output", true},
	opt{"--help|-h", false},
)

// workerSession is the --serve session file, read as benchmark_worker.cpp @ ca938e40 §
// open_session and serve read it; other keys, such as perf-serve's case_name and
// measurement's warmup (types.py @ d4a4aa37 § worker_request), are ignored, as there.
type workerSession struct {
	SchemaVersion  *int            `json:"schema_version"`
	Bundle         string          `json:"bundle"`
	RuntimeRoot    string          `json:"runtime_root"`
	Operation      string          `json:"operation"`
	Request        json.RawMessage `json:"request"`
	ExpectedFamily *string         `json:"expected_family"`
	ExpectedTask   *string         `json:"expected_task"`
	SelectedTask   *string         `json:"selected_task"`
	Measurement    *struct {
		AssetLoadingIncluded bool `json:"asset_loading_included"`
	} `json:"measurement"`
}

// workerRequest is what the legacy image_edit path reads of a request
// (benchmark_worker.cpp @ ca938e40 § image_config, run_generate_image).
type workerRequest struct {
	Prompt         *string  `json:"prompt"`
	ImagePath      *string  `json:"image_path"`
	NegativePrompt *string  `json:"negative_prompt"`
	Seed           *int64   `json:"seed"`
	NumSteps       *int     `json:"num_steps"`
	GuidanceScale  *float64 `json:"guidance_scale"`
	CFGScale       *float64 `json:"cfg_scale"`
	Height         *int     `json:"height"`
	Width          *int     `json:"width"`
	// InitialLatents is latent replay's raw float32 noise (§ image_config: as the CLI's
	// --initial-latents-raw); perf-serve writes it for a request's latent_seed.
	InitialLatents *string `json:"initial_latents_path"`
}

// workerLine is one JSON line on stdin (§ serve); its request is the whole operation
// request: nothing of the session's is merged in.
type workerLine struct {
	ID              string          `json:"id"`
	Type            string          `json:"type"`
	Request         json.RawMessage `json:"request"`
	ArtifactBase    *string         `json:"artifact_base"`
	FullObservation bool            `json:"full_observation"`
}

type workerReply struct {
	ID          string         `json:"id"`
	OK          bool           `json:"ok"`
	Event       string         `json:"event,omitempty"`
	Observation map[string]any `json:"observation,omitempty"`
	Error       string         `json:"error,omitempty"`
}

type workerReady struct {
	Event                string `json:"event"`
	SchemaVersion        string `json:"schema_version"`
	Operation            string `json:"operation"`
	Task                 string `json:"task"`
	SelectedTask         string `json:"selected_task"`
	TimingScope          string `json:"timing_scope"`
	AssetLoadingIncluded bool   `json:"asset_loading_included"`
	LoadMS               int64  `json:"load_ms"`
	Double               bool   `json:"qualkit_contract_double"`
}

// worker is a serving worker; nothing of a request survives it.
type worker struct {
	p           *proc
	session     workerSession
	header      BundleHeader
	ignoreSteps bool // EnvIgnoreSteps
}

// workerMain plays `trtmc_benchmark_worker --serve SESSION.json`.
func workerMain(p *proc) int {
	a, err := workerParser.parse(p.args[1:])
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return p.fail(exitUsage, "Missing value for flag: %s\n%s", mv.flag, workerHelp)
	case a.has("--help"):
		fmt.Fprintln(p.stdout, workerHelp)
		return exitOK
	case len(a.unknown) > 0:
		return p.fail(exitUsage, "Unknown flag: %s\n%s", a.unknown[0], workerHelp)
	case len(a.pos) > 0:
		return p.fail(exitUsage, "Unexpected argument: %s\n%s", a.pos[0], workerHelp)
	case a.has("--serve") && (a.has("--output") || a.has("--request")):
		return p.fail(exitUsage, "--serve cannot be combined with --request or --output\n%s", workerHelp)
	case !a.has("--serve") && a.has("--request"):
		return p.fail(exitUsage, "--request: the qualkit contract double plays only --serve SESSION.json\n%s", workerHelp)
	case !a.has("--serve"):
		return p.fail(exitUsage, "%s", workerHelp)
	}
	start := time.Now()
	w, err := newWorker(p, a.get("--serve"))
	if err != nil {
		p.emit(map[string]any{"event": "failed", "error": err.Error(), Marker: true})
		return exitFail
	}
	p.emit(workerReady{Event: "ready", SchemaVersion: "trtmc.benchmark-worker-serve/v1", Operation: "generate_image",
		Task: "image_edit", SelectedTask: "image_edit", TimingScope: "public_task_call_wall",
		AssetLoadingIncluded: w.session.Measurement != nil && w.session.Measurement.AssetLoadingIncluded,
		LoadMS:               time.Since(start).Milliseconds(), Double: true})
	return w.serve()
}

func (p *proc) emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(p.stdout, string(b))
}

func newWorker(p *proc, path string) (*worker, error) {
	b, err := os.ReadFile(p.abs(path))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	w := &worker{p: p, ignoreSteps: p.getenv(EnvIgnoreSteps) == "1"}
	if err := json.Unmarshal(b, &w.session); err != nil {
		return nil, fmt.Errorf("session %s: %w", path, err)
	}
	s := w.session
	switch {
	case s.SchemaVersion == nil || *s.SchemaVersion != 2:
		return nil, errors.New("unsupported worker request schema")
	case s.Bundle == "":
		return nil, errors.New("session: bundle is required")
	}
	if w.header, err = ReadBundle(p.abs(s.Bundle)); err != nil {
		return nil, fmt.Errorf("not a valid .bundle artifact: %s (qualkit contract double: %v)", s.Bundle, err)
	}
	switch {
	case s.Operation != "generate_image":
		return nil, fmt.Errorf("operation %q: this bundle serves generate_image", s.Operation)
	case (s.ExpectedFamily == nil) != (s.ExpectedTask == nil):
		return nil, errors.New("bundle identity requires both expected_family and expected_task")
	case s.ExpectedFamily != nil && (*s.ExpectedFamily != Family || *s.ExpectedTask != "image_edit"):
		return nil, fmt.Errorf("bundle identity mismatch: expected family '%s' and Task '%s', found family '%s' and Task 'image_edit'; rebuild the managed cache or select a matching bundle",
			*s.ExpectedFamily, *s.ExpectedTask, Family)
	case s.SelectedTask != nil:
		// The legacy image_edit Task (the profile's manifest task): § open_session.
		return nil, errors.New("selected_task requires a family migrated to the Task SDK")
	case s.RuntimeRoot == "":
		return nil, errors.New("runtime_root is required for an existing bundle mode")
	case !isFile(filepath.Join(p.abs(s.RuntimeRoot), libModelQwen)):
		return nil, fmt.Errorf("runtime_root %q holds no %s", s.RuntimeRoot, libModelQwen)
	case len(s.Request) == 0 || s.Request[0] != '{':
		return nil, errors.New("session: request must be a JSON object")
	}
	return w, nil
}

// serve answers JSON lines on stdin until shutdown or end of input (§ serve); a bad line
// or request gets an error reply and the loop goes on.
func (w *worker) serve() int {
	sc := bufio.NewScanner(w.p.stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var line workerLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			w.p.emit(workerReply{OK: false, Error: "request line: " + err.Error()})
			continue
		}
		if line.Type == "shutdown" {
			w.p.emit(workerReply{ID: line.ID, OK: true, Event: "shutdown"})
			return exitOK
		}
		w.p.emit(w.handle(line))
	}
	if err := sc.Err(); err != nil {
		return w.p.fail(exitFail, "trtmc_benchmark_worker: stdin: %v", err)
	}
	return exitOK
}

func (w *worker) handle(line workerLine) workerReply {
	if len(line.Request) == 0 {
		return workerReply{ID: line.ID, OK: false, Error: "request: the line has no request object"}
	}
	obs, err := w.run(line)
	if err != nil {
		return workerReply{ID: line.ID, OK: false, Error: err.Error()}
	}
	return workerReply{ID: line.ID, OK: true, Observation: obs}
}

// run computes one request, writing the artifact at <artifact_base with extension
// .image>.1.0.png (§ inject_artifact_paths, legacy_image_artifact_writer) and the
// observation image_observation writes.
func (w *worker) run(line workerLine) (map[string]any, error) {
	var r workerRequest // decoded afresh each time: nothing of a request survives it
	if err := json.Unmarshal(line.Request, &r); err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	switch {
	case r.Prompt == nil:
		return nil, errors.New("key 'prompt' not found")
	case line.ArtifactBase == nil:
		return nil, errors.New("key '_artifact_prefix' not found")
	case r.ImagePath == nil:
		return nil, errors.New("loaded task does not implement IImageGeneration: the qualkit contract double plays image edits only (image_path)")
	}
	st := r.settings(DefaultSettings(w.header))
	if w.ignoreSteps {
		st.Steps = DefaultSettings(w.header).Steps
	}
	if r.InitialLatents != nil {
		var err error
		if st.Latents, err = readLatents(w.p.abs(*r.InitialLatents), st.Height, st.Width); err != nil {
			return nil, err
		}
	}
	src, err := os.ReadFile(w.p.abs(*r.ImagePath))
	if err != nil {
		return nil, fmt.Errorf("cannot read image %s", *r.ImagePath)
	}
	png, wall, err := w.edit(src, *r.Prompt, st)
	if err != nil {
		return nil, err
	}
	base := w.p.abs(*line.ArtifactBase)
	out := strings.TrimSuffix(base, filepath.Ext(base)) + ".image.1.0.png"
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return nil, fmt.Errorf("artifact: %w", err)
	}
	if log := w.p.getenv(EnvWorkerLog); log != "" {
		f, err := appendTo(log)
		if err == nil {
			err = json.NewEncoder(f).Encode(WorkerLogLine{Artifact: out, Request: line.Request})
			f.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvWorkerLog, err)
		}
	}
	return map[string]any{
		"generated_images": 1, "batch_size": 1, "generated_frames": 1, "media_count": 1,
		"output_elements": st.Width * st.Height * 3, "height": st.Height, "width": st.Width,
		"channels": 3, "num_frames": 1, "media_type": "image",
		"image_artifacts": []string{filepath.Base(out)}, "runtime_e2e_wall_ms": ms(wall), Marker: true,
	}, nil
}

// edit is Edit, and wall the edit's own time, runtime_e2e_wall_ms (editCPU): as § measure
// times the Task call alone, not the image read before it nor the PNG written after.
func (w *worker) edit(src []byte, prompt string, st Settings) (png []byte, wall time.Duration, err error) {
	img, err := decodeImage(src)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read image (%v)", err)
	}
	out, wall, err := editCPU(img, prompt, st)
	if err != nil {
		return nil, 0, err
	}
	png, err = encodePNG(out)
	return png, wall, err
}

// settings are the request's over the bundle's. A step count of 0 or less, or a size
// of 0 or less, is the bundle's (pipeline.cpp @ d46edb11 § resolve_generate_knobs:
// resolve_qwen_image_requested_steps, height and width "> 0 ? ... : default"), as a
// guidance below 0 is (TrueCFG).
func (r workerRequest) settings(st Settings) Settings {
	if r.Seed != nil {
		st.Seed = *r.Seed
	}
	if r.NumSteps != nil && *r.NumSteps > 0 {
		st.Steps = *r.NumSteps
	}
	if r.GuidanceScale != nil {
		st.GuidanceScale = *r.GuidanceScale
	}
	if r.CFGScale != nil {
		st.CFGScale = *r.CFGScale
	}
	if r.NegativePrompt != nil {
		st.NegativePrompt = *r.NegativePrompt
	}
	if r.Height != nil && *r.Height > 0 {
		st.Height = *r.Height
	}
	if r.Width != nil && *r.Width > 0 {
		st.Width = *r.Width
	}
	return st
}
