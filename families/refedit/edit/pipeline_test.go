package edit

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func apply(t testing.TB, p *Program, img []byte, prompt string, fields map[string]string) (Result, error) {
	t.Helper()
	e, err := p.Match(prompt)
	require.NoError(t, err)
	s, err := p.ParseSettings(fields)
	require.NoError(t, err)
	return p.Apply(img, e, s)
}

func TestApplyWritesRequestedSizeAsRGBPNG(t *testing.T) {
	p := builtinProgram(t)
	res, err := apply(t, p, gradientPNG(t, 20, 10), "blur it", map[string]string{"size": "32x24", "seed": "5"})
	require.NoError(t, err)
	assert.Equal(t, Effective{Edit: "blur", Settings: Settings{Width: 32, Height: 24, NumInferenceSteps: 4, GuidanceScale: 1, Seed: 5}, Precision: "fp32"}, res.Settings)
	assert.Equal(t, SHA256(res.PNG), res.OutputSHA256)

	// IHDR: 8-bit depth, colour type 2 (RGB, no alpha).
	require.True(t, bytes.HasPrefix(res.PNG, []byte(pngMagic)))
	ihdr := res.PNG[16:29]
	assert.Equal(t, uint32(32), binary.BigEndian.Uint32(ihdr[0:]))
	assert.Equal(t, uint32(24), binary.BigEndian.Uint32(ihdr[4:]))
	assert.Equal(t, []byte{8, 2}, ihdr[8:10])
	assert.Equal(t, image.Rect(0, 0, 32, 24), decodePNG(t, res.PNG).Bounds())
}

func TestApplySizeDefaults(t *testing.T) {
	img := gradientPNG(t, 12, 9)
	res, err := apply(t, builtinProgram(t), img, "invert", nil)
	require.NoError(t, err)
	assert.Equal(t, [2]int{12, 9}, [2]int{res.Settings.Width, res.Settings.Height}, "no bundle default: the input size")

	sized := programFrom(t, Build(Defaults{Width: 6, Height: 4, NumInferenceSteps: 4, GuidanceScale: 1}))
	res, err = apply(t, sized, img, "invert", nil)
	require.NoError(t, err)
	assert.Equal(t, [2]int{6, 4}, [2]int{res.Settings.Width, res.Settings.Height}, "the bundle default")
}

// size=auto is the input's size whatever the bundle's default, and a clear 400 on size
// when the input's size is not one this program may write.
func TestApplySizeAuto(t *testing.T) {
	sized := programFrom(t, Build(Defaults{Width: 6, Height: 4, NumInferenceSteps: 4, GuidanceScale: 1}))
	for _, v := range []string{"auto", " AUTO "} {
		res, err := apply(t, sized, gradientPNG(t, 12, 9), "invert", map[string]string{"size": v})
		require.NoError(t, err, v)
		assert.Equal(t, [2]int{12, 9}, [2]int{res.Settings.Width, res.Settings.Height}, "size=%q: the input's size, not the bundle's 6x4", v)
	}
	webp, err := apply(t, sized, testWebP(t, "lossless"), "invert", map[string]string{"size": "auto"})
	require.NoError(t, err)
	assert.Equal(t, [2]int{16, 8}, [2]int{webp.Settings.Width, webp.Settings.Height})

	// 8193x1 is within the pixel limit but over the side limit: no size it could ask for.
	_, err = apply(t, sized, gradientPNG(t, 8193, 1), "invert", map[string]string{"size": "auto"})
	require.ErrorIs(t, err, ErrInvalid)
	var ie *InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, FieldSize, ie.Param)
	assert.Contains(t, err.Error(), "auto (the input's size, also when no size is given and the bundle has no default) is 8193x1: want W and H in 1..8192; give size=WxH")
}

func TestApplyIsDeterministic(t *testing.T) {
	p := builtinProgram(t)
	img := gradientPNG(t, 16, 16)
	for _, prompt := range []string{"grain", "blur", "sharpen", "pixelate", "sepia", "rotate"} {
		a, err := apply(t, p, img, prompt, map[string]string{"seed": "42", "size": "24x20"})
		require.NoError(t, err)
		b, err := apply(t, p, img, prompt, map[string]string{"seed": "42", "size": "24x20"})
		require.NoError(t, err)
		assert.Equal(t, a.PNG, b.PNG, prompt)
	}
}

func TestApplyPixelsEndToEnd(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 2, 1))
	img.SetRGBA(0, 0, color.RGBA{255, 0, 0, 255})
	img.SetRGBA(1, 0, color.RGBA{51, 102, 153, 255})
	in := encodeTestPNG(t, img)
	p := builtinProgram(t)

	res, err := apply(t, p, in, "grayscale", nil)
	require.NoError(t, err)
	out := decodePNG(t, res.PNG).(*image.RGBA)
	// 0.299*255 = 76.245 -> 76; (0.299*51 + 0.587*102 + 0.114*153) = 92.565 -> 93.
	assert.Equal(t, []uint8{76, 76, 76, 255, 93, 93, 93, 255}, out.Pix)

	res, err = apply(t, p, in, "grayscale", map[string]string{"guidance_scale": "0.5"})
	require.NoError(t, err)
	out = decodePNG(t, res.PNG).(*image.RGBA)
	// Halfway: R (255+76.245)/2 = 165.62 -> 166, G 38.12 -> 38; pixel 2 (51+92.565)/2 = 71.78 -> 72 ...
	assert.Equal(t, []uint8{166, 38, 38, 255, 72, 97, 123, 255}, out.Pix)

	res, err = apply(t, p, in, "mirror", nil)
	require.NoError(t, err)
	out = decodePNG(t, res.PNG).(*image.RGBA)
	assert.Equal(t, []uint8{51, 102, 153, 255, 255, 0, 0, 255}, out.Pix)
}

func TestApplyRejectsBadSettingsAndImages(t *testing.T) {
	p := builtinProgram(t)
	e, err := p.Match("blur")
	require.NoError(t, err)
	_, err = p.Apply(gradientPNG(t, 4, 4), e, Settings{NumInferenceSteps: 0, GuidanceScale: 1})
	assert.ErrorContains(t, err, "num_inference_steps")
	_, err = p.Apply(gradientPNG(t, 4, 4), nil, Settings{NumInferenceSteps: 1, GuidanceScale: 1})
	assert.Error(t, err)

	small, err := p.WithMaxPixels(15)
	require.NoError(t, err)
	_, err = small.Apply(gradientPNG(t, 4, 4), e, Settings{NumInferenceSteps: 1, GuidanceScale: 1})
	assert.ErrorIs(t, err, ErrTooLarge)
	_, err = p.Apply(pngHeaderOnly(100000, 100000), e, Settings{NumInferenceSteps: 1, GuidanceScale: 1})
	assert.ErrorIs(t, err, ErrTooLarge)
}

func BenchmarkApply1024(b *testing.B) {
	p := builtinProgram(b)
	img := photoPNG(b, 1024, 1024)
	for _, prompt := range []string{"grayscale", "blur", "grain", "pixelate"} {
		b.Run(prompt, func(b *testing.B) {
			e, err := p.Match(prompt)
			require.NoError(b, err)
			s, err := p.ParseSettings(map[string]string{"size": "1024x1024", "seed": "42"})
			require.NoError(b, err)
			b.SetBytes(int64(len(img)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Apply(img, e, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
