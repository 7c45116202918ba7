// Package wire is how a row's edit requests travel between AIPerf (or the harness's own
// client) and the server: how a request is written for AIPerf, how the sent image, the
// instruction and the settings are read back from the exact payload in AIPerf's raw
// export, and where a response's output PNG is. The harness and the evidence checker both
// read requests through it, so the stages and the checks stay protocol-free.
//
// Two protocols:
//
//   - OpenAIImages: POST /v1/images/edits, multipart, as AIPerf 0.13.0's image_edit
//     endpoint sends it; the PNG comes back as data[0].b64_json. The reference families
//     serve it, and so does TRTMC's trtmc-server edit route as the stage-7 completion
//     report describes it (no public TRTMC source has that route).
//   - TRTMCTask: trtmc-perf-serve's POST /v1/tasks/generate_image
//     (apps/perf_serving/trtmc_perf_serving/app.py @ 3878755c): a JSON body
//     {"request": {...}} in the worker's request schema, the image inline as
//     {"$file": {"suffix": ".png", "b64": ...}}; the response carries no image: the PNG
//     is written under the server's scratch folder, <scratch>/<request id>/<name>, its
//     name in trtmc_observation.image_artifacts. AIPerf drives it with its raw endpoint.
//
// Settings are always spelled the OpenAI way (size, seed, num_inference_steps,
// true_cfg_scale, guidance_scale, negative_prompt): the canonical form every stage and
// the native Task compare. A protocol maps them to its own fields and back.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Protocol names, as results.json records them.
const (
	OpenAIImages = "openai-images-edits"
	TRTMCTask    = "trtmc-task"
)

// Request is one edit: the reference image's exact bytes, the instruction and the
// settings (canonical spelling).
type Request struct {
	Image    []byte
	Prompt   string
	Settings map[string]string
	// LatentSeed is the seed of the initial noise the request asks the server to replay
	// (perf-serve's latent_seed, Task.LatentSeed), nil when the model draws its own.
	LatentSeed *int64
	// Raw are fields sent as they are, past the settings' mapping: the controls stage's
	// refused and accepted fields that no setting names (a mapping would refuse them).
	Raw map[string]string
}

// Protocol is one wire protocol.
type Protocol interface {
	// Name is the protocol's name (OpenAIImages, TRTMCTask).
	Name() string
	// Route is the HTTP path edits are POSTed to.
	Route() string
	// AIPerfEndpoint are the aiperf profile flags that choose the endpoint, the dataset
	// type of the input file, and the --extra-inputs every request needs; extra is the
	// settings as one JSON object, each value spelled as the workload states it.
	AIPerfEndpoint(extra string) []string
	// AIPerfInput is one line of AIPerf's input file for req.
	AIPerfInput(req Request) ([]byte, error)
	// Decode reads back what a request carried from its payload as AIPerf's raw export
	// records it (the exact body it sent, as JSON).
	Decode(payload json.RawMessage) (Request, error)
	// Encode is the HTTP body of req, and its content type, for the harness's own
	// requests (the influence probes), byte for byte what AIPerf would send.
	Encode(model string, req Request) (body []byte, contentType string, err error)
	// Output is the PNG a successful response names: in its body, or the file it names
	// under the server's scratch folder, read with scratch(relative path).
	Output(body []byte, requestID string, scratch func(rel string) ([]byte, error)) ([]byte, error)
	// OutputSource names where the image is, as results.json records it
	// ("b64_json", "scratch").
	OutputSource() string
	// Traits are what else the protocol decides of a run's files, for the checker.
	Traits() Traits
}

// Traits are what a protocol decides of a run's evidence besides its requests.
type Traits struct {
	// SettingsInPayload: every setting travels in each request's payload, so AIPerf gets
	// no --extra-inputs.
	SettingsInPayload bool
	// ServerKeepsInputs: the server keeps each request's image input beside its output in
	// its scratch folder, so the checker compares it with what AIPerf sent.
	ServerKeepsInputs bool
	// AIPerfInputsFile: AIPerf writes its dataset as aiperf/artifacts/inputs.json.
	AIPerfInputsFile bool
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
		return clip(e.Error, 300)
	}
	return ""
}

// jsonText is a JSON value as a setting: a string unquoted, anything else verbatim.
func jsonText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(v))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
