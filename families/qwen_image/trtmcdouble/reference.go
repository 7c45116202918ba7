package trtmcdouble

import (
	"errors"
	"fmt"
	"os"
	"strconv"
)

var referenceParser = newOptParser(true,
	opt{"--prompt", true}, opt{"--height", true}, opt{"--width", true}, opt{"--steps", true},
	opt{"--output", true}, opt{"--image", true}, opt{"--latents", true},
	opt{"--negative-prompt", true}, opt{"--true-cfg-scale", true}, opt{"--guidance-scale", true},
)

// referenceMain plays the correctness case's HF diffusers reference for the stand-in
// diffusers module: the double's edit of the same inputs, lowest bits flipped so that the
// case compares two close images that are not the same bytes (PSNR about 48 dB).
func referenceMain(p *proc) int {
	a, err := referenceParser.parse(p.args[1:])
	var mv *missingValueError
	switch {
	case errors.As(err, &mv):
		return p.fail(exitUsage, "diffusers-reference: %s needs a value", mv.flag)
	case len(a.unknown) > 0 || len(a.pos) > 0:
		return p.fail(exitUsage, "diffusers-reference: unexpected %v %v", a.unknown, a.pos)
	case a.get("--prompt") == "" || a.get("--output") == "" || a.get("--image") == "":
		return p.fail(exitUsage, "diffusers-reference: --prompt, --image and --output are required (the double plays edits only)")
	}
	st := Settings{Steps: DefaultSteps, NegativePrompt: a.get("--negative-prompt"), GuidanceScale: DefaultCFGScale}
	var ints [3]int
	for i, f := range []string{"--height", "--width", "--steps"} {
		if ints[i], err = strconv.Atoi(a.get(f)); err != nil {
			return p.fail(exitUsage, "diffusers-reference: %s %q is not an integer", f, a.get(f))
		}
	}
	st.Height, st.Width, st.Steps = ints[0], ints[1], ints[2]
	if v := a.get("--true-cfg-scale"); v != "" {
		// The pipeline's true CFG; the double's edit reads it where TRTMC's reads guidance_scale.
		if st.GuidanceScale, err = strconv.ParseFloat(v, 64); err != nil {
			return p.fail(exitUsage, "diffusers-reference: --true-cfg-scale %q is not a number", v)
		}
	}
	if l := a.get("--latents"); l != "" {
		if st.Latents, err = readLatents(p.abs(l), st.Height, st.Width); err != nil {
			return p.fail(exitFail, "diffusers-reference: %v", err)
		}
	}
	src, err := os.ReadFile(p.abs(a.get("--image")))
	if err != nil {
		return p.fail(exitFail, "diffusers-reference: %v", err)
	}
	out, err := Edit(src, a.get("--prompt"), st)
	if err == nil {
		out, err = referenceImage(out)
	}
	if err == nil {
		err = os.WriteFile(p.abs(a.get("--output")), out, 0o644)
	}
	if err != nil {
		return p.fail(exitFail, "diffusers-reference: %v", err)
	}
	fmt.Fprintf(p.stdout, "diffusers-reference (qualkit contract double): wrote %s\n", a.get("--output"))
	return exitOK
}

// referenceImage is the TRT image with every channel's lowest bit flipped.
func referenceImage(trt []byte) ([]byte, error) {
	img, err := decodeImage(trt)
	if err != nil {
		return nil, err
	}
	ref := toNRGBA(img)
	for i := range ref.Pix {
		if i%4 != 3 {
			ref.Pix[i] ^= 1
		}
	}
	return encodePNG(ref)
}
