package trtmcdouble

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"qualkit/families/qwen_image/latents"
)

// Qwen-Image's latent layout (latents.py @ d3e1a549 § _qwen_image): the transformer's
// in_channels and the VAE's temporal downsample entries of the checkpoint the double
// plays; its fake Hugging Face cache states the same (HFCache).
const (
	transformerInChannels = 64
	vaeTemporalDownsample = 3
)

// latentCount is how many float32 values the initial noise of an HxW edit holds.
func latentCount(height, width int) (int, error) {
	shape, err := latents.QwenImageShape(transformerInChannels, vaeTemporalDownsample, height, width)
	if err != nil {
		return 0, err
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n, nil
}

// readLatents reads a raw float32 noise file as TRTMC's worker does (benchmark_worker.cpp
// @ ca938e40 § read_float32, with its messages), checks it holds an HxW edit's noise (the
// double's own rule: the real worker leaves the count to the family's runtime), and
// returns its sha256, which stands for the noise in the double's edit (Settings.Latents).
func readLatents(path string, height, width int) (string, error) {
	if path == "" {
		return "", errors.New("initial_latents_path must name a raw float32 file")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("cannot read float32 input %s", path)
	}
	if len(b) == 0 || len(b)%4 != 0 {
		return "", fmt.Errorf("invalid float32 input %s", path)
	}
	want, err := latentCount(height, width)
	if err != nil {
		return "", err
	}
	if len(b)/4 != want {
		return "", fmt.Errorf("initial latents %s hold %d float32 values; a %dx%d edit's noise is %d (qualkit contract double)", path, len(b)/4, width, height, want)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
