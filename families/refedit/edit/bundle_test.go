package edit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildIsDeterministic(t *testing.T) {
	a, err := Build(BuiltinDefaults()).Encode()
	require.NoError(t, err)
	b, err := Build(BuiltinDefaults()).Encode()
	require.NoError(t, err)
	require.Equal(t, a, b)
	assert.Equal(t, SHA256(a), SHA256(b))
	// Pinned: a change here changes every bundle's identity; bump it on purpose only.
	assert.Equal(t, "50b20e67de1303e64a65fa1d98196f1eda021710991c80218aa4c1f2b406a241", SHA256(a), "bundle bytes changed:\n%s", a)
}

func TestBundleRoundTrip(t *testing.T) {
	b := Build(Defaults{Width: 64, Height: 32, NumInferenceSteps: 7, GuidanceScale: 1.5, Seed: 9})
	data, err := b.Encode()
	require.NoError(t, err)
	p, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, b, p.Bundle())
	assert.Equal(t, SHA256(data), p.SHA256())
	require.Len(t, p.Edits(), 14)
	again, err := p.Bundle().Encode()
	require.NoError(t, err)
	assert.Equal(t, data, again)
}

func TestLoadReadsFile(t *testing.T) {
	data, err := Build(BuiltinDefaults()).Encode()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "refedit.bundle")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	p, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, SHA256(data), p.SHA256())

	_, err = Load(filepath.Join(t.TempDir(), "missing.bundle"))
	assert.ErrorContains(t, err, "load bundle")
}

func TestParseRejectsBadBundles(t *testing.T) {
	good, err := Build(BuiltinDefaults()).Encode()
	require.NoError(t, err)
	tests := []struct {
		name string
		edit func(b *Bundle)
		raw  []byte
		want string
	}{
		{name: "format", edit: func(b *Bundle) { b.Format = "other" }, want: `bundle format "other"`},
		{name: "version", edit: func(b *Bundle) { b.Version = 1 }, want: "format version 1"},
		{name: "no checkpoint", edit: func(b *Bundle) { b.Checkpoint = "" }, want: "names no checkpoint"},
		{name: "precision", edit: func(b *Bundle) { b.Precision = "fp16" }, want: `precision "fp16"`},
		{name: "no edits", edit: func(b *Bundle) { b.Edits = nil }, want: "no edits"},
		{name: "duplicate edit", edit: func(b *Bundle) { b.Edits = append(b.Edits, b.Edits[0]) }, want: "appears twice"},
		{name: "shared keyword", edit: func(b *Bundle) { b.Edits[1].Keywords = append(b.Edits[1].Keywords, "grayscale") }, want: "also a keyword"},
		{name: "upper keyword", edit: func(b *Bundle) { b.Edits[0].Keywords = []string{"Gray"} }, want: "lowercase"},
		{name: "unknown kind", edit: func(b *Bundle) { b.Edits[0].Op.Kind = "swirl" }, want: `op kind "swirl"`},
		{name: "unused field", edit: func(b *Bundle) { b.Edits[0].Op.Levels = 3 }, want: "does not use"},
		{name: "no-op remap", edit: func(b *Bundle) { b.Edits[7].Op.FlipX, b.Edits[7].Op.FlipY = false, false }, want: "changes nothing"},
		{name: "even kernel", edit: func(b *Bundle) { b.Edits[10].Op.Kernel = []float64{0.5, 0.5} }, want: "odd number"},
		{name: "zero grain", edit: func(b *Bundle) { b.Edits[13].Op.Amplitude = 0 }, want: "amplitude"},
		{name: "default steps", edit: func(b *Bundle) { b.Defaults.NumInferenceSteps = 0 }, want: "bundle defaults: num_inference_steps: want an integer in 1..100, got 0"},
		{name: "default size", edit: func(b *Bundle) { b.Defaults.Width = 5 }, want: "bundle defaults: size: 5x0"},
		{name: "max pixels", edit: func(b *Bundle) { b.Limits.MaxPixels = 0 }, want: "max_pixels"},
		{name: "unknown JSON field", raw: bytes.Replace(good, []byte(`"precision"`), []byte(`"colour": 1, "precision"`), 1), want: "unknown field"},
		{name: "trailing data", raw: append(append([]byte{}, good...), []byte("{}")...), want: "trailing data"},
		{name: "not JSON", raw: []byte("PK\x03\x04"), want: "decode bundle JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := tt.raw
			if tt.edit != nil {
				b := Build(BuiltinDefaults())
				tt.edit(&b)
				var err error
				raw, err = encodeUnchecked(b)
				require.NoError(t, err)
			}
			_, err := Parse(raw)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestTamperedBundleChangesOutput(t *testing.T) {
	img := gradientPNG(t, 8, 8)
	run := func(p *Program) string {
		e, err := p.Match("make it grayscale")
		require.NoError(t, err)
		s, err := p.ParseSettings(nil)
		require.NoError(t, err)
		res, err := p.Apply(img, e, s)
		require.NoError(t, err)
		return res.OutputSHA256
	}
	data, err := Build(BuiltinDefaults()).Encode()
	require.NoError(t, err)
	tampered := bytes.Replace(data, []byte("0.587"), []byte("0.5"), 1)
	require.NotEqual(t, data, tampered)

	p, err := Parse(data)
	require.NoError(t, err)
	q, err := Parse(tampered)
	require.NoError(t, err)
	assert.NotEqual(t, p.SHA256(), q.SHA256())
	assert.NotEqual(t, run(p), run(q), "the apply path must read its constants from the bundle")
}

func TestWithMaxPixels(t *testing.T) {
	p := builtinProgram(t)
	q, err := p.WithMaxPixels(100)
	require.NoError(t, err)
	assert.Equal(t, 100, q.Limits().MaxPixels)
	assert.Equal(t, 2048*2048, p.Limits().MaxPixels, "the original is unchanged")
	_, err = p.WithMaxPixels(0)
	assert.Error(t, err)
}

// encodeUnchecked writes a bundle without validating it, to test that Parse does.
func encodeUnchecked(b Bundle) ([]byte, error) {
	var buf bytes.Buffer
	enc := newBundleEncoder(&buf)
	err := enc.Encode(b)
	return buf.Bytes(), err
}
