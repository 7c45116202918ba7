package evidencecheck

import (
	"image"
	"image/draw"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toNRGBA's copy of an opaque RGBA image is what draw.Draw makes of it, sub-images
// included; an image with one pixel not opaque takes draw.Draw's path.
func TestToNRGBAIsDrawsConversion(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	full := image.NewRGBA(image.Rect(0, 0, 37, 23))
	for i := range full.Pix {
		full.Pix[i] = byte(r.UintN(256))
		if i%4 == 3 {
			full.Pix[i] = 0xff
		}
	}
	withAlpha := image.NewRGBA(full.Rect)
	copy(withAlpha.Pix, full.Pix)
	withAlpha.Pix[4*40+3] = 0x80 // premultiplied: colour bytes above alpha are clamped by the model
	for name, img := range map[string]*image.RGBA{
		"opaque":     full,
		"sub-image":  full.SubImage(image.Rect(5, 3, 30, 20)).(*image.RGBA),
		"not opaque": withAlpha,
	} {
		b := img.Bounds()
		want := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(want, want.Rect, img, b.Min, draw.Src)
		got := toNRGBA(img)
		require.Equal(t, want.Rect, got.Rect, name)
		assert.Equal(t, want.Pix, got.Pix, name)
	}
	_, ok := opaqueToNRGBA(withAlpha)
	assert.False(t, ok, "a pixel with alpha 0x80 is not opaque")
}
