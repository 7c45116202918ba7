package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	stdpng "image/png"
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

// A raw field (the controls stage's refused or accepted one) travels as it is, in either
// protocol, where a setting of that name would be refused.
func TestRawFieldsTravelAsTheyAre(t *testing.T) {
	req := Request{Image: png, Prompt: "p", Settings: map[string]string{"seed": "42"}, Raw: map[string]string{"qualkit_unknown_control": "1"}}
	body, _, err := Task{}.Encode("", req)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"qualkit_unknown_control":"1"`)
	assert.Contains(t, string(body), `"seed":42`)
	body, ct, err := OpenAI{}.Encode("m", req)
	require.NoError(t, err)
	_, params, err := mime.ParseMediaType(ct)
	require.NoError(t, err)
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(1 << 20)
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, form.Value["qualkit_unknown_control"])
	assert.Equal(t, []string{"42"}, form.Value["seed"])
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

// With latent replay the task body carries the request's seed as latent_seed too (perf-
// serve replays it as NumPy's noise, latents.py @ d3e1a549), and it is read back apart
// from the settings; a body without a seed cannot replay one.
func TestTaskLatentSeed(t *testing.T) {
	req := Request{Image: []byte("\x89PNG\r\n\x1a\n"), Prompt: "p", Settings: map[string]string{"seed": "42", "size": "64x48"}}
	body, _, err := Task{LatentSeed: true}.Encode("", req)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"latent_seed":42`)
	got, err := Task{}.Decode(body)
	require.NoError(t, err)
	require.NotNil(t, got.LatentSeed)
	assert.Equal(t, int64(42), *got.LatentSeed)
	assert.Equal(t, req.Settings, got.Settings, "latent_seed is no setting")

	plain, _, err := Task{}.Encode("", req)
	require.NoError(t, err)
	assert.NotContains(t, string(plain), "latent_seed")
	got, err = Task{}.Decode(plain)
	require.NoError(t, err)
	assert.Nil(t, got.LatentSeed)

	_, _, err = Task{LatentSeed: true}.Encode("", Request{Image: req.Image, Prompt: "p", Settings: map[string]string{"size": "64x48"}})
	assert.ErrorContains(t, err, "states no numeric seed")
	_, err = Task{}.Decode([]byte(`{"request": {"prompt": "p", "image_path": {"$file": {"suffix": ".png", "b64": "iVBORw0KGgo="}}, "latent_seed": -1}}`))
	assert.ErrorContains(t, err, "latent_seed -1 is not a non-negative integer")
}

// perf-serve's reference backend names an array, <scratch>/<id>/output.npy (np.save of
// float32 [1, H, W, 3]), not a PNG: Output reads it as numpy wrote it (testdata, made by
// reference_output.py), holds it to the observation's sha256 and quantises it as
// perf-serve's media digest does, value for value.
func TestTaskOutputReadsTheReferenceBackendsArray(t *testing.T) {
	npy, err := os.ReadFile("testdata/reference-output.npy")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/reference-output.uint8")
	require.NoError(t, err)
	const sha = "aa7f1941773d416fe6189487fe11a18844b9c538e53889809abe128e48e1a64f"
	body := func(artifact, sha string) []byte {
		return []byte(`{"id": "r1", "object": "task.result", "trtmc_observation": {"shape": [1, 4, 5, 3], "dtype": "float32", "artifact": "` +
			artifact + `", "sha256": "` + sha + `"}}`)
	}
	scratch := func(rel string) ([]byte, error) {
		if rel != "r1/output.npy" {
			return nil, os.ErrNotExist
		}
		return npy, nil
	}
	out, err := Task{}.Output(body("/srv/scratch/r1/output.npy", sha), "r1", scratch)
	require.NoError(t, err)
	img, err := stdpng.Decode(bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 5, 4), img.Bounds())
	var got []byte
	for y := range 4 {
		for x := range 5 {
			r, g, b, _ := img.At(x, y).RGBA()
			got = append(got, byte(r>>8), byte(g>>8), byte(b>>8))
		}
	}
	assert.Equal(t, want, got, "NumPy's quantisation, value for value")

	_, err = Task{}.Output(body("/srv/scratch/r1/output.npy", strings.Repeat("0", 64)), "r1", scratch)
	assert.ErrorContains(t, err, "the array's sha256 is "+sha)
	_, err = Task{}.Output(body("/srv/scratch/r2/output.npy", sha), "r1", scratch)
	assert.ErrorContains(t, err, "is not the request's <scratch>/r1/output.npy")
	_, err = Task{}.Output(body("/srv/scratch/r1/output.npy", ""), "r1", scratch)
	assert.ErrorContains(t, err, "without the array's sha256")
	_, err = npyImagePNG(append([]byte{}, npy[:len(npy)-4]...), "")
	assert.ErrorContains(t, err, "holds 236 bytes, not 240")
}

// The traits the checker reads instead of a protocol's name.
func TestTraits(t *testing.T) {
	assert.Equal(t, Traits{AIPerfInputsFile: true}, OpenAI{}.Traits(), "settings as --extra-inputs; AIPerf's image_edit dataset written as inputs.json")
	assert.Equal(t, Traits{SettingsInPayload: true, ServerKeepsInputs: true}, Task{LatentSeed: true}.Traits(), "perf-serve: every control in the payload, its $file inputs kept in scratch")
}
