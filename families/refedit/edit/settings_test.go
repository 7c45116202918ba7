package edit

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSettingsDefaults(t *testing.T) {
	p := builtinProgram(t)
	s, err := p.ParseSettings(map[string]string{"prompt": "ignored", "model": "x"})
	require.NoError(t, err)
	assert.Equal(t, Settings{NumInferenceSteps: 4, GuidanceScale: 1, Seed: 0}, s)

	sized := programFrom(t, Build(Defaults{Width: 64, Height: 48, NumInferenceSteps: 2, GuidanceScale: 0.5, Seed: 3}))
	s, err = sized.ParseSettings(nil)
	require.NoError(t, err)
	assert.Equal(t, Settings{Width: 64, Height: 48, NumInferenceSteps: 2, GuidanceScale: 0.5, Seed: 3}, s)
}

func TestParseSettingsValues(t *testing.T) {
	p := builtinProgram(t)
	s, err := p.ParseSettings(map[string]string{
		"size": "1024x768", "num_inference_steps": "42", "guidance_scale": "2.5", "seed": "9223372036854775807",
	})
	require.NoError(t, err)
	assert.Equal(t, Settings{Width: 1024, Height: 768, NumInferenceSteps: 42, GuidanceScale: 2.5, Seed: 1<<63 - 1}, s)

	// Numbers as clients that keep every extra input as a float send them.
	s, err = p.ParseSettings(map[string]string{"size": "16X8", "num_inference_steps": "4.0", "guidance_scale": "3", "seed": "42.00"})
	require.NoError(t, err)
	assert.Equal(t, Settings{Width: 16, Height: 8, NumInferenceSteps: 4, GuidanceScale: 3, Seed: 42}, s)
}

func TestParseSettingsErrors(t *testing.T) {
	p := builtinProgram(t)
	tests := []struct {
		field, value, want string
	}{
		{"size", "1024", "want WxH with W and H in 1..8192 and W*H <= 4194304, or auto (the input's size)"},
		{"size", "autox", "want WxH"},
		{"size", "0x10", "W and H in 1..8192"},
		{"size", "8193x1", "W and H in 1..8192"},
		{"size", "4096x4096", "over the pixel limit of 4194304"},
		{"size", "-1x5", "want WxH"},
		{"size", "", "want WxH"},
		{"size", "10x10x10", "want WxH"},
		{"num_inference_steps", "0", "want an integer in 1..100"},
		{"num_inference_steps", "101", "want an integer in 1..100"},
		{"num_inference_steps", "4.5", "want an integer in 1..100"},
		{"num_inference_steps", "four", "want an integer in 1..100"},
		{"num_inference_steps", "", "want an integer in 1..100"},
		{"guidance_scale", "0", "want a number in (0, 3]"},
		{"guidance_scale", "3.01", "want a number in (0, 3]"},
		{"guidance_scale", "NaN", "want a number in (0, 3]"},
		{"guidance_scale", "-1", "want a number in (0, 3]"},
		{"guidance_scale", "Inf", "want a number in (0, 3]"},
		{"seed", "-1", "want an integer in 0..9223372036854775807"},
		{"seed", "9223372036854775808", "want an integer in 0..9223372036854775807"},
		{"seed", "99999999999999999999", "want an integer in 0..9223372036854775807"},
		{"seed", "1e3", "want an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			_, err := p.ParseSettings(map[string]string{tt.field: tt.value})
			require.Error(t, err)
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			assert.Equal(t, tt.field, ie.Param)
			assert.True(t, errors.Is(err, ErrInvalid))
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), tt.field+": ", "the message names the field")
		})
	}
}

func TestParseSettingsFollowsMaxPixels(t *testing.T) {
	p, err := builtinProgram(t).WithMaxPixels(100)
	require.NoError(t, err)
	_, err = p.ParseSettings(map[string]string{"size": "10x11"})
	assert.ErrorContains(t, err, "W*H <= 100")
	_, err = p.ParseSettings(map[string]string{"size": "10x10"})
	assert.NoError(t, err)
}
