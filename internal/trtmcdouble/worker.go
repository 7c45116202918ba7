package trtmcdouble

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// EnvLeak set to "1" makes the worker carry state between requests (each output is mixed
// with the previous one): a deliberately faulty worker for negative controls.
const EnvLeak = "QUALKIT_DOUBLE_LEAK"

const workerHelp = "trtmc_benchmark_worker --request REQUEST.json --output RESULT.json\ntrtmc_benchmark_worker --serve SESSION.json   (JSONL on stdin/stdout)"

var workerParser = newOptParser(false,
	opt{"--serve", true},
	opt{"--request", true},
	opt{"--output", true},
	opt{"--help|-h", false},
)

// workerSession is the --serve session file (schema_version 2).
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

// workerRequest is one request's settings; absent fields keep the session's.
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
	// BatchSize is num_samples (benchmark_worker.cpp @ ca938e40 § image_config).
	// perf-serve's base request states 1; refusing any other on an edit is the double's
	// own rule (what the real worker does with it was not read).
	BatchSize *int `json:"batch_size"`
}

// workerLine is one JSON line on stdin: a request, or {"type":"shutdown"}.
type workerLine struct {
	ID              any             `json:"id"`
	Type            string          `json:"type"`
	Request         json.RawMessage `json:"request"`
	ArtifactBase    string          `json:"artifact_base"`
	FullObservation bool            `json:"full_observation"`
}

type workerReply struct {
	ID          any                `json:"id"`
	OK          bool               `json:"ok"`
	Event       string             `json:"event,omitempty"`
	Observation *workerObservation `json:"observation,omitempty"`
	Error       string             `json:"error,omitempty"`
}

type workerObservation struct {
	RuntimeE2EWallMS float64  `json:"runtime_e2e_wall_ms"`
	ImageArtifacts   []string `json:"image_artifacts"`
	Height           int      `json:"height"`
	Width            int      `json:"width"`
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

// worker is a serving worker: the session, and (only with QUALKIT_DOUBLE_LEAK=1) the
// previous output.
type worker struct {
	p       *proc
	session workerSession
	header  BundleHeader
	leak    bool
	prev    *image.NRGBA
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

// emit writes one JSON line to stdout.
func (p *proc) emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintln(p.stdout, string(b))
}

// newWorker reads and checks the session file.
func newWorker(p *proc, path string) (*worker, error) {
	b, err := os.ReadFile(p.abs(path))
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	w := &worker{p: p, leak: p.getenv(EnvLeak) == "1"}
	if err := decodeStrict(b, &w.session); err != nil {
		return nil, fmt.Errorf("session %s: %w", path, err)
	}
	s := w.session
	switch {
	case s.SchemaVersion == nil || *s.SchemaVersion != 2:
		return nil, errors.New("session: schema_version 2 is required")
	case s.Operation != "generate_image":
		return nil, fmt.Errorf("session: operation %q: this bundle serves generate_image", s.Operation)
	case s.ExpectedFamily != nil && *s.ExpectedFamily != Family:
		return nil, fmt.Errorf("session: expected_family %q, but the bundle's family is %s", *s.ExpectedFamily, Family)
	case s.ExpectedTask != nil && *s.ExpectedTask != "image_edit":
		return nil, fmt.Errorf("session: expected_task %q, but the bundle's task is image_edit", *s.ExpectedTask)
	case s.SelectedTask != nil && *s.SelectedTask != "image_edit":
		return nil, fmt.Errorf("session: selected_task %q is not a task of this bundle (image_edit)", *s.SelectedTask)
	case !isFile(filepath.Join(p.abs(s.RuntimeRoot), libModelQwen)) || s.RuntimeRoot == "":
		return nil, fmt.Errorf("session: runtime_root %q holds no %s", s.RuntimeRoot, libModelQwen)
	}
	if len(s.Request) == 0 || s.Request[0] != '{' {
		return nil, errors.New("session: request must be a JSON object")
	}
	if err := decodeStrict(s.Request, &workerRequest{}); err != nil {
		return nil, fmt.Errorf("session request: %w", err)
	}
	if w.header, err = ReadBundle(p.abs(s.Bundle)); err != nil {
		return nil, fmt.Errorf("session: bundle %s: not a valid .bundle artifact: %v", s.Bundle, err)
	}
	return w, nil
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// serve answers JSON lines on stdin until shutdown or end of input.
func (w *worker) serve() int {
	sc := bufio.NewScanner(w.p.stdin)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var line workerLine
		if err := decodeStrict(sc.Bytes(), &line); err != nil {
			w.p.emit(workerReply{OK: false, Error: "request line: " + err.Error()})
			continue
		}
		switch line.Type {
		case "shutdown":
			w.p.emit(workerReply{ID: line.ID, OK: true, Event: "shutdown"})
			return exitOK
		case "":
			w.p.emit(w.handle(line))
		default:
			w.p.emit(workerReply{ID: line.ID, OK: false, Error: fmt.Sprintf("unknown line type %q", line.Type)})
		}
	}
	if err := sc.Err(); err != nil {
		return w.p.fail(exitFail, "trtmc_benchmark_worker: stdin: %v", err)
	}
	return exitOK
}

func (w *worker) handle(line workerLine) workerReply {
	start := time.Now()
	obs, err := w.run(line)
	if err != nil {
		return workerReply{ID: line.ID, OK: false, Error: err.Error()}
	}
	obs.RuntimeE2EWallMS = ms(time.Since(start))
	return workerReply{ID: line.ID, OK: true, Observation: obs}
}

// run computes one request: the session's request with the line's fields over it.
func (w *worker) run(line workerLine) (*workerObservation, error) {
	var r workerRequest // decoded afresh each time: nothing of a request survives it
	if err := decodeStrict(w.session.Request, &r); err != nil {
		return nil, err
	}
	if len(line.Request) > 0 {
		if err := decodeStrict(line.Request, &r); err != nil {
			return nil, fmt.Errorf("request: %w", err)
		}
	}
	switch {
	case r.Prompt == nil || *r.Prompt == "":
		return nil, errors.New("request: prompt is required")
	case r.ImagePath == nil || *r.ImagePath == "":
		return nil, errors.New("request: image_path is required")
	case line.ArtifactBase == "":
		return nil, errors.New("artifact_base is required")
	case r.BatchSize != nil && *r.BatchSize != 1:
		return nil, fmt.Errorf("request: batch_size %d: an image edit makes one image", *r.BatchSize)
	}
	st := r.settings(DefaultSettings(w.header))
	src, err := os.ReadFile(w.p.abs(*r.ImagePath))
	if err != nil {
		return nil, fmt.Errorf("image_path: %w", err)
	}
	png, err := w.edit(src, *r.Prompt, st)
	if err != nil {
		return nil, err
	}
	base := w.p.abs(line.ArtifactBase)
	out := strings.TrimSuffix(base, filepath.Ext(base)) + ".image.1.0.png"
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return nil, fmt.Errorf("artifact: %w", err)
	}
	return &workerObservation{ImageArtifacts: []string{filepath.Base(out)}, Height: st.Height, Width: st.Width}, nil
}

// edit is Edit, except that with QUALKIT_DOUBLE_LEAK=1 the previous output bleeds into
// this one.
func (w *worker) edit(src []byte, prompt string, st Settings) ([]byte, error) {
	img, err := decodeImage(src)
	if err != nil {
		return nil, fmt.Errorf("image_path: %w", err)
	}
	out, err := editImage(img, prompt, st)
	if err != nil {
		return nil, err
	}
	if w.leak {
		if w.prev != nil {
			for i := range out.Pix {
				out.Pix[i] = uint8((int(out.Pix[i]) + int(w.prev.Pix[i%len(w.prev.Pix)])) / 2)
			}
		}
		w.prev = out
	}
	return encodePNG(out)
}

func (r workerRequest) settings(st Settings) Settings {
	if r.Seed != nil {
		st.Seed = *r.Seed
	}
	if r.NumSteps != nil {
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
	if r.Height != nil {
		st.Height = *r.Height
	}
	if r.Width != nil {
		st.Width = *r.Width
	}
	return st
}
