package refedit

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xdraw "golang.org/x/image/draw"

	"qualkit/families/refedit/edit"
	"qualkit/internal/fixtures"
	"qualkit/internal/judge"
)

// The output gate's thresholds, from this family's side (README "Gates and their
// thresholds"): every request of the reference row's workload changes enough of its
// image to pass, and a server that only resizes the input, with any common kernel, fails.
func TestOutputGateSeparatesEditsFromResizes(t *testing.T) {
	fx, err := fixtures.Load(filepath.Join("..", "..", "fixtures", "image_edit", "manifest.json"))
	require.NoError(t, err)
	data, err := edit.Build(edit.BuiltinDefaults()).Encode()
	require.NoError(t, err)
	p, err := edit.Parse(data)
	require.NoError(t, err)
	settings, err := p.ParseSettings(fx.FormSettings())
	require.NoError(t, err)
	w, h, err := sizeOf(fx.FormSettings()["size"])
	require.NoError(t, err)

	weakest := 1.0
	for _, pair := range fx.Pairs {
		in, err := os.ReadFile(fx.ImagePath(pair.Image))
		require.NoError(t, err)
		e, err := p.Match(pair.Instruction)
		require.NoError(t, err)
		res, err := p.Apply(in, e, settings)
		require.NoError(t, err)
		f := judge.ChangedFraction(decode(t, in), decode(t, res.PNG))
		assert.GreaterOrEqual(t, f, judge.MinChangedFraction, "pair %s (%s)", pair.ID, e.Name)
		weakest = min(weakest, f)
	}
	t.Logf("weakest edit of the workload: %.1f %% of the pixels changed", 100*weakest)

	strongest := 0.0
	for _, im := range fx.Images {
		in := decode(t, mustRead(t, fx.ImagePath(im.File)))
		for name, k := range map[string]xdraw.Interpolator{"nearest": xdraw.NearestNeighbor, "approx-bilinear": xdraw.ApproxBiLinear,
			"bilinear": xdraw.BiLinear, "catmull-rom": xdraw.CatmullRom} {
			out := image.NewNRGBA(image.Rect(0, 0, w, h))
			k.Scale(out, out.Rect, in, in.Bounds(), xdraw.Src, nil)
			f := judge.ChangedFraction(in, out)
			assert.Less(t, f, judge.MinChangedFraction, "%s resized with %s", im.File, name)
			strongest = max(strongest, f)
		}
	}
	t.Logf("strongest resize-only output: %.1f %% of the pixels changed", 100*strongest)
}

func decode(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	return img
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

func sizeOf(s string) (int, int, error) {
	var w, h int
	_, err := fmt.Sscanf(s, "%dx%d", &w, &h)
	return w, h, err
}
