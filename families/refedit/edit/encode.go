package edit

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
)

// encodePNG writes an opaque image as an 8-bit RGB PNG (the encoder picks colour
// type 2 for a fully opaque RGBA image). The bytes depend only on the pixels and the
// Go release: BestSpeed keeps encoding cheap next to the edit itself.
func encodePNG(img *image.RGBA) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	return buf.Bytes(), nil
}
