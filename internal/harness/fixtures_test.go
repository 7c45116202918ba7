package harness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const manifest = "../../fixtures/image_edit/manifest.json"

func TestLoadFixturesPinned(t *testing.T) {
	fx, err := LoadFixtures(manifest)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(fx.Pairs), 6)
	assert.Equal(t, `{"guidance_scale":1.0,"num_inference_steps":4,"seed":42,"size":"512x512"}`, fx.ExtraInputs(),
		"one JSON object, keys sorted, JSON spelling kept (1.0 stays 1.0, as AIPerf's str() sends it)")
	assert.Equal(t, "42", fx.FormSettings()["seed"])

	lines := bytes.Split(bytes.TrimSpace(must(fx.AIPerfInput())), []byte("\n"))
	require.Len(t, lines, len(fx.Pairs))
	for i, line := range lines {
		var in struct{ Text, Image string }
		require.NoError(t, json.Unmarshal(line, &in))
		assert.Equal(t, fx.Pairs[i].Instruction, in.Text)
		b64, ok := strings.CutPrefix(in.Image, "data:image/png;base64,")
		require.True(t, ok, "pair %d must be a PNG data: URL", i)
		data, err := base64.StdEncoding.DecodeString(b64)
		require.NoError(t, err)
		assert.Equal(t, fx.Image(fx.Pairs[i].Image).SHA256, bytesSHA256(data), "the data: URL carries the file's exact bytes")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// copyFixtures copies the pinned fixtures to a temp dir a test may damage.
func copyFixtures(t *testing.T) string {
	t.Helper()
	src := filepath.Dir(manifest)
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			require.NoError(t, copyFile(filepath.Join(dst, e.Name()), filepath.Join(src, e.Name())))
		}
	}
	return filepath.Join(dst, "manifest.json")
}

func TestLoadFixturesRejectsTampering(t *testing.T) {
	p := copyFixtures(t)
	img := filepath.Join(filepath.Dir(p), "house-640x382.png")
	data, err := os.ReadFile(img)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(img, data, 0o644))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "image house-640x382.png: sha256")
	require.ErrorContains(t, err, "restore the file")

	p = copyFixtures(t)
	require.NoError(t, os.Remove(filepath.Join(filepath.Dir(p), "rings-640x382.png")))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "rings-640x382.png")

	p = copyFixtures(t)
	raw, _ := os.ReadFile(p)
	raw = bytes.Replace(raw, []byte(`"image": "bars-640x382.png"`), []byte(`"image": "absent.png"`), 1)
	require.NoError(t, os.WriteFile(p, raw, 0o644))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, `names image "absent.png", which the manifest does not list`)
}

func TestExtraInputsKeepWhitespaceValues(t *testing.T) {
	fx, err := LoadFixtures("../../fixtures/qwen_image_edit/manifest.json")
	require.NoError(t, err)
	assert.Contains(t, fx.ExtraInputs(), `"negative_prompt":" "`, "the published negative prompt is one space, not empty")
	assert.Equal(t, " ", fx.FormSettings()["negative_prompt"])
}
