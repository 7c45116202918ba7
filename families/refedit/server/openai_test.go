package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OpenAI's images.edit fields that cannot change a deterministic edit are accepted and
// reported as ignored, in the response and the record; the edit is the same bytes as
// without them.
func TestOpenAIFieldsAcceptedAsIgnored(t *testing.T) {
	img := testPNG(t, 20, 10)
	plain := postEdit(t, mustServer(t), "plain", standardParts(img, "invert")...)
	require.Equal(t, http.StatusOK, plain.Code, plain.Body.String())

	s, recs := newTestServer(t, nil)
	rr := postEdit(t, s, "openai", standardParts(img, "invert",
		part{name: "quality", value: "High"}, part{name: "complexity", value: "low"},
		part{name: "input_fidelity", value: "high"}, part{name: "background", value: "opaque"},
		part{name: "output_format", value: "png"}, part{name: "output_compression", value: "85"},
		part{name: "stream", value: "false"}, part{name: "user", value: "user-1234"},
		part{name: "safety_identifier", value: "sha256:abcd"})...)
	require.Equal(t, http.StatusOK, rr.Code, rr.Body.String())
	var resp struct {
		Data    []imageData       `json:"data"`
		Ignored map[string]string `json:"ignored"`
	}
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	want := map[string]string{"quality": "high", "complexity": "low", "input_fidelity": "high", "background": "opaque",
		"output_format": "png", "output_compression": "85", "stream": "false", "user": "9 bytes", "safety_identifier": "11 bytes"}
	assert.Equal(t, want, resp.Ignored)
	assert.Equal(t, b64PNG(t, plain), resp.Data[0].B64JSON, "the same edit as without the fields")
	lines := recs.lines(t)
	require.Len(t, lines, 1)
	assert.Equal(t, want, lines[0].Ignored)
	assert.NotContains(t, recs.buf.String(), "user-1234", "an identifier is recorded by its length only")

	// Without them, no "ignored" in the answer, null in the record.
	assert.NotContains(t, plain.Body.String(), `"ignored"`)
	s, recs = newTestServer(t, nil)
	require.Equal(t, http.StatusOK, postEdit(t, s, "x", standardParts(img, "invert")...).Code)
	assert.Contains(t, recs.buf.String(), `"ignored":null`)
}

func mustServer(t *testing.T) *Server {
	s, _ := newTestServer(t, nil)
	return s
}

func b64PNG(t *testing.T, rr interface{ Result() *http.Response }) string {
	t.Helper()
	var resp struct {
		Data []imageData `json:"data"`
	}
	require.NoError(t, json.NewDecoder(rr.Result().Body).Decode(&resp))
	require.Len(t, resp.Data, 1)
	return resp.Data[0].B64JSON
}

// What refedit cannot honour is a 400 naming the field, with why and what to send.
func TestOpenAIFieldsRefusedByName(t *testing.T) {
	img := testPNG(t, 8, 8)
	for _, tt := range []struct {
		name  string
		extra part
		want  string
	}{
		{"jpeg output", part{name: "output_format", value: "jpeg"}, `output_format "jpeg" is not supported: want one of png`},
		{"webp output", part{name: "output_format", value: "webp"}, `want one of png`},
		{"transparent background", part{name: "background", value: "transparent"}, `background "transparent" is not supported: refedit's output is opaque RGB`},
		{"quality out of OpenAI's set", part{name: "quality", value: "ultra"}, `quality "ultra" is not supported: want one of auto, low, medium, high, xhigh, max, standard`},
		{"streaming", part{name: "stream", value: "true"}, `stream "true" is not supported: want one of false`},
		{"compression over 100", part{name: "output_compression", value: "101"}, "want an integer in 0..100"},
		{"compression not a number", part{name: "output_compression", value: "-5"}, "want an integer in 0..100"},
		{"mask", part{name: "mask", value: string(img), filename: "mask.png"}, "mask is not supported: a mask restricts the edit"},
		{"markup", part{name: "markup", value: string(img), filename: "m.png"}, "markup is not supported"},
		{"partial images", part{name: "partial_images", value: "2"}, "partial_images is not supported: partial images are streamed"},
		{"gif frames", part{name: "frame_count", value: "4"}, "frame_count is not supported"},
		{"svg author", part{name: "svg[model]", value: "x"}, "svg[model] is not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, recs := newTestServer(t, nil)
			rr := postEdit(t, s, "", standardParts(img, "invert", tt.extra)...)
			require.Equal(t, http.StatusBadRequest, rr.Code, rr.Body.String())
			e := decodeError(t, rr)
			require.NotNil(t, e.Error.Param)
			assert.Equal(t, tt.extra.name, *e.Error.Param)
			assert.Contains(t, e.Error.Message, tt.want)
			require.Len(t, recs.lines(t), 1)
		})
	}
}

// size=auto is the input's size; WebP input decodes as PNG and JPEG do.
func TestSizeAutoAndWebP(t *testing.T) {
	webp, err := os.ReadFile(filepath.Join("..", "edit", "testdata", "gradient-16x8-lossless.webp"))
	require.NoError(t, err)
	s, _ := newTestServer(t, nil)
	rr := postEdit(t, s, "", standardParts(webp, "mirror", part{name: "size", value: "auto"})...)
	require.Equal(t, http.StatusOK, rr.Code, rr.Body.String())
	var resp editResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	assert.Equal(t, [2]int{16, 8}, [2]int{resp.Settings.Width, resp.Settings.Height})

	rr = postEdit(t, s, "", standardParts(testPNG(t, 8193, 1), "mirror", part{name: "size", value: "auto"})...)
	require.Equal(t, http.StatusBadRequest, rr.Code, rr.Body.String())
	e := decodeError(t, rr)
	assert.Equal(t, "size", *e.Error.Param)
	assert.Contains(t, e.Error.Message, "is 8193x1: want W and H in 1..8192; give size=WxH")
}

// pngWithPadding is img with a private ancillary chunk of n bytes after IHDR: a valid
// PNG of the same pixels (decoders skip such chunks, as they skip large metadata) that
// is n bytes longer.
func pngWithPadding(t *testing.T, img []byte, n int) []byte {
	t.Helper()
	const ihdrEnd = 8 + 8 + 13 + 4
	var chunk bytes.Buffer
	binary.Write(&chunk, binary.BigEndian, uint32(n))
	chunk.WriteString("quAl")
	chunk.Write(make([]byte, n))
	binary.Write(&chunk, binary.BigEndian, crc32.ChecksumIEEE(chunk.Bytes()[4:]))
	return append(append(bytes.Clone(img[:ihdrEnd]), chunk.Bytes()...), img[ihdrEnd:]...)
}

// OpenAI takes an image of up to 50 MB: at the default limits one is edited. (A body
// over the limit is 413: TestHostileInputs; the pytest of the real binary sends both.)
func TestFiftyMegabyteImageAtTheDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: sends 50 MB through the handler")
	}
	img := pngWithPadding(t, testPNG(t, 16, 16), 50_000_000)
	s, _ := newTestServer(t, nil)
	rr := postEdit(t, s, "", standardParts(img, "invert")...)
	require.Equal(t, http.StatusOK, rr.Code, rr.Body.String()[:min(500, rr.Body.Len())])
}
