package trtmcdouble

import (
	"image"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func editSettings(w, h int) Settings {
	s := DefaultSettings(BundleHeader{})
	s.Width, s.Height, s.Seed, s.Steps = w, h, 42, 20
	return s
}

func TestEditSizeAndDefaults(t *testing.T) {
	src := testPhoto(t)
	for _, size := range [][2]int{{64, 64}, {512, 512}, {100, 37}, {1, 1}} {
		out, err := Edit(src, "Paint it blue.", editSettings(size[0], size[1]))
		require.NoError(t, err)
		img := decodeTestPNG(t, out)
		assert.Equal(t, size[0], img.Bounds().Dx())
		assert.Equal(t, size[1], img.Bounds().Dy())
	}
	d := DefaultSettings(BundleHeader{})
	assert.Equal(t, [2]int{1024, 1024}, [2]int{d.Width, d.Height}, "no bundle size: 1024x1024")
	d = DefaultSettings(BundleHeader{ImageWidth: 640, ImageHeight: 382, NumInferenceSteps: 20})
	assert.Equal(t, [3]int{640, 382, 20}, [3]int{d.Width, d.Height, d.Steps}, "the bundle's static size and steps")
}

func TestEditChangesMostPixels(t *testing.T) {
	inputs := map[string][]byte{
		"photo jpeg":   testPhoto(t),
		"house png":    fixtureImage(t, "house-640x382.png"),
		"checker png":  fixtureImage(t, "checker-640x382.png"),
		"gradient png": encodeTestPNG(t, gradient(300, 200)),
		"grey png":     encodeTestPNG(t, uniform(50, 50, color.NRGBA{128, 128, 128, 255})),
		"black png":    encodeTestPNG(t, uniform(50, 50, color.NRGBA{0, 0, 0, 255})),
	}
	prompts := []string{"Repaint the house in soft watercolors.", "Make it night.", "x"}
	for name, src := range inputs {
		img, err := decodeImage(src)
		require.NoError(t, err)
		resized := resize(img, 128, 96)
		out, err := Edit(src, prompts[0], editSettings(128, 96))
		require.NoError(t, err)
		assert.Equal(t, decodeTestPNG(t, out).Pix, mustEdit(t, img, prompts[0], editSettings(128, 96)).Pix, "Edit is editImage, encoded")
		for _, prompt := range prompts {
			for seed := range int64(4) {
				s := editSettings(128, 96)
				s.Seed = seed
				got := mustEdit(t, img, prompt, s)
				assert.GreaterOrEqual(t, changedFraction(t, got, resized), 0.30, "%s, %q, seed %d", name, prompt, seed)
				assert.False(t, isConstant(got), "%s: the output is never a constant image", name)
			}
		}
	}
}

func TestEditDependsOnTheReferenceImage(t *testing.T) {
	refs := [][]byte{testPhoto(t), fixtureImage(t, "checker-640x382.png"), fixtureImage(t, "rings-640x382.png"), fixtureImage(t, "bars-640x382.png")}
	for i := range refs {
		for j := i + 1; j < len(refs); j++ {
			a, err := Edit(refs[i], "Make it autumn.", editSettings(160, 96))
			require.NoError(t, err)
			b, err := Edit(refs[j], "Make it autumn.", editSettings(160, 96))
			require.NoError(t, err)
			assert.Greater(t, changedFraction(t, decodeTestPNG(t, a), decodeTestPNG(t, b)), 0.10, "refs %d and %d", i, j)
		}
	}
}

func TestEditDependsOnPromptAndSettings(t *testing.T) {
	src := testPhoto(t)
	base, err := Edit(src, "Make it autumn.", editSettings(96, 96))
	require.NoError(t, err)
	variants := map[string]func(*Settings) string{
		"prompt":   func(*Settings) string { return "Make it spring." },
		"seed":     func(s *Settings) string { s.Seed = 43; return "Make it autumn." },
		"steps":    func(s *Settings) string { s.Steps = 21; return "Make it autumn." },
		"guidance": func(s *Settings) string { s.GuidanceScale = 2; return "Make it autumn." },
		"negative": func(s *Settings) string { s.NegativePrompt = "blurry"; return "Make it autumn." },
		"latents":  func(s *Settings) string { s.Latents = strings.Repeat("ab", 32); return "Make it autumn." },
	}
	for name, vary := range variants {
		s := editSettings(96, 96)
		prompt := vary(&s)
		out, err := Edit(src, prompt, s)
		require.NoError(t, err)
		assert.NotEqual(t, base, out, name)
	}
	// TRTMC's Qwen-Image ignores cfg_scale: its true CFG scale is guidance_scale, else the
	// bundle default 4.0 (TrueCFG).
	same := map[string]func(*Settings){
		"cfg scale":           func(s *Settings) { s.CFGScale = 5 },
		"no cfg scale":        func(s *Settings) { s.CFGScale = 0 },
		"guidance 4 is unset": func(s *Settings) { s.GuidanceScale = DefaultCFGScale },
		"guidance 0 is unset": func(s *Settings) { s.GuidanceScale = 0 },
	}
	for name, vary := range same {
		s := editSettings(96, 96)
		vary(&s)
		out, err := Edit(src, "Make it autumn.", s)
		require.NoError(t, err)
		assert.Equal(t, base, out, name)
	}
	assert.Equal(t, -1.0, DefaultGuidanceScale)
	assert.Equal(t, 4.0, Settings{GuidanceScale: DefaultGuidanceScale, CFGScale: 9}.TrueCFG(), "unset guidance: the bundle default")
	assert.Equal(t, 2.5, Settings{GuidanceScale: 2.5, CFGScale: 9}.TrueCFG())

	// Supplied noise replaces the seed's: with latents set, the seed no longer matters,
	// and other noise is another image.
	withLatents := func(seed int64, sum string) []byte {
		s := editSettings(96, 96)
		s.Seed, s.Latents = seed, sum
		out, err := Edit(src, "Make it autumn.", s)
		require.NoError(t, err)
		return out
	}
	la, lb := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	assert.Equal(t, withLatents(1, la), withLatents(2, la), "the noise, not the seed")
	assert.NotEqual(t, withLatents(1, la), withLatents(1, lb), "other noise, another image")

	seedA, _ := Edit(src, "Make it autumn.", editSettings(96, 96))
	s := editSettings(96, 96)
	s.Seed = 7
	seedB, _ := Edit(src, "Make it autumn.", s)
	assert.Greater(t, changedFraction(t, decodeTestPNG(t, seedA), decodeTestPNG(t, seedB)), 0.05, "another seed is visibly another image")
}

func TestEditIsDeterministic(t *testing.T) {
	src := testPhoto(t)
	a, err := Edit(src, "Make it autumn.", editSettings(200, 120))
	require.NoError(t, err)
	b, err := Edit(src, "Make it autumn.", editSettings(200, 120))
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestEditRejects(t *testing.T) {
	src := testPhoto(t)
	_, err := Edit([]byte("GIF89a"), "p", editSettings(8, 8))
	assert.ErrorContains(t, err, "neither PNG nor JPEG")
	_, err = Edit([]byte("\x89PNG\r\n\x1a\ntruncated"), "p", editSettings(8, 8))
	assert.ErrorContains(t, err, "PNG")
	_, err = Edit([]byte{0xff, 0xd8, 0xff, 0x00}, "p", editSettings(8, 8))
	assert.ErrorContains(t, err, "JPEG")
	for _, s := range []Settings{editSettings(0, 8), editSettings(8, -1), editSettings(5000, 8)} {
		_, err = Edit(src, "p", s)
		assert.ErrorContains(t, err, "width and height must be")
	}
	s := editSettings(8, 8)
	s.Steps = 0
	_, err = Edit(src, "p", s)
	assert.ErrorContains(t, err, "num_inference_steps")
}

func mustEdit(t *testing.T, img image.Image, prompt string, s Settings) *image.NRGBA {
	t.Helper()
	out, err := editImage(img, prompt, s)
	require.NoError(t, err)
	return out
}

func isConstant(img *image.NRGBA) bool {
	for i := 4; i < len(img.Pix); i++ {
		if img.Pix[i] != img.Pix[i%4] {
			return false
		}
	}
	return true
}

func BenchmarkEdit1024(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(repoRoot, legacyTree, legacyModelDir, "data/test_img.jpeg"))
	if err != nil {
		b.Fatal(err)
	}
	s := editSettings(1024, 1024)
	for b.Loop() {
		if _, err := Edit(src, "Make it autumn.", s); err != nil {
			b.Fatal(err)
		}
	}
}

// The sampler loop ends exactly on its target at any step count: the pixels are the
// look's, and only the time depends on the steps.
func TestDenoiseEndsOnTheTarget(t *testing.T) {
	target := make([]uint8, 4*37*23)
	for i := range target {
		target[i] = uint8(i*7 + i/5)
	}
	for _, steps := range []int{1, 2, 7, 20, 50} {
		got := slices.Clone(target)
		denoise(got, 4*37, steps, [32]byte{byte(steps)})
		assert.Equal(t, target, got, "%d steps", steps)
	}
}
