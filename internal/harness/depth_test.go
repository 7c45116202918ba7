package harness

import (
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Two 16-bit images that differ only below 8 bits: equal at 8 bits, not equal in full.
func TestComparePixelsAtFullDepth(t *testing.T) {
	a := image.NewNRGBA64(image.Rect(0, 0, 4, 3))
	b := image.NewNRGBA64(image.Rect(0, 0, 4, 3))
	for y := 0; y < 3; y++ {
		for x := 0; x < 4; x++ {
			c := color.NRGBA64{R: 0x1200, G: 0x3400, B: 0x5600, A: 0xffff}
			a.SetNRGBA64(x, y, c)
			b.SetNRGBA64(x, y, c)
		}
	}
	assert.Zero(t, ComparePixels(a, b).DifferingPixel)
	b.SetNRGBA64(2, 1, color.NRGBA64{R: 0x1201, G: 0x3400, B: 0x5600, A: 0xffff})
	assert.Equal(t, toNRGBA(a).Pix, toNRGBA(b).Pix, "8 bits cannot see it")
	d := ComparePixels(a, b)
	assert.Equal(t, 1, d.DifferingPixel)
	assert.Equal(t, [2]int{2, 1}, [2]int{d.FirstX, d.FirstY})

	// An 8-bit image and its 16-bit widening (v*257) are the same pixels.
	c8 := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	c8.SetNRGBA(0, 0, color.NRGBA{R: 0x12, G: 0x34, B: 0x56, A: 0xff})
	c16 := image.NewNRGBA64(image.Rect(0, 0, 1, 1))
	c16.SetNRGBA64(0, 0, color.NRGBA64{R: 0x1212, G: 0x3434, B: 0x5656, A: 0xffff})
	assert.Zero(t, ComparePixels(c8, c16).DifferingPixel)
}
