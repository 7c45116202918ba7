package qwenimage

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// wireFlags maps each extra input an image-edit request carries (as AIPerf sends it)
// to the `trtmc run` flag that sets the same control, in REFERENCE.md's argv order.
// "size" (WxH) is the one field that becomes two flags.
var wireFlags = []struct{ field, flag string }{
	{"negative_prompt", "--negative-prompt"},
	{"true_cfg_scale", "--cfg-scale"},
	{"num_inference_steps", "--num-inference-steps"},
	{"seed", "--seed"},
	{"size", ""}, // --height H --width W
}

// NativeFlags renders a request's settings as `trtmc run` flags, values as they were on
// the wire. Every field must have a flag: the unknown ones are an error naming them all.
func NativeFlags(settings map[string]string) ([]string, error) {
	if err := unknownFields(settings); err != nil {
		return nil, err
	}
	var args []string
	for _, wf := range wireFlags {
		v, ok := settings[wf.field]
		if !ok {
			continue
		}
		if wf.field != "size" {
			args = append(args, wf.flag, v)
			continue
		}
		w, h, err := ParseSize(v)
		if err != nil {
			return nil, err
		}
		args = append(args, "--height", strconv.Itoa(h), "--width", strconv.Itoa(w))
	}
	return args, nil
}

func unknownFields(settings map[string]string) error {
	known := map[string]bool{}
	for _, wf := range wireFlags {
		known[wf.field] = true
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
	fields := make([]string, len(wireFlags))
	for i, wf := range wireFlags {
		fields[i] = wf.field
	}
	return fmt.Errorf("setting(s) %s have no `trtmc run` flag (known: %s): the native Task would ignore them; drop them from the fixtures or map them in families/qwen_image/native.go",
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

// checkSettings lists what in a workload's settings this bundle cannot honour: a field
// the native Task has no flag for, or an output size or step count other than the
// static ones the bundle is compiled with.
func checkSettings(where string, settings map[string]string) []string {
	var bad []string
	if err := unknownFields(settings); err != nil {
		bad = append(bad, where+": "+err.Error())
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
	if s, ok := settings["num_inference_steps"]; ok && s != strconv.Itoa(NumInferenceSteps) {
		bad = append(bad, fmt.Sprintf("%s: num_inference_steps %s, but the bundle is built with --num-inference-steps %d", where, s, NumInferenceSteps))
	}
	return bad
}
