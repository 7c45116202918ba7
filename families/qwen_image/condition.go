package qwenimage

import (
	"bytes"
	"fmt"
	"image"
	_ "image/jpeg" // TRTMC's test photo is a JPEG
	_ "image/png"
	"os"
)

// imageSize decodes only an image file's header.
func imageSize(path string) (int, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return cfg.Width, cfg.Height, nil
}
