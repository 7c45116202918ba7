package edit

import "image"

// quantize is v8 = floor(clamp(v, 0, 1) * 255 + 0.5) into an opaque 8-bit image.
func quantize(r *raster) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, r.w, r.h))
	for k := range r.w * r.h {
		for c := range 3 {
			img.Pix[k*4+c] = quantizeSample(r.pix[k*3+c])
		}
		img.Pix[k*4+3] = 0xff
	}
	return img
}

func quantizeSample(v float32) uint8 {
	// !(v > 0) also sends a NaN to 0 rather than to an undefined conversion.
	if !(v > 0) {
		v = 0
	} else if v > 1 {
		v = 1
	}
	// The value is in [0.5, 255.5], so the conversion's truncation is the floor.
	return uint8(float32(v*255) + 0.5)
}
