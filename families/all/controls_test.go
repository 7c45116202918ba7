package all

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSupportedControls(t *testing.T) {
	assert.Equal(t, "size WxH or auto, num_inference_steps 1-100, guidance_scale (0, 3], seed 0-9223372036854775807, quality (no-op)",
		SupportedControls("refedit", "qualkit/refedit-v1"))
	assert.Contains(t, SupportedControls("trtmc", "Qwen/Qwen-Image-Edit-2511"), "num_inference_steps >=1")
	assert.Equal(t, "not declared", SupportedControls("trtmc", "Wan-AI/Wan2.2-TI2V-5B"))
}
