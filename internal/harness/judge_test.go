package harness

import (
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The judges are the stages' decisions apart from their commands and files: each runs
// here on values alone (no process, no container, no file), under -short, and `make
// check` runs them (-run Judge).

// solid is a w x h image of one colour.
func solid(w, h int, c color.RGBA) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	return img
}

// withSquare is img with a side x side square at the top left in colour c.
func withSquare(img *image.RGBA, side int, c color.RGBA) *image.RGBA {
	out := image.NewRGBA(img.Rect)
	copy(out.Pix, img.Pix)
	for y := range side {
		for x := range side {
			out.Set(x, y, c)
		}
	}
	return out
}

// wantErr checks err against want: "" means none, else a part of its message.
func wantErr(t *testing.T, want string, err error) {
	t.Helper()
	if want == "" {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), want)
}

func TestJudgeInfluence(t *testing.T) {
	a := gradient(20, 20)
	black, white := color.RGBA{0, 0, 0, 255}, color.RGBA{255, 255, 255, 255}
	for _, tc := range []struct {
		name     string
		outs     [3]image.Image
		want     string
		repeatOK bool
	}{
		{"the image matters", [3]image.Image{a, a, solid(20, 20, black)}, "", true},
		{"the repeat differs: not deterministic", [3]image.Image{a, withSquare(a, 1, white), solid(20, 20, black)},
			"the same request twice gave different outputs (1 pixels differ", false},
		{"the other image changes nothing", [3]image.Image{a, a, a},
			"capability gap: two different reference images (x.png, y.png) gave pixel-identical outputs", true},
		// 4 of 400 pixels: 1 %, under MinInfluenceFraction.
		{"the other image barely changes it", [3]image.Image{a, a, withSquare(a, 2, white)},
			"gave outputs that barely differ (4 pixels differ", true},
		// Outputs of two sizes are no comparison: none of the pixels counts as changed.
		{"the other output another size", [3]image.Image{a, a, gradient(10, 10)}, "barely differ (sizes differ; 0.00 % of the pixels)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeInfluence(influenceInput{Instruction: "invert", Images: [2]string{"x.png", "y.png"}, Outputs: tc.outs})
			wantErr(t, tc.want, v.Err)
			assert.Equal(t, "invert", v.Result.Instruction)
			assert.Equal(t, [2]string{"x.png", "y.png"}, v.Result.Images)
			assert.Equal(t, tc.repeatOK, v.Result.Repeat.Identical())
		})
	}
}
