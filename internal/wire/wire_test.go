package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var png = []byte("\x89PNG\r\n\x1a\nnot really a png, but its bytes must survive")

func settings() map[string]string {
	return map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20",
		"true_cfg_scale": "4.0", "guidance_scale": "4.0", "negative_prompt": " "}
}

// A task request written for AIPerf decodes back to the same image, prompt and settings,
// numbers in their own spelling (4.0 stays 4.0, as AIPerf's orjson keeps it).
func TestTaskRoundTrip(t *testing.T) {
	req := Request{Image: png, Prompt: "Make it <snow> & \"ice\"", Settings: settings()}
	line, err := Task{}.AIPerfInput(req)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(line), "}\n"))
	assert.Contains(t, string(line), `"cfg_scale":4.0`)
	assert.Contains(t, string(line), `"num_steps":20`)
	assert.Contains(t, string(line), `"height":1024`)
	assert.Contains(t, string(line), `<snow> & \"ice\"`, "no HTML escaping")
	var in struct {
		Payload json.RawMessage `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(line, &in))
	got, err := Task{}.Decode(in.Payload)
	require.NoError(t, err)
	assert.Equal(t, req, got)
}

func TestTaskRefusesWhatItCannotCarry(t *testing.T) {
	_, _, err := Task{}.Encode("", Request{Image: png, Settings: map[string]string{"strength": "0.5"}})
	assert.ErrorContains(t, err, `setting "strength" has no field in perf-serve's generate_image request`)
	_, _, err = Task{}.Encode("", Request{Image: png, Settings: map[string]string{"seed": `"42"`}})
	assert.ErrorContains(t, err, "is not a number")
	_, err = Task{}.Decode(json.RawMessage(`{"request":{"prompt":"p","image_path":"/srv/x.png"}}`))
	assert.ErrorContains(t, err, "not an inline")
	_, err = Task{}.Decode(json.RawMessage(`{"request":{"prompt":"p","image_path":{"$file":{"suffix":".png","b64":"AA=="}},"strength":1}}`))
	assert.ErrorContains(t, err, `field "strength" has no canonical setting`)
	_, err = Task{}.Decode(json.RawMessage(`{"request":{"prompt":"p","image_path":{"$file":{"suffix":"../x","b64":"AA=="}}}}`))
	assert.ErrorContains(t, err, "not a short file extension")
}

func TestTaskOutputFromScratch(t *testing.T) {
	files := map[string][]byte{"rid-1/output.image.1.0.png": png}
	read := func(rel string) ([]byte, error) {
		if b, ok := files[rel]; ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	body := `{"id":"rid-1","object":"task.result","operation":"generate_image","text":"generate_image","trtmc_timing":{"queue_ms":0.1,"model_call_ms":10,"handler_ms":11},"trtmc_observation":{"image_artifacts":["output.image.1.0.png"]}}`
	b, err := Task{}.Output([]byte(body), "rid-1", read)
	require.NoError(t, err)
	assert.Equal(t, png, b)
	for _, c := range []struct{ body, id, want string }{
		{body, "rid-2", `response id "rid-1" is not the request's X-Request-ID "rid-2"`},
		{strings.Replace(body, `["output.image.1.0.png"]`, `[]`, 1), "rid-1", "names 0 images"},
		{strings.Replace(body, `output.image.1.0.png`, `../rid-0/output.png`, 1), "rid-1", "is not a PNG file name"},
		{strings.Replace(body, `output.image.1.0.png`, `output.image.1.1.png`, 1), "rid-1", "file does not exist"},
		{`{"error":{"message":"backend is no longer available","type":"backend_unavailable","code":"backend_unavailable"}}`, "rid-1", "carries an error"},
	} {
		_, err := Task{}.Output([]byte(c.body), c.id, read)
		assert.ErrorContains(t, err, c.want)
	}
}

// The OpenAI protocol's body is what AIPerf sends, and decodes from AIPerf's record of it.
func TestOpenAIEncodeAndDecode(t *testing.T) {
	req := Request{Image: png, Prompt: "Make it snow", Settings: settings()}
	body, ctype, err := OpenAI{}.Encode("m", req)
	require.NoError(t, err)
	_, params, err := mime.ParseMediaType(ctype)
	require.NoError(t, err)
	mr := multipart.NewReader(strings.NewReader(string(body)), params["boundary"])
	var names []string
	record := map[string]any{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		b, _ := io.ReadAll(p)
		names = append(names, p.FormName())
		if p.FormName() == "image" {
			assert.Equal(t, "image.png", p.FileName())
			record["image"] = map[string]string{"b64_data": base64.StdEncoding.EncodeToString(b)}
		} else {
			record[p.FormName()] = string(b)
		}
	}
	assert.Equal(t, []string{"prompt", "model", "response_format", "n", "image", "guidance_scale", "negative_prompt", "num_inference_steps", "seed", "size", "true_cfg_scale"}, names)
	payload, _ := json.Marshal(record)
	got, err := OpenAI{}.Decode(payload)
	require.NoError(t, err)
	assert.Equal(t, req, got)
}

func TestByName(t *testing.T) {
	p, err := ByName("")
	require.NoError(t, err)
	assert.Equal(t, OpenAIImages, p.Name())
	p, err = ByName(TRTMCTask)
	require.NoError(t, err)
	assert.Equal(t, "/v1/tasks/generate_image", p.Route())
	_, err = ByName("grpc")
	assert.ErrorContains(t, err, `unknown wire protocol "grpc"`)
}
