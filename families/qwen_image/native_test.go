package qwenimage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNativeFlagsMapEachWireField(t *testing.T) {
	for _, tt := range []struct {
		name     string
		settings map[string]string
		want     []string
	}{
		{"none", nil, nil},
		{"size becomes height then width", map[string]string{"size": "1024x768"}, []string{"--height", "768", "--width", "1024"}},
		{"true CFG is --cfg-scale", map[string]string{"true_cfg_scale": "4.0"}, []string{"--cfg-scale", "4.0"}},
		{"values stay as on the wire", map[string]string{"seed": "0042", "negative_prompt": ""}, []string{"--negative-prompt", "", "--seed", "0042"}},
		{"every field, in REFERENCE order",
			map[string]string{"seed": "7", "size": "512x256", "negative_prompt": "blurry", "num_inference_steps": "20", "true_cfg_scale": "2.5"},
			[]string{"--negative-prompt", "blurry", "--cfg-scale", "2.5", "--num-inference-steps", "20", "--seed", "7", "--height", "256", "--width", "512"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NativeFlags(tt.settings)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNativeFlagsRejectUnknownAndMalformed(t *testing.T) {
	_, err := NativeFlags(map[string]string{"seed": "1", "response_format": "b64_json", "guidance_scale": "1"})
	assert.EqualError(t, err, "setting(s) guidance_scale, response_format have no `trtmc run` flag (known: negative_prompt, true_cfg_scale, num_inference_steps, seed, size): "+
		"the native Task would ignore them; drop them from the fixtures or map them in families/qwen_image/native.go")
	for _, bad := range []string{"1024", "1024x", "x1024", "0x10", "-5x10", "10X10", "axb"} {
		_, err := NativeFlags(map[string]string{"size": bad})
		assert.ErrorContains(t, err, "is not WxH with positive integers", bad)
	}
}

func TestCheckSettings(t *testing.T) {
	assert.Empty(t, checkSettings("s", map[string]string{"size": "1024x1024", "seed": "42", "num_inference_steps": "20", "true_cfg_scale": "4.0", "negative_prompt": " "}))
	assert.Equal(t, []string{
		"s: setting(s) guidance_scale have no `trtmc run` flag (known: negative_prompt, true_cfg_scale, num_inference_steps, seed, size): the native Task would ignore them; drop them from the fixtures or map them in families/qwen_image/native.go",
		"s: size 512x512, but the bundle is compiled for 1024x1024 output",
		"s: num_inference_steps 8, but the bundle is built with --num-inference-steps 20",
	}, checkSettings("s", map[string]string{"size": "512x512", "num_inference_steps": "8", "guidance_scale": "1.0"}))
	assert.Equal(t, []string{`s: size "big" is not WxH with positive integers`}, checkSettings("s", map[string]string{"size": "big"}))
}
