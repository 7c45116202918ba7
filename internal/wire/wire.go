// Package wire is how a row's edit requests travel between AIPerf (or the harness's own
// client) and the server: how a request is written for AIPerf, read back from the exact
// payload in AIPerf's raw export, and where a response's PNG is, so that the harness and
// the checker stay protocol-free. Two protocols: OpenAI (the reference families, and
// TRTMC's trtmc-server edit route as the stage-7 completion report describes it; no
// public TRTMC source has that route) and Task (trtmc-perf-serve). Settings are always
// spelled the OpenAI way (size, seed, num_inference_steps, ...): a protocol maps them to
// its own fields and back.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Protocol names, as results.json records them.
const (
	OpenAIImages = "openai-images-edits"
	TRTMCTask    = "trtmc-task"
)

// Request is one edit: the image's exact bytes, the instruction and the settings.
type Request struct {
	Image    []byte
	Prompt   string
	Settings map[string]string
	// LatentSeed is the initial noise's seed to replay (perf-serve's latent_seed), or nil.
	LatentSeed *int64
	// Raw are fields sent as they are, past the settings' mapping: the controls stage's
	// refused and accepted fields that no setting names (a mapping would refuse them).
	Raw map[string]string
}

// Protocol is one wire protocol.
type Protocol interface {
	Name() string  // OpenAIImages, TRTMCTask
	Route() string // the HTTP path edits are POSTed to
	// AIPerfEndpoint are the aiperf profile flags that choose the endpoint, the input
	// file's dataset type and the --extra-inputs; extra is the settings as one JSON object.
	AIPerfEndpoint(extra string) []string
	// AIPerfInput is one line of AIPerf's input file for req.
	AIPerfInput(req Request) ([]byte, error)
	// Decode reads a request back from its payload in AIPerf's raw export.
	Decode(payload json.RawMessage) (Request, error)
	// Encode is req's HTTP body and content type, byte for byte what AIPerf would send.
	Encode(model string, req Request) (body []byte, contentType string, err error)
	// Output is a successful response's PNG: in its body, or read with scratch(rel path).
	Output(body []byte, requestID string, scratch func(rel string) ([]byte, error)) ([]byte, error)
	OutputSource() string // where the image is, as results.json records it
	Traits() Traits       // what else it decides of a run's files, for the checker
}

// Traits are what a protocol decides of a run's evidence besides its requests.
type Traits struct {
	SettingsInPayload bool // every setting is in the payload: no --extra-inputs
	ServerKeepsInputs bool // the server keeps each input image beside its output
	AIPerfInputsFile  bool // AIPerf writes aiperf/artifacts/inputs.json
}

// ByName is the protocol of that name; "" is OpenAIImages (evidence written before the
// protocol was recorded).
func ByName(name string) (Protocol, error) {
	switch name {
	case "", OpenAIImages:
		return OpenAI{}, nil
	case TRTMCTask:
		return Task{}, nil
	}
	return nil, fmt.Errorf("unknown wire protocol %q (known: %s, %s)", name, OpenAIImages, TRTMCTask)
}

// errorBody is the error a non-image JSON body carries, if any.
func errorBody(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 && string(e.Error) != "null" {
		return Clip(e.Error, 300)
	}
	return ""
}

// jsonText is a JSON value as a setting: a string unquoted, anything else verbatim.

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Clip is b as text, cut to n bytes and marked "..." when longer.
func Clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// JSONText is a JSON value as a setting: a string unquoted, anything else verbatim.
func JSONText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}
