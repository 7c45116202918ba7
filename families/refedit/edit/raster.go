package edit

// raster is an RGB image of float32 samples in [0,1] (edits may leave that range
// until quantize clamps), row-major with the three channels interleaved.
type raster struct {
	w, h int
	pix  []float32
}

func newRaster(w, h int) *raster {
	return &raster{w: w, h: h, pix: make([]float32, w*h*3)}
}

func (r *raster) clone() *raster {
	c := &raster{w: r.w, h: r.h, pix: make([]float32, len(r.pix))}
	copy(c.pix, r.pix)
	return c
}

// offset is the index of channel 0 of pixel (x, y).
func (r *raster) offset(x, y int) int { return (y*r.w + x) * 3 }

// operation is one compiled edit: E = op(B). It must not modify b.
//
// Every float32 product below is wrapped in an explicit float32 conversion: the Go spec
// lets a compiler fuse x*y+z into one FMA unless a conversion forces the rounding, and a
// fused result differs between architectures. The conversions keep the bytes the same
// everywhere.
type operation interface {
	apply(b *raster, s Settings) *raster
}
