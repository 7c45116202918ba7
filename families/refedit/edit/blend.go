package edit

// blend is the guidance step out = B + g*(E - B), written into edited.
func blend(base, edited *raster, g float32) {
	for i, b := range base.pix {
		edited.pix[i] = b + float32(g*(edited.pix[i]-b))
	}
}
