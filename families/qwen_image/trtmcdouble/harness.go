package trtmcdouble

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

const harnessUsage = "usage: qwen_image_e2e_harness BUNDLE RUNTIME_ROOT OUT.ppm TASK PROMPT LATENTS.raw HEIGHT WIDTH STEPS SEED GUIDANCE CFG NEGATIVE [EDIT_IMAGE.raw IMAGE_HEIGHT IMAGE_WIDTH]"

// harnessMain plays the families case's native harness, qwen_image_e2e_harness, with the
// argv families/qwen_image/tests/test_e2e.py @ 9777fef7 § _native gives it; it writes the
// edit as a binary PPM.
func harnessMain(p *proc) int {
	a := p.args[1:]
	if len(a) != 13 && len(a) != 16 {
		return p.fail(exitUsage, "%s (got %d arguments)", harnessUsage, len(a))
	}
	bundle, runtimeRoot, out, task, prompt, latentsPath := p.abs(a[0]), p.abs(a[1]), p.abs(a[2]), a[3], a[4], p.abs(a[5])
	h, err := ReadBundle(bundle)
	if err != nil {
		return p.fail(exitFail, "qwen_image_e2e_harness: not a valid .bundle artifact: %s (%v)", a[0], err)
	}
	if !isFile(filepath.Join(runtimeRoot, libModelQwen)) {
		return p.fail(exitFail, "qwen_image_e2e_harness: runtime root %s holds no %s", a[1], libModelQwen)
	}
	if task != "image_edit" || len(a) != 16 {
		return p.fail(exitFail, "qwen_image_e2e_harness: task %q: the qualkit contract double plays only image_edit, with its edit image", task)
	}
	ints := make([]int, 0, 6)
	for _, i := range []int{6, 7, 8, 9, 14, 15} {
		v, err := strconv.Atoi(a[i])
		if err != nil {
			return p.fail(exitUsage, "qwen_image_e2e_harness: argument %d %q is not an integer\n%s", i+1, a[i], harnessUsage)
		}
		ints = append(ints, v)
	}
	height, width, steps, seed, imgH, imgW := ints[0], ints[1], ints[2], ints[3], ints[4], ints[5]
	guidance, err1 := strconv.ParseFloat(a[10], 64)
	cfg, err2 := strconv.ParseFloat(a[11], 64)
	if err1 != nil || err2 != nil {
		return p.fail(exitUsage, "qwen_image_e2e_harness: guidance %q and cfg %q must be numbers\n%s", a[10], a[11], harnessUsage)
	}
	noise, err := readLatents(latentsPath, height, width)
	if err != nil {
		return p.fail(exitFail, "qwen_image_e2e_harness: %v", err)
	}
	src, err := readFloatImage(p.abs(a[13]), imgH, imgW)
	if err != nil {
		return p.fail(exitFail, "qwen_image_e2e_harness: edit image: %v", err)
	}
	st := DefaultSettings(h)
	st.Seed, st.Steps, st.GuidanceScale, st.CFGScale, st.NegativePrompt = int64(seed), steps, guidance, cfg, a[12]
	st.Width, st.Height, st.Latents = width, height, noise
	img, err := editImage(src, prompt, st)
	if err != nil {
		return p.fail(exitFail, "qwen_image_e2e_harness: %v", err)
	}
	if err := writePPM(out, img); err != nil {
		return p.fail(exitFail, "qwen_image_e2e_harness: %v", err)
	}
	fmt.Fprintf(p.stdout, "qwen_image_e2e_harness (qualkit contract double): wrote %s (%dx%d)\n", out, width, height)
	return exitOK
}

// readFloatImage reads raw float32 HWC RGB in [0, 1], as the case writes it from 8-bit
// pixels (np.asarray(img) / 255), back into those pixels.
func readFloatImage(path string, h, w int) (*image.NRGBA, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if h <= 0 || w <= 0 || len(b) != 4*3*h*w {
		return nil, fmt.Errorf("%s holds %d bytes, not %dx%dx3 float32", path, len(b), h, w)
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range h * w {
		for c := range 3 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(b[4*(3*i+c):]))
			img.Pix[4*i+c] = clamp8(int(math.Round(float64(v) * 255)))
		}
		img.Pix[4*i+3] = 0xff
	}
	return img, nil
}

// writePPM writes a binary (P6) PPM.
func writePPM(path string, img *image.NRGBA) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	b := img.Bounds()
	fmt.Fprintf(w, "P6\n%d %d\n255\n", b.Dx(), b.Dy())
	for i := 0; i < len(img.Pix); i += 4 {
		w.Write(img.Pix[i : i+3])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
