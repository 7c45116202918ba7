package qwenimage

import "qualkit/internal/schema"

// TRTMCControls are the settings TRTMC serves for Qwen-Image-Edit through perf-serve's
// task route, spelled the canonical way (wire.Task maps them to the worker's fields).
// The worker reads, for generate_image with an edit, prompt, image_path,
// negative_prompt, seed, num_steps, guidance_scale, cfg_scale, height and width
// (apps/benchmark/native/benchmark_worker.cpp @ ca938e40 § image_config,
// run_generate_image); perf-serve's task route merges the request over the profile's
// base request and validates no operation field, so an unknown key reaches the worker,
// which reads known keys only (apps/perf_serving/trtmc_perf_serving/app.py @ 3878755c §
// task). Qwen-Image takes guidance_scale as its true CFG scale and ignores cfg_scale
// (config/models/qwen-image-edit-2511.yaml @ ca938e40, as families/qwen_image/trtmcdouble/edit.go
// states), so true_cfg_scale is a no-op here.
//
// Not yet attached to the rows' Spec (issue 46): the task route answers 200 to an
// unknown field (no refusal is possible there, so Refused is empty and says why in
// NoRefusal), and the double's worker does not yet scale its Task time with the steps.
func TRTMCControls() *schema.Controls {
	const worker = "apps/benchmark/native/benchmark_worker.cpp @ ca938e40 § image_config"
	return &schema.Controls{
		Source: worker + "; apps/perf_serving/trtmc_perf_serving/app.py @ 3878755c § task",
		Controls: []schema.Control{
			{Field: "size", Effect: schema.EffectSize, Allowed: "WxH (height, width)", Default: "the bundle's image size",
				Values: [2]string{"1024x1024", "768x1024"}, Source: worker + ": height, width"},
			{Field: "num_inference_steps", Effect: schema.EffectSteps, Allowed: ">=1", Default: "the bundle's (50)",
				Values: [2]string{"10", "20"}, Source: worker + ": num_steps"},
			{Field: "guidance_scale", Effect: schema.EffectPixels, Allowed: ">0 (true CFG)", Default: "4.0",
				Values: [2]string{"4.0", "1.5"}, Source: worker + ": guidance_scale"},
			{Field: "seed", Effect: schema.EffectSeed, Allowed: "integer", Values: [2]string{"42", "7"}, Source: worker + ": seed"},
			{Field: "negative_prompt", Effect: schema.EffectPixels, Allowed: "text", Default: `" "`,
				Values: [2]string{" ", "blurry, low quality"}, Source: worker + ": negative_prompt"},
			{Field: "true_cfg_scale", Effect: schema.EffectNoop, Allowed: "number (ignored by Qwen-Image)",
				Values: [2]string{"4.0", "1.5"}, Source: worker + ": cfg_scale; config/models/qwen-image-edit-2511.yaml @ ca938e40"},
		},
		StepRatio:   [2]float64{1.6, 2.4},
		NoPrecision: "perf-serve's records state no precision per request; the bundle's build states it",
	}
}
