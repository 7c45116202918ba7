package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The controls stage: every request setting a family declares for a checkpoint is shown
// to take effect, and every field it does not support is refused by name.

// StageControls runs after influence, on the running server, and stops it.
const StageControls = "controls"

// Files of the controls stage.
const (
	ControlsDir  = "controls"
	ControlsFile = ControlsDir + "/controls.json"
)

// ControlsPNG is the output of the controls probe name.
func ControlsPNG(name string) string { return ControlsDir + "/" + name + ".png" }

// ControlsRequestID is the X-Request-ID of the controls probe name.
func ControlsRequestID(name string) string { return "qualkit-controls-" + name }

// What a control does to an edit (Control.Effect).
const (
	EffectPixels = "pixels" // another value gives other pixels
	EffectSize   = "size"   // the output PNG has the requested size
	EffectSteps  = "steps"  // the Task time scales with the value (N and 2N)
	EffectSeed   = "seed"   // the same value reproduces the pixels, another changes them
	EffectNoop   = "no-op"  // accepted, and every value leaves the pixels bit-identical
)

// Controls is a family's declaration of the request settings a checkpoint supports:
// declared data, never found out by trying.
type Controls struct {
	// Source cites where the declaration was read from (parsers, a worker's fields).
	Source   string    `json:"source"`
	Controls []Control `json:"controls"`
	// Refused are fields the checkpoint does not support (and one it cannot know): each
	// must get a 4xx whose message names the field.
	Refused []Refusal `json:"refused"`
	// Accepted are fields and out-of-range values a refusal is wanted for that the
	// server's code answers 200 (Why cites it): a declared gap. The stage sends each and
	// records its answer; a 200 is the gap as declared, anything else fails (the
	// declaration no longer says what the server does).
	Accepted []Refusal `json:"accepted,omitempty"`
	// StepRatio is the band the ratio of 2N steps' time over N steps' must lie in.
	StepRatio [2]float64 `json:"step_ratio"`
	// StepTime is the dotted path, in the server's records line of a request, of the time
	// the steps are measured by (refedit: the edit's CPU time, which a busy host does not
	// inflate); "": the row's Task time.
	StepTime string `json:"step_time,omitempty"`
	// Precision is the precision the server's records must state for every request
	// (PrecisionRecord, a dotted path in a records line); "" when the server cannot
	// report one, NoPrecision then saying why.
	Precision       string `json:"precision,omitempty"`
	PrecisionRecord string `json:"precision_record,omitempty"`
	NoPrecision     string `json:"no_precision,omitempty"`
}

// Control is one supported setting, spelled the canonical (OpenAI) way.
type Control struct {
	Field   string `json:"field"`
	Effect  string `json:"effect"`
	Allowed string `json:"allowed"` // the values the server accepts, as its parser states them
	Default string `json:"default,omitempty"`
	// Values are what the stage sends: the first, then the other (steps: N, then 2N).
	Values [2]string `json:"values"`
	// Prompt is the instruction under which the control matters ("": the influence one).
	Prompt string `json:"prompt,omitempty"`
	// Invalid are out-of-range values: each must get a 4xx naming Field.
	Invalid []string `json:"invalid,omitempty"`
	// Recorded are the dotted paths, in the server's records line of a request, of the
	// value it ran with (joined by "x": width and height); none when it cannot say.
	Recorded []string `json:"recorded,omitempty"`
	Source   string   `json:"source,omitempty"`
}

// Refusal is a field (with a value to send) that must be refused by name.
type Refusal struct {
	Field string `json:"field"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// ControlProbe is one request of the controls stage and what came back.
type ControlProbe struct {
	Name      string `json:"name"`
	RequestID string `json:"request_id"`
	Field     string `json:"field"`
	Value     string `json:"value"`
	Prompt    string `json:"prompt"`
	// Settings are every setting the request carried.
	Settings map[string]string `json:"settings"`
	Status   int               `json:"status"`
	Message  string            `json:"message,omitempty"` // a refusal's body, clipped
	File     string            `json:"file,omitempty"`    // the output PNG, once 200
	// TaskMS is the request's Task time, or for a steps probe the declaration's StepTime
	// where it names one.
	TaskMS float64 `json:"task_ms,omitempty"`
}

// ControlVerdict is one control's verdict and the figure that shows it.
type ControlVerdict struct {
	Field   string `json:"field"`
	Effect  string `json:"effect"`
	Verdict string `json:"verdict"` // Pass or Fail
	Figure  string `json:"figure"`
	Error   string `json:"error,omitempty"`
	// Steps only: the Task times at N and 2N (ms) of the pair whose ratio is the median
	// of the repeats, their ratio, and the per-step and fixed cost they imply.
	TaskMS    [2]float64 `json:"task_ms,omitempty"`
	Ratio     float64    `json:"ratio,omitempty"`
	PerStepMS float64    `json:"per_step_ms,omitempty"`
	FixedMS   float64    `json:"fixed_ms,omitempty"`
	// Pixels, seed and no-op: how the two values' outputs differ.
	Differing int `json:"differing_pixels,omitempty"`
}

// RefusalVerdict is one refused field or out-of-range value and its answer.
type RefusalVerdict struct {
	Field   string `json:"field"`
	Value   string `json:"value"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	Verdict string `json:"verdict"` // Pass, Fail, or Gap for a declared Accepted one answered 200
	Error   string `json:"error,omitempty"`
	Gap     string `json:"gap,omitempty"` // an Accepted one's Why
}

// Gap is the verdict of a declared gap: a field the server accepts where a refusal is
// wanted, as the family's declaration says it does.
const Gap = "declared gap"

// WorkCheck is the records held to what the requests asked: every request of the
// benchmark and of this stage that ran, each declared control's recorded value.
type WorkCheck struct {
	Requests   int      `json:"requests"`
	Values     int      `json:"values"` // values compared
	Mismatches []string `json:"mismatches,omitempty"`
}

// ControlsResult is the controls stage's result (controls/controls.json, and
// results.json controls).
type ControlsResult struct {
	Declared *Controls         `json:"declared"` // nil: the family declares none
	Probes   []ControlProbe    `json:"probes"`
	Controls []ControlVerdict  `json:"controls"`
	Refused  []RefusalVerdict  `json:"refused"`
	Work     WorkCheck         `json:"work"`
	Quality  map[string]string `json:"quality_failures,omitempty"` // probe -> the quality gate it missed
	// Cut: the stage was stopped (interrupted, a deadline, a probe that failed to send)
	// before its verdict; Probes lists what it had sent, the last perhaps unanswered.
	Cut bool `json:"cut,omitempty"`
}

// DeclaredSHA256 is the sha256 of a controls declaration as JSON (empty: null), keys
// sorted and spaces dropped: controls.json's "declared" hashes as the commit's qual
// tables export (TableRow.Controls) hashes its family's.
func DeclaredSHA256(declared json.RawMessage) (string, error) {
	var doc any
	if len(declared) > 0 {
		if err := json.Unmarshal(declared, &doc); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(doc)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), err
}
