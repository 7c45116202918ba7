package harness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"qualkit/internal/wire"
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

	lines := bytes.Split(bytes.TrimSpace(must(fx.AIPerfInput(wire.OpenAI{}))), []byte("\n"))
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

// copyFixtures copies the workload manifest and the image pool to a temp dir a test may
// damage, keeping their layout, and returns the copy's manifest and pool folder.
func copyFixtures(t *testing.T) (string, string) {
	t.Helper()
	dst := t.TempDir()
	for _, dir := range []string{"image_edit", "images"} {
		src := filepath.Join("../../fixtures", dir)
		entries, err := os.ReadDir(src)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, dir), 0o755))
		for _, e := range entries {
			if !e.IsDir() {
				require.NoError(t, copyFile(filepath.Join(dst, dir, e.Name()), filepath.Join(src, e.Name())))
			}
		}
	}
	return filepath.Join(dst, "image_edit", "manifest.json"), filepath.Join(dst, "images")
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), old)
	require.NoError(t, os.WriteFile(path, bytes.Replace(raw, []byte(old), []byte(new), 1), 0o644))
}

// Every workload manifest takes its images from the one pool, at the pinned sha256.
func TestManifestsShareThePool(t *testing.T) {
	manifests, err := filepath.Glob("../../fixtures/*/manifest.json")
	require.NoError(t, err)
	require.Len(t, manifests, 4)
	for _, m := range manifests {
		fx, err := LoadFixtures(m)
		require.NoError(t, err, m)
		for _, im := range fx.Images {
			abs, _ := filepath.Abs(fx.ImagePath(im.File))
			pool, _ := filepath.Abs("../../fixtures/images")
			assert.Equal(t, pool, filepath.Dir(abs), "%s: %s is read from the pool", m, im.File)
			assert.NotEmpty(t, im.Provenance, "%s: %s gets the pool's provenance", m, im.File)
		}
	}
	pngs, err := filepath.Glob("../../fixtures/*/*.png")
	require.NoError(t, err)
	for _, p := range pngs {
		assert.Equal(t, "images", filepath.Base(filepath.Dir(p)), "%s: images live in fixtures/images only", p)
	}
}

func TestLoadFixturesRejectsTampering(t *testing.T) {
	p, pool := copyFixtures(t)
	img := filepath.Join(pool, "house-640x382.png")
	data, err := os.ReadFile(img)
	require.NoError(t, err)
	data[len(data)/2] ^= 0xff
	require.NoError(t, os.WriteFile(img, data, 0o644))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "image house-640x382.png: sha256")
	require.ErrorContains(t, err, "restore the file")

	p, pool = copyFixtures(t)
	require.NoError(t, os.Remove(filepath.Join(pool, "rings-640x382.png")))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "rings-640x382.png")

	p, _ = copyFixtures(t)
	edit(t, p, `"image": "bars-640x382.png"`, `"image": "absent.png"`)
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, `names image "absent.png", which the manifest does not list`)

	// A pool entry recomputed for a changed image no longer matches the workload's pin.
	p, pool = copyFixtures(t)
	edit(t, filepath.Join(pool, "pool.json"), "31b3d612ae0522392396aee17cbbed14c3608ee4861a509b9a783305458e963e", strings.Repeat("0", 64))
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "image house-640x382.png: the manifest pins sha256 31b3d612")

	p, _ = copyFixtures(t)
	edit(t, p, `"file": "bars-640x382.png"`, `"file": "stray.png"`)
	_, err = LoadFixtures(p)
	require.ErrorContains(t, err, "image stray.png is not in the pool")
}

func TestExtraInputsKeepWhitespaceValues(t *testing.T) {
	fx, err := LoadFixtures("../../fixtures/qwen_image_edit/manifest.json")
	require.NoError(t, err)
	assert.Contains(t, fx.ExtraInputs(), `"negative_prompt":" "`, "the published negative prompt is one space, not empty")
	assert.Equal(t, " ", fx.FormSettings()["negative_prompt"])
}
