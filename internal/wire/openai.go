package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
)

// OpenAI is POST /v1/images/edits, multipart, the way AIPerf 0.13.0's image_edit endpoint
// sends it: prompt, model, response_format=b64_json, n=1, one file part "image"
// (image.png), then every setting as a text field. The image comes back as
// data[0].b64_json.
type OpenAI struct{}

func (OpenAI) Name() string         { return OpenAIImages }
func (OpenAI) Route() string        { return "/v1/images/edits" }
func (OpenAI) OutputSource() string { return "b64_json" }

// Traits: the settings go as --extra-inputs form fields; AIPerf writes inputs.json for
// its image_edit dataset; the server keeps no input.
func (OpenAI) Traits() Traits { return Traits{AIPerfInputsFile: true} }

// AIPerfEndpoint: image_edit, single-turn inputs, the settings as --extra-inputs form
// fields. Every prompt comes from the input file, so the synthetic corpus is `random`:
// with the default, AIPerf 0.13.0 tokenizes its sonnet corpus at start-up, 1.2 of the 7.3
// CPU seconds of a reference-row run (measured 2026-12-04, the same export either way).
// The Task protocol keeps the default: AIPerf refuses `random` with mooncake_trace.
func (OpenAI) AIPerfEndpoint(extra string) []string {
	return []string{"--endpoint-type", "image_edit", "--custom-dataset-type", "single_turn", "--extra-inputs", extra,
		"--prompt-corpus", "random"}
}

// AIPerfInput is {"text": prompt, "image": data URL}: a data: URL makes AIPerf send the
// file's exact bytes (a local path would be re-encoded by PIL).
func (OpenAI) AIPerfInput(req Request) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	url := "data:" + http.DetectContentType(req.Image) + ";base64," + base64.StdEncoding.EncodeToString(req.Image)
	err := enc.Encode(map[string]string{"text": req.Prompt, "image": url})
	return buf.Bytes(), err
}

// formFields are the multipart fields that are not settings.
var formFields = map[string]bool{"prompt": true, "model": true, "response_format": true, "n": true, "image": true}

// Decode reads AIPerf's record of a multipart request: the fields by name, the image
// file as {"b64_data": ...} (or a list of one).
func (OpenAI) Decode(payload json.RawMessage) (Request, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(payload, &fields); err != nil {
		return Request{}, fmt.Errorf("the payload is not a JSON object: %v", err)
	}
	req := Request{Settings: map[string]string{}}
	json.Unmarshal(fields["prompt"], &req.Prompt)
	for k, v := range fields {
		if !formFields[k] {
			req.Settings[k] = JSONText(v)
		}
	}
	raw, ok := fields["image"]
	if !ok {
		return req, errors.New("the payload has no image")
	}
	type file struct {
		B64 string `json:"b64_data"`
	}
	var one file
	if err := json.Unmarshal(raw, &one); err != nil || one.B64 == "" {
		var many []file
		if err := json.Unmarshal(raw, &many); err != nil || len(many) != 1 {
			return req, errors.New("the payload image is neither one file nor a list of one")
		}
		one = many[0]
	}
	img, err := base64.StdEncoding.DecodeString(one.B64)
	if err != nil {
		return req, fmt.Errorf("the payload image is not base64: %v", err)
	}
	req.Image = img
	return req, nil
}

// Encode writes the multipart body AIPerf would send.
func (OpenAI) Encode(model string, req Request) ([]byte, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range [][2]string{{"prompt", req.Prompt}, {"model", model}, {"response_format", "b64_json"}, {"n", "1"}} {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	fw, err := mw.CreateFormFile("image", "image.png")
	if err != nil {
		return nil, "", err
	}
	fw.Write(req.Image)
	for _, m := range []map[string]string{req.Settings, req.Raw} {
		for _, k := range sortedKeys(m) {
			if err := mw.WriteField(k, m[k]); err != nil {
				return nil, "", err
			}
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return body.Bytes(), mw.FormDataContentType(), nil
}

// Output is data[0].b64_json, decoded.
func (OpenAI) Output(body []byte, _ string, _ func(string) ([]byte, error)) ([]byte, error) {
	var resp struct {
		Data []struct {
			B64 string `json:"b64_json"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("response body is not a JSON object: %w", err)
	}
	switch {
	case errorBody(body) != "":
		return nil, fmt.Errorf("response carries an error and no image: %s", errorBody(body))
	case len(resp.Data) != 1:
		return nil, fmt.Errorf("response has %d images in data, want 1", len(resp.Data))
	case resp.Data[0].B64 == "":
		return nil, fmt.Errorf("response data[0] has no b64_json")
	}
	b, err := base64.StdEncoding.DecodeString(resp.Data[0].B64)
	if err != nil {
		return nil, fmt.Errorf("response b64_json is not base64: %w", err)
	}
	return b, nil
}
