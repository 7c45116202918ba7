package harness

import (
	"image"
	"image/color"
)

// deep reports whether img holds more than 8 bits per channel (a 16-bit PNG).
func deep(img image.Image) bool {
	switch img.ColorModel() {
	case color.RGBA64Model, color.NRGBA64Model, color.Gray16Model:
		return true
	}
	return false
}

// deepDiff counts the pixels whose 16-bit non-premultiplied values differ, and names the
// first: what an 8-bit comparison of a 16-bit PNG cannot see.
func deepDiff(a, b image.Image) (n, firstX, firstY int) {
	ba, bb := a.Bounds(), b.Bounds()
	firstX, firstY = -1, -1
	for y := 0; y < ba.Dy(); y++ {
		for x := 0; x < ba.Dx(); x++ {
			ca := color.NRGBA64Model.Convert(a.At(ba.Min.X+x, ba.Min.Y+y))
			cb := color.NRGBA64Model.Convert(b.At(bb.Min.X+x, bb.Min.Y+y))
			if ca != cb {
				if n == 0 {
					firstX, firstY = x, y
				}
				n++
			}
		}
	}
	return n, firstX, firstY
}
