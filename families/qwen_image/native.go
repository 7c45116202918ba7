package qwenimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// wireFlags maps each extra input an image-edit request carries (as AIPerf sends it) to
// the CLI flag that sets the same control. "size" (WxH) becomes --height and --width.
// TRTMC's Qwen-Image takes guidance_scale as its true CFG scale, so the workload states
// it (4.0) as well as true_cfg_scale (--cfg-scale), and neither is left to a default.
var wireFlags = []struct{ field, e9132e79, families string }{
	{"negative_prompt", "--negative-prompt", "--negative-prompt"},
	{"true_cfg_scale", "--cfg-scale", "--cfg-scale"},
	{"guidance_scale", "--guidance-scale", "--guidance-scale"},
	{"num_inference_steps", "--num-inference-steps", "--num-steps"},
	{"seed", "--seed", "--seed"},
	{"size", "", ""}, // --height H --width W
}

// NativeFlags renders a request's settings as the layout's CLI flags, values as they
// were on the wire. Every field must have a flag: the unknown ones are an error naming
// them all.
func NativeFlags(layout string, settings map[string]string) ([]string, error) {
	if err := unknownFields(settings); err != nil {
		return nil, err
	}
	var args []string
	for _, wf := range wireFlags {
		v, ok := settings[wf.field]
		if !ok {
			continue
		}
		if wf.field == "size" {
			w, h, err := ParseSize(v)
			if err != nil {
				return nil, err
			}
			args = append(args, "--height", strconv.Itoa(h), "--width", strconv.Itoa(w))
			continue
		}
		flag := wf.e9132e79
		if layout == LayoutFamilies {
			flag = wf.families
		}
		args = append(args, flag, v)
	}
	return args, nil
}

func unknownFields(settings map[string]string) error {
	known := map[string]bool{}
	var fields []string
	for _, wf := range wireFlags {
		known[wf.field] = true
		fields = append(fields, wf.field)
	}
	var unknown []string
	for k := range settings {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("setting(s) %s have no TRTMC CLI flag (known: %s): the native Task would ignore them; drop them from the fixtures or map them in families/qwen_image/native.go",
		strings.Join(unknown, ", "), strings.Join(fields, ", "))
}

// ParseSize reads an OpenAI-style size "WxH".
func ParseSize(s string) (w, h int, err error) {
	ws, hs, ok := strings.Cut(s, "x")
	if ok {
		w, err = strconv.Atoi(ws)
		if err == nil {
			h, err = strconv.Atoi(hs)
		}
	}
	if !ok || err != nil || w <= 0 || h <= 0 {
		return 0, 0, fmt.Errorf("size %q is not WxH with positive integers", s)
	}
	return w, h, nil
}

// requiredSettings are the generation controls a request must state: the server's
// defaults are not the published settings (TRTMC's own qualification states each).
var requiredSettings = []string{"size", "seed", "num_inference_steps", "true_cfg_scale", "guidance_scale", "negative_prompt"}

// checkSettings lists what in a workload's settings this bundle cannot honour or leaves
// unstated: a field the native Task has no flag for, a control left to a default, or an
// output size other than the bundle's static one.
func checkSettings(where string, settings map[string]string) []string {
	var bad []string
	if err := unknownFields(settings); err != nil {
		bad = append(bad, where+": "+err.Error())
	}
	var missing []string
	for _, k := range requiredSettings {
		if _, ok := settings[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		bad = append(bad, fmt.Sprintf("%s: %s not stated: every generation control is sent explicitly, never left to the server's default", where, strings.Join(missing, ", ")))
	}
	if s, ok := settings["size"]; ok {
		w, h, err := ParseSize(s)
		switch {
		case err != nil:
			bad = append(bad, where+": "+err.Error())
		case w != ImageWidth || h != ImageHeight:
			bad = append(bad, fmt.Sprintf("%s: size %s, but the bundle is compiled for %dx%d output", where, s, ImageWidth, ImageHeight))
		}
	}
	return bad
}

// fileSHA is a file's sha256, or a note saying why there is none.
func fileSHA(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "absent"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unreadable"
	}
	return hex.EncodeToString(h.Sum(nil))
}
