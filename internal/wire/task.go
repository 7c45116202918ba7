package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Task is trtmc-perf-serve's POST /v1/tasks/generate_image (app.py @ 3878755c § task):
// the body is {"request": {...}} (a "model" key may stand beside it), merged over the
// profile's base request, every *_path field inline as {"$file": {"suffix", "b64"}}.
// Fields are the worker's (benchmark_worker.cpp @ ca938e40 § image_config): prompt,
// image_path, negative_prompt, seed, num_steps, guidance_scale, cfg_scale, height, width.
// Every control is stated in every request, so nothing is left to the base request.
//
// The response ({"id", "object": "task.result", "operation", "text", "trtmc_timing",
// "trtmc_observation"}) carries no image: with --keep-artifacts the PNG stays at
// <scratch>/<request id>/<name>, name in trtmc_observation.image_artifacts.
type Task struct {
	// LatentSeed sends each request's seed as latent_seed as well: perf-serve then hands
	// the worker the noise NumPy draws from it, default_rng(seed).standard_normal in the
	// pipeline's latent shape (latents.py @ d3e1a549 § Replay), which is also how TRTMC's
	// families case draws its own (test_e2e.py @ 9777fef7 § _initial_latents) and how
	// TRTMC's own qualification replays noise (suites.with_latent_seeds). The native
	// replay then draws the same noise from the same seed.
	LatentSeed bool
}

// TaskOperation is the operation perf-serve serves for an image edit profile.
const TaskOperation = "generate_image"

func (Task) Name() string         { return TRTMCTask }
func (Task) Route() string        { return "/v1/tasks/" + TaskOperation }
func (Task) OutputSource() string { return "scratch" }

// Traits: every control is in every payload (Encode); perf-serve keeps each $file input
// beside its output (<scratch>/<request id>/inputs/input-0000<suffix>, files.py @
// c94a23d3); AIPerf writes no inputs.json for raw payloads.
func (Task) Traits() Traits { return Traits{SettingsInPayload: true, ServerKeepsInputs: true} }

// AIPerfEndpoint: AIPerf's raw endpoint on the task route and mooncake_trace inputs
// (whose "payload" AIPerf sends as the body, and records verbatim in the raw export).
// AIPerf counts a 2xx without content as failed; a task result has its content, the
// "text" field perf-serve adds for generic clients ("aiperf `raw` endpoint", app.py @
// 3878755c § task), which the raw endpoint's auto-detection reads (AIPerf 0.13.0
// endpoints/response_mixin.py: embeddings, rankings, then text), so no response_field is
// needed. The settings travel in each payload, not as extra inputs: AIPerf merges none
// into a raw body.
func (Task) AIPerfEndpoint(string) []string {
	return []string{"--endpoint-type", "raw", "--custom-endpoint", "/v1/tasks/" + TaskOperation,
		"--custom-dataset-type", "mooncake_trace"}
}

// AIPerfInput is {"payload": <the body>}.
func (t Task) AIPerfInput(req Request) ([]byte, error) {
	body, _, err := t.Encode("", req)
	if err != nil {
		return nil, err
	}
	return append(append(append([]byte(`{"payload":`), body...), '}'), '\n'), nil
}

// taskFields maps canonical settings to request fields; size is height and width.
var taskFields = map[string]struct {
	field  string
	number bool
}{
	"seed":                {"seed", true},
	"num_inference_steps": {"num_steps", true},
	"guidance_scale":      {"guidance_scale", true},
	"true_cfg_scale":      {"cfg_scale", true},
	"negative_prompt":     {"negative_prompt", false},
}

// TaskFields maps each canonical setting to the request field it travels as (size
// travels as width and height): what a native replay maps back (the perf-serve reference
// row's reference/perfserve_native.py holds the same table, TestPerfServeNativeFields).
func TaskFields() map[string]string {
	out := map[string]string{}
	for k, f := range taskFields {
		out[k] = f.field
	}
	return out
}

// Encode is the JSON body: {"request": {...}}, keys in a fixed order, numbers as the
// settings spell them, no HTML escaping (AIPerf re-serializes with orjson, which escapes
// none).
func (t Task) Encode(_ string, req Request) ([]byte, string, error) {
	fields := map[string]json.RawMessage{}
	put := func(k string, v any) error {
		b, err := marshal(v)
		fields[k] = b
		return err
	}
	if err := put("prompt", req.Prompt); err != nil {
		return nil, "", err
	}
	file := map[string]map[string]string{"$file": {"suffix": imageSuffix(req.Image), "b64": base64.StdEncoding.EncodeToString(req.Image)}}
	if err := put("image_path", file); err != nil {
		return nil, "", err
	}
	if t.LatentSeed {
		seed, ok := req.Settings["seed"]
		if !ok || !isJSONNumber(seed) {
			return nil, "", fmt.Errorf("latent replay sends the request's seed as latent_seed, and the request states no numeric seed (%q)", seed)
		}
		fields["latent_seed"] = json.RawMessage(seed)
	}
	for _, k := range sortedKeys(req.Settings) {
		v := req.Settings[k]
		if k == "size" {
			w, h, err := parseSize(v)
			if err != nil {
				return nil, "", fmt.Errorf("setting size=%q: %v", v, err)
			}
			fields["width"], fields["height"] = json.RawMessage(strconv.Itoa(w)), json.RawMessage(strconv.Itoa(h))
			continue
		}
		f, ok := taskFields[k]
		switch {
		case !ok:
			return nil, "", fmt.Errorf("setting %q has no field in perf-serve's generate_image request: dropped, it would make the served edit differ from the native one", k)
		case f.number:
			if !isJSONNumber(v) {
				return nil, "", fmt.Errorf("setting %s=%q is not a number", k, v)
			}
			fields[f.field] = json.RawMessage(v)
		default:
			if err := put(f.field, v); err != nil {
				return nil, "", err
			}
		}
	}
	for k, v := range req.Raw {
		if err := put(k, v); err != nil {
			return nil, "", err
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"request":{`)
	for i, k := range sortedKeys(fields) {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteString("}}")
	return b.Bytes(), "application/json", nil
}

// Decode reads the body back: the $file image, the prompt, and every other field as its
// canonical setting. A field it cannot map is an error, never dropped.
func (Task) Decode(payload json.RawMessage) (Request, error) {
	var body struct {
		Request map[string]json.RawMessage `json:"request"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if err := dec.Decode(&body); err != nil {
		return Request{}, fmt.Errorf("the payload is not {\"request\": {...}}: %v", err)
	}
	if body.Request == nil {
		return Request{}, errors.New(`the payload has no "request" object`)
	}
	req := Request{Settings: map[string]string{}}
	json.Unmarshal(body.Request["prompt"], &req.Prompt)
	var w, h string
	var problems []string
	for k, v := range body.Request {
		switch k {
		case "prompt":
		case "image_path":
			img, err := fileRef(v)
			if err != nil {
				problems = append(problems, "image_path: "+err.Error())
			}
			req.Image = img
		case "latent_seed":
			seed, err := strconv.ParseInt(JSONText(v), 10, 64)
			if err != nil || seed < 0 {
				problems = append(problems, fmt.Sprintf("latent_seed %s is not a non-negative integer", JSONText(v)))
				continue
			}
			req.LatentSeed = &seed
		case "width":
			w = JSONText(v)
		case "height":
			h = JSONText(v)
		default:
			name := ""
			for canon, f := range taskFields {
				if f.field == k {
					name = canon
				}
			}
			if name == "" {
				problems = append(problems, fmt.Sprintf("field %q has no canonical setting", k))
				continue
			}
			req.Settings[name] = JSONText(v)
		}
	}
	if w != "" || h != "" {
		req.Settings["size"] = w + "x" + h
	}
	if req.Image == nil && len(problems) == 0 {
		problems = append(problems, "the request has no image_path")
	}
	if len(problems) > 0 {
		return req, errors.New(strings.Join(problems, "; "))
	}
	return req, nil
}

// fileRef decodes {"$file": {"suffix", "b64"}} as files.py @ c94a23d3 requires it: no
// sibling keys, a short suffix, valid base64.
func fileRef(v json.RawMessage) ([]byte, error) {
	var outer map[string]json.RawMessage
	if err := json.Unmarshal(v, &outer); err != nil || len(outer) != 1 || outer["$file"] == nil {
		return nil, errors.New(`not an inline {"$file": {...}} reference`)
	}
	var f struct {
		Suffix string `json:"suffix"`
		B64    string `json:"b64"`
	}
	if err := json.Unmarshal(outer["$file"], &f); err != nil {
		return nil, err
	}
	if len(f.Suffix) > 16 || strings.Contains(f.Suffix, "/") || strings.Contains(f.Suffix, "..") {
		return nil, fmt.Errorf("suffix %q is not a short file extension", f.Suffix)
	}
	return base64.StdEncoding.Strict().DecodeString(f.B64)
}

// artifactName is a file name the worker writes: no folder, no dot-dot.
var artifactName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.png$`)

// Output is the image the response names, read from the request's folder under the
// scratch folder: the one PNG in trtmc_observation.image_artifacts (the trtmc backend's
// worker), or the array trtmc_observation.artifact names, <request id>/output.npy (the
// reference backend's), as a PNG (npyImagePNG). The response's id must be the
// request's: it names the folder.
func (Task) Output(body []byte, requestID string, scratch func(string) ([]byte, error)) ([]byte, error) {
	var resp struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Observation struct {
			Artifacts []string `json:"image_artifacts"`
			Artifact  string   `json:"artifact"`
			SHA256    string   `json:"sha256"`
		} `json:"trtmc_observation"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("response body is not a JSON object: %w", err)
	}
	switch {
	case errorBody(body) != "":
		return nil, fmt.Errorf("response carries an error and no image: %s", errorBody(body))
	case resp.Object != "task.result":
		return nil, fmt.Errorf("response object is %q, not task.result", resp.Object)
	case resp.ID != requestID:
		return nil, fmt.Errorf("response id %q is not the request's X-Request-ID %q", resp.ID, requestID)
	case len(resp.Observation.Artifacts) == 0 && resp.Observation.Artifact != "":
		return referenceOutput(resp.Observation.Artifact, resp.Observation.SHA256, requestID, scratch)
	case len(resp.Observation.Artifacts) != 1:
		return nil, fmt.Errorf("trtmc_observation.image_artifacts names %d images, want 1", len(resp.Observation.Artifacts))
	case !artifactName.MatchString(resp.Observation.Artifacts[0]):
		return nil, fmt.Errorf("trtmc_observation.image_artifacts[0] %q is not a PNG file name", resp.Observation.Artifacts[0])
	}
	b, err := scratch(path.Join(requestID, resp.Observation.Artifacts[0]))
	if err != nil {
		return nil, fmt.Errorf("the output the response names (%s/%s under the scratch folder): %w", requestID, resp.Observation.Artifacts[0], err)
	}
	return b, nil
}

// referenceOutput reads the reference backend's array, which must be the request
// folder's output.npy, and returns it as a PNG.
func referenceOutput(artifact, sha, requestID string, scratch func(string) ([]byte, error)) ([]byte, error) {
	if path.Base(artifact) != "output.npy" || path.Base(path.Dir(artifact)) != requestID {
		return nil, fmt.Errorf("trtmc_observation.artifact %q is not the request's <scratch>/%s/output.npy", artifact, requestID)
	}
	if sha == "" {
		return nil, fmt.Errorf("trtmc_observation.artifact %q comes without the array's sha256", artifact)
	}
	b, err := scratch(path.Join(requestID, "output.npy"))
	if err != nil {
		return nil, fmt.Errorf("the output the response names (%s/output.npy under the scratch folder): %w", requestID, err)
	}
	png, err := npyImagePNG(b, sha)
	if err != nil {
		return nil, fmt.Errorf("%s/output.npy: %w", requestID, err)
	}
	return png, nil
}

func imageSuffix(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		return ".png"
	case bytes.HasPrefix(b, []byte("\xff\xd8")):
		return ".jpg"
	}
	return ".bin"
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n"), err
}

func isJSONNumber(s string) bool {
	if s == "" || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	var n json.Number
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	return d.Decode(&n) == nil && !d.More()
}

func parseSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(s, "x")
	if ok {
		if w, err = strconv.Atoi(ws); err == nil {
			h, err = strconv.Atoi(hs)
		}
	}
	if !ok || err != nil || w <= 0 || h <= 0 {
		return 0, 0, errors.New("not WxH")
	}
	return w, h, nil
}
