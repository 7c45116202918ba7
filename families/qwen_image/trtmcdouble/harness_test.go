package trtmcdouble

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"image"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/qwen_image/latents"
)

// floatImage is img as the families case hands it to the harness: raw float32 HWC RGB in
// [0, 1].
func floatImage(t *testing.T, path string, img *image.NRGBA) string {
	t.Helper()
	var b bytes.Buffer
	for i := 0; i < len(img.Pix); i += 4 {
		for c := range 3 {
			require.NoError(t, binary.Write(&b, binary.LittleEndian, float32(img.Pix[i+c])/255))
		}
	}
	return writeFile(t, path, b.String())
}

func TestHarnessWritesTheEditAsPPM(t *testing.T) {
	dir := t.TempDir()
	bundle := filepath.Join(dir, Profile+".bundle")
	spec := adapterSpec(t)
	spec.ImageWidth, spec.ImageHeight = 64, 48
	writeTestBundle(t, bundle, spec)
	runtime := filepath.Join(dir, "runtime")
	writeFile(t, filepath.Join(runtime, libModelQwen), "lib")
	src := toNRGBA(gradient(40, 30))
	edit := floatImage(t, filepath.Join(dir, "edit.raw"), src)
	raw, err := latents.Raw(11, 16, 48/8, 64/8)
	require.NoError(t, err)
	noise := writeFile(t, filepath.Join(dir, "latents.raw"), string(raw))
	out := filepath.Join(dir, "out.ppm")
	args := func(kv ...string) []string {
		a := []string{"qwen_image_e2e_harness", bundle, runtime, out, "image_edit", "Make it autumn.", noise,
			"48", "64", "20", "3", "1.0", "4.0", " ", edit, "30", "40"}
		for i := 0; i+1 < len(kv); i += 2 {
			n, err := strconv.Atoi(kv[i])
			require.NoError(t, err)
			a[n] = kv[i+1]
		}
		return a
	}
	r := newRunner(t, dir)
	res := r.run(args()...)
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "wrote "+out+" (64x48)")

	sum := sha256.Sum256(raw)
	st := DefaultSettings(BundleHeader{})
	st.Seed, st.Steps, st.GuidanceScale, st.CFGScale, st.NegativePrompt = 3, 20, 1, 4, " "
	st.Width, st.Height, st.Latents = 64, 48, hex.EncodeToString(sum[:])
	want := mustEdit(t, src, "Make it autumn.", st)
	var ppm bytes.Buffer
	fmt.Fprintf(&ppm, "P6\n64 48\n255\n")
	for i := 0; i < len(want.Pix); i += 4 {
		ppm.Write(want.Pix[i : i+3])
	}
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, ppm.Bytes(), got, "the edit of the case's noise and image, as a binary PPM")

	otherSeed := args("10", "99")
	res = r.run(otherSeed...)
	require.Equal(t, 0, res.code, res.stderr)
	again, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, got, again, "the case's noise, not the seed, stands in the edit")

	noLib := t.TempDir()
	short := writeFile(t, filepath.Join(dir, "short.raw"), string(raw[:len(raw)-4]))
	notBundle := writeFile(t, filepath.Join(dir, "x.bundle"), "not a bundle at all, no")
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"too few arguments":   {args()[:10], 2, "usage: qwen_image_e2e_harness"},
		"text to image":       {args("4", "text_to_image")[:14], 1, `task "text_to_image"`},
		"edit without image":  {args()[:14], 1, "plays only image_edit"},
		"invalid bundle":      {args("1", notBundle), 1, "not a valid .bundle artifact"},
		"runtime without lib": {args("2", noLib), 1, "holds no " + libModelQwen},
		"height not integer":  {args("7", "tall"), 2, `argument 7 "tall" is not an integer`},
		"guidance not number": {args("11", "x"), 2, "must be numbers"},
		"short noise":         {args("6", short), 1, fmt.Sprintf("hold %d float32 values", 16*6*8-1)},
		"no noise":            {args("6", filepath.Join(dir, "none.raw")), 1, "cannot read float32 input"},
		"edit image size":     {args("15", "31"), 1, "not 31x40x3 float32"},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.run(tc.args...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
}

func TestDiffusersReferenceIsCloseToTheEdit(t *testing.T) {
	dir := t.TempDir()
	image := writeFile(t, filepath.Join(dir, "photo.jpeg"), string(testPhoto(t)))
	raw, err := latents.Raw(5, 16, 48/8, 64/8)
	require.NoError(t, err)
	noise := writeFile(t, filepath.Join(dir, "latents.raw"), string(raw))
	out := filepath.Join(dir, "ref.png")
	r := newRunner(t, dir)
	res := r.run("trtmcdouble", "diffusers-reference", "--prompt", "Make it autumn.", "--image", image, "--output", out,
		"--height", "48", "--width", "64", "--steps", "20", "--negative-prompt", " ", "--true-cfg-scale", "2.5", "--guidance-scale", "1.0", "--latents", noise)
	require.Equal(t, 0, res.code, res.stderr)
	ref, err := os.ReadFile(out)
	require.NoError(t, err)

	sum := sha256.Sum256(raw)
	trt, err := Edit(testPhoto(t), "Make it autumn.", Settings{Steps: 20, GuidanceScale: 2.5, NegativePrompt: " ", Width: 64, Height: 48, Latents: hex.EncodeToString(sum[:])})
	require.NoError(t, err)
	a, b := decodeTestPNG(t, trt), decodeTestPNG(t, ref)
	require.Equal(t, a.Bounds(), b.Bounds())
	for i := range a.Pix {
		if i%4 == 3 {
			assert.Equal(t, a.Pix[i], b.Pix[i])
		} else {
			require.Equal(t, a.Pix[i]^1, b.Pix[i], "the pipeline's true_cfg_scale is the edit's true CFG; every channel's lowest bit flipped")
		}
	}
	assert.NotEqual(t, trt, ref, "close, never the same bytes")

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"no image":      {[]string{"--prompt", "p", "--output", out, "--height", "48", "--width", "64", "--steps", "20"}, 2, "--prompt, --image and --output are required"},
		"bad steps":     {[]string{"--prompt", "p", "--image", image, "--output", out, "--height", "48", "--width", "64", "--steps", "x"}, 2, `--steps "x" is not an integer`},
		"bad cfg":       {[]string{"--prompt", "p", "--image", image, "--output", out, "--height", "48", "--width", "64", "--steps", "20", "--true-cfg-scale", "hi"}, 2, "is not a number"},
		"other noise":   {[]string{"--prompt", "p", "--image", image, "--output", out, "--height", "96", "--width", "64", "--steps", "20", "--latents", noise}, 1, "a 64x96 edit's noise is"},
		"unknown flag":  {[]string{"--prompt", "p", "--image", image, "--output", out, "--height", "48", "--width", "64", "--steps", "20", "--strength", "1"}, 2, "unexpected"},
		"missing value": {[]string{"--prompt"}, 2, "--prompt needs a value"},
	} {
		t.Run(name, func(t *testing.T) {
			res := r.run(append([]string{"diffusers-reference"}, tc.args...)...)
			assert.Equal(t, tc.code, res.code, res.stderr)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
}
