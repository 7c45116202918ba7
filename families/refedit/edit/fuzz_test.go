package edit

import (
	"bytes"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"qualkit/families/refedit/internal/fuzzseed"
)

var writeFuzzSeeds = flag.Bool("write-fuzz-seeds", false,
	"rewrite the named seed files under testdata/fuzz from the seed lists in fuzz_test.go")

// fuzzMaxPixels keeps every fuzz execution small: 64x64 in and out.
const fuzzMaxPixels = 64 * 64

// Bits of FuzzDecodeAndApply's present argument: which setting fields the request
// carries. A field that is present may still be empty (a 400, not the default).
const (
	presentSize = 1 << iota
	presentSteps
	presentGuidance
	presentSeed
)

// FuzzDecodeAndApply drives arbitrary image bytes, prompt and setting strings through
// ParseSettings, Match and Apply, the path every request takes. Invariants: nothing
// panics; every error is an *InputError of a known class naming a known field; a
// success is a PNG of the effective size, within the pixel limit, whose sha256 is
// the one reported.
func FuzzDecodeAndApply(f *testing.F) {
	fuzzseed.Sync(f, "FuzzDecodeAndApply", decodeAndApplySeeds(f), *writeFuzzSeeds)
	p, err := builtinProgram(f).WithMaxPixels(fuzzMaxPixels)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, img []byte, prompt, size, steps, guidance, seed string, present byte) {
		fields := map[string]string{}
		for bit, kv := range []struct{ k, v string }{{FieldSize, size}, {FieldNumInferenceSteps, steps}, {FieldGuidanceScale, guidance}, {FieldSeed, seed}} {
			if present&(1<<bit) != 0 {
				fields[kv.k] = kv.v
			}
		}
		s, err := p.ParseSettings(fields)
		if err != nil {
			checkInputError(t, err, ErrInvalid, SettingFields()...)
			return
		}
		e, err := p.Match(prompt)
		if err != nil {
			checkInputError(t, err, ErrInvalid, "prompt")
			return
		}
		res, err := p.Apply(img, e, s)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				checkInputError(t, err, ErrTooLarge, "image")
			} else {
				// size when the input's own size (size=auto) is no valid size here.
				checkInputError(t, err, ErrInvalid, "image", FieldSize)
			}
			return
		}
		out, err := png.Decode(bytes.NewReader(res.PNG))
		if err != nil {
			t.Fatalf("Apply's PNG does not decode: %v", err)
		}
		got := res.Settings
		if b := out.Bounds(); b.Dx() != got.Width || b.Dy() != got.Height {
			t.Fatalf("PNG is %dx%d, settings say %dx%d", b.Dx(), b.Dy(), got.Width, got.Height)
		}
		if got.Width*got.Height > fuzzMaxPixels {
			t.Fatalf("output %dx%d is over the pixel limit %d", got.Width, got.Height, fuzzMaxPixels)
		}
		if s.Width != 0 && (got.Width != s.Width || got.Height != s.Height) {
			t.Fatalf("asked for %dx%d, got %dx%d", s.Width, s.Height, got.Width, got.Height)
		}
		if res.OutputSHA256 != SHA256(res.PNG) {
			t.Fatal("OutputSHA256 is not the sha256 of the PNG")
		}
		if got.Edit != e.Name || got.NumInferenceSteps != s.NumInferenceSteps || got.GuidanceScale != s.GuidanceScale || got.Seed != s.Seed {
			t.Fatalf("effective settings %+v do not echo edit %q and %+v", got, e.Name, s)
		}
	})
}

// checkInputError fails unless err is an *InputError of kind on one of params.
func checkInputError(t *testing.T, err error, kind error, params ...string) {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error %v (%T) is not an *InputError", err, err)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %v: want kind %v", err, kind)
	}
	if !slices.Contains(params, ie.Param) {
		t.Fatalf("error %v names %q: want one of %q", err, ie.Param, params)
	}
	if ie.Message == "" {
		t.Fatalf("error on %q has no message", ie.Param)
	}
}

func decodeAndApplySeeds(t testing.TB) []fuzzseed.Seed {
	const all = presentSize | presentSteps | presentGuidance | presentSeed
	grad := gradientPNG(t, 8, 8)
	deep := image.NewNRGBA64(image.Rect(0, 0, 5, 3))
	for i := range deep.Pix {
		deep.Pix[i] = uint8(i * 37)
	}
	pal := image.NewPaletted(image.Rect(0, 0, 6, 4), color.Palette{color.RGBA{1, 2, 3, 255}, color.NRGBA{40, 50, 60, 0}})
	pal.SetColorIndex(2, 1, 1)
	gray := image.NewGray16(image.Rect(0, 0, 3, 7))
	seed := func(name string, img []byte, prompt, size, steps, guidance, seedValue string, present byte) fuzzseed.Seed {
		return fuzzseed.Seed{Name: name, Args: []any{img, prompt, size, steps, guidance, seedValue, present}}
	}
	return []fuzzseed.Seed{
		seed("png-invert-defaults", grad, "invert it", "", "", "", "", 0),
		seed("png-blur-all-settings", grad, "Blur the photo", "7x4", "3", "0.5", "1", all),
		seed("png-at-the-limit-pixelate", gradientPNG(t, 64, 64), "pixelate", "64x64", "4.0", "3", "0", all),
		seed("png-16bit-grain", encodeTestPNG(t, deep), "add grain", "", "", "", "9223372036854775807", presentSeed),
		seed("png-paletted-sepia", encodeTestPNG(t, pal), "VINTAGE look", "1x1", "", "", "", presentSize),
		seed("png-gray16-sharpen", encodeTestPNG(t, gray), "sharpen", "", "100", "", "", presentSteps),
		seed("jpeg-grayscale", testJPEG(t, 16, 8), "black and white", "", "", "1e-9", "", presentGuidance),
		seed("jpeg-header-65535x65535", jpegWithSize(testJPEG(t, 16, 8), 65535, 65535), "invert", "", "", "", "", 0),
		seed("png-header-100000x100000", pngHeaderOnly(100000, 100000), "invert", "", "", "", "", 0),
		seed("png-header-65x64", pngHeaderOnly(65, 64), "invert", "", "", "", "", 0),
		seed("png-header-zero-width", pngHeaderOnly(0, 5), "invert", "", "", "", "", 0),
		seed("png-header-only", pngHeaderOnly(8, 8), "invert", "", "", "", "", 0),
		seed("png-truncated", grad[:len(grad)-20], "invert", "", "", "", "", 0),
		seed("png-signature-only", []byte(pngMagic), "invert", "", "", "", "", 0),
		seed("png-corrupt-data", corrupt(grad), "invert", "", "", "", "", 0),
		seed("gif", []byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"), "invert", "", "", "", "", 0),
		seed("empty-image", []byte{}, "invert", "", "", "", "", 0),
		seed("text-image", []byte("<html>not an image</html>"), "invert", "", "", "", "", 0),
		seed("size-over-limit", grad, "invert", "65x64", "", "", "", presentSize),
		seed("size-max-side", grad, "invert", "8192X1", "", "", "", presentSize),
		seed("size-overflow", grad, "invert", "99999999999999999999x1", "", "", "", presentSize),
		seed("settings-empty-present", grad, "invert", "", "", "", "", all),
		seed("settings-signs-and-exponents", grad, "invert", "+8x8", "-1", "NaN", "1e3", all),
		seed("seed-over-int64", grad, "grain", "", "", "", "9223372036854775808", presentSeed),
		seed("guidance-hex-float", grad, "invert", "", "", "0x1p0", "", presentGuidance),
		seed("prompt-two-edits", grad, "blur and sharpen", "", "", "", "", 0),
		seed("prompt-no-edit", grad, "make it pretty", "", "", "", "", 0),
		seed("prompt-invalid-utf8", grad, "\xff\xfeinvert\x00", "", "", "", "", 0),
		seed("prompt-kelvin-sign", grad, "black and white \u212a", "", "", "", "", 0),
		seed("prompt-long", grad, strings.Repeat("\u0130", 3000)+"mirror", "", "", "", "", 0),
		seed("webp-lossless-invert", testWebP(t, "lossless"), "invert", "", "", "", "", 0),
		seed("webp-lossy-size-auto", testWebP(t, "lossy"), "mirror", "auto", "", "", "", presentSize),
		seed("webp-truncated", testWebP(t, "lossless")[:30], "invert", "", "", "", "", 0),
		seed("webp-riff-header-only", []byte("RIFF\x04\x00\x00\x00WEBP"), "invert", "", "", "", "", 0),
	}
}

// testWebP is testdata/gradient-16x8-<kind>.webp, the pixels of gradientPNG(16, 8)
// written by Pillow 12.3.0 (Image.save(..., "WEBP", lossless=True) or quality=90): Go
// has no WebP encoder.
func testWebP(t testing.TB, kind string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "gradient-16x8-"+kind+".webp"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testJPEG is a w x h baseline JPEG of a gradient.
func testJPEG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, color.RGBA{uint8(x * 15), uint8(y * 30), 128, 0xff})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// jpegWithSize rewrites the dimensions in a baseline JPEG's SOF0 segment, leaving the
// scan data for the old size: a header-only bomb.
func jpegWithSize(data []byte, w, h uint16) []byte {
	out := bytes.Clone(data)
	i := bytes.Index(out, []byte{0xff, 0xc0})
	if i < 0 || i+9 > len(out) {
		panic("jpegWithSize: no SOF0 segment")
	}
	// SOF0: marker, length (2), precision (1), height (2), width (2).
	out[i+5], out[i+6] = byte(h>>8), byte(h)
	out[i+7], out[i+8] = byte(w>>8), byte(w)
	return out
}
