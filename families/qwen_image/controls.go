package qwenimage

import "qualkit/internal/schema"

// TRTMCControls are the settings TRTMC serves for Qwen-Image-Edit on the contract. The
// worker reads prompt, image_path, negative_prompt, seed, num_steps, guidance_scale,
// cfg_scale, height and width (apps/benchmark/native/benchmark_worker.cpp @ ca938e40 §
// image_config), and its records state only the size (§ image_observation). Qwen-Image
// takes guidance_scale as its true CFG and ignores cfg_scale
// (config/models/qwen-image-edit-2511.yaml @ ca938e40): true_cfg_scale is a no-op.
//
// Nothing is refused (declared gaps): steps 0 and a guidance below 0 are the bundle's
// defaults (families/qwen_image/runtime/pipeline.cpp @ d46edb11 § resolve_generate_knobs),
// and the task route validates no field (apps/perf_serving/trtmc_perf_serving/app.py @
// 3878755c § task). The edit route (trtmcdouble/server_edits.go; TRTMC has none) refuses
// an unknown field, steps below 1 and a side over 4096; it has no known records shape.
func TRTMCControls(contract string) *schema.Controls {
	const worker = "apps/benchmark/native/benchmark_worker.cpp @ ca938e40 § image_config"
	const knobs = "families/qwen_image/runtime/pipeline.cpp @ d46edb11 § resolve_generate_knobs"
	d := &schema.Controls{
		Source: worker + "; " + knobs + "; apps/perf_serving/trtmc_perf_serving/app.py @ 3878755c § task",
		Controls: []schema.Control{
			{Field: "size", Effect: schema.EffectSize, Allowed: "WxH (height, width)", Default: "the bundle's image size",
				Values: [2]string{"1024x1024", "768x1024"}, Recorded: []string{"observation.width", "observation.height"},
				Source: worker + ": height, width; § image_observation"},
			{Field: "num_inference_steps", Effect: schema.EffectSteps, Allowed: ">=1 (0 or less: the bundle's)", Default: "the bundle's (50)",
				Values: [2]string{"20", "40"}, Source: worker + ": num_steps"},
			{Field: "guidance_scale", Effect: schema.EffectPixels, Allowed: ">=0 (true CFG; below 0: the bundle's)", Default: "4.0",
				Values: [2]string{"4.0", "1.5"}, Source: worker + ": guidance_scale"},
			{Field: "seed", Effect: schema.EffectSeed, Allowed: "integer", Values: [2]string{"42", "7"}, Source: worker + ": seed"},
			{Field: "negative_prompt", Effect: schema.EffectPixels, Allowed: "text", Default: `" "`,
				Values: [2]string{" ", "blurry, low quality"}, Source: worker + ": negative_prompt"},
			{Field: "true_cfg_scale", Effect: schema.EffectNoop, Allowed: "number (ignored by Qwen-Image)",
				Values: [2]string{"4.0", "1.5"}, Source: worker + ": cfg_scale; config/models/qwen-image-edit-2511.yaml @ ca938e40"},
		},
		Accepted: []schema.Refusal{
			{Field: "guidance_scale", Value: "-1", Why: knobs + ": a guidance below 0 is the bundle's"},
		},
		// The same pipeline as the diffusers reference's (DiffusersControls), its fixed
		// cost a larger share at 128x128: the same points and band.
		StepRatio:   [2]float64{1.4, 2.4},
		NoPrecision: "perf-serve's records state no precision per request; the bundle's build states it",
	}
	if contract == ServingEditRoute {
		const form = "families/qwen_image/trtmcdouble/server_edits.go"
		d.Source += "; " + form + " (the edit route)"
		d.Controls[0].Invalid = []string{"5000x5000"}
		d.Controls[0].Recorded = nil // the route's records are not public: its timing is configured (Config.Timing)
		d.Controls[1].Invalid = []string{"0"}
		d.Refused = []schema.Refusal{{Field: "qualkit_unknown_control", Value: "1", Why: form + " unknownFields: unsupported fields"}}
		return d
	}
	d.Accepted = append(d.Accepted,
		schema.Refusal{Field: "num_inference_steps", Value: "0", Why: knobs + ": 0 steps are the bundle's"},
		schema.Refusal{Field: "qualkit_unknown_control", Value: "1", Why: "app.py @ 3878755c § task validates no operation field; " + worker + " reads known keys only"})
	return d
}

// DiffusersControls are the settings the diffusers reference server takes
// (reference/server.py validate, reference/pipeline.py parse_settings and LIMITS); any
// other field, guidance_scale among them, is a 400. Its records state each request's
// settings, precision among them.
func DiffusersControls(precision string) *schema.Controls {
	const parser = "families/qwen_image/reference/pipeline.py parse_settings"
	return &schema.Controls{
		Source: parser + ", LIMITS; reference/server.py validate",
		Controls: []schema.Control{
			{Field: "size", Effect: schema.EffectSize, Allowed: "WxH, sides a multiple of 16 in 16..2048", Default: "the bundle's",
				Values: [2]string{"512x512", "384x256"}, Invalid: []string{"500x500", "4096x4096"},
				Recorded: []string{"settings.width", "settings.height"}, Source: parser + ": parse_size"},
			{Field: "num_inference_steps", Effect: schema.EffectSteps, Allowed: "1-100", Default: "the bundle's",
				Values: [2]string{"50", "100"}, Invalid: []string{"0", "101"}, Recorded: []string{"settings.num_inference_steps"}, Source: parser},
			{Field: "true_cfg_scale", Effect: schema.EffectPixels, Allowed: "1-20", Default: "4.0",
				Values: [2]string{"4.0", "1.5"}, Invalid: []string{"0.5"}, Recorded: []string{"settings.true_cfg_scale"}, Source: parser},
			{Field: "seed", Effect: schema.EffectSeed, Allowed: "0-9223372036854775807", Values: [2]string{"42", "7"}, Invalid: []string{"-1"},
				Recorded: []string{"settings.seed"}, Source: parser},
			{Field: "negative_prompt", Effect: schema.EffectPixels, Allowed: "text, at most 4096 characters", Default: `" "`,
				Values: [2]string{" ", "blurry, low quality"}, Recorded: []string{"settings.negative_prompt"}, Source: parser},
		},
		Refused: []schema.Refusal{
			{Field: "guidance_scale", Value: "4.0", Why: "reference/server.py validate: not among pipeline.SETTING_FIELDS, an unknown field"},
			{Field: "qualkit_unknown_control", Value: "1", Why: "reference/server.py validate: an unknown field"},
		},
		// The smoke pipeline's fixed cost is about 25 steps' worth (H100, 512x512, run
		// 20261206T081638Z-2442-c9322d: 16 and 32 steps measured 1.39 x, 8 steps 0.53 s):
		// at 50 and 100 steps the ratio is about 1.67; a server that ignores the steps
		// gives 1.0.
		StepRatio:       [2]float64{1.4, 2.4},
		Precision:       precision,
		PrecisionRecord: "settings.precision",
	}
}

// PerfServeReferenceControls are the settings perf-serve passes to its reference
// backend's pipeline (apps/perf_serving/trtmc_perf_serving/backends/reference/media.py @
// ca938e40 § Diffusion.invoke); guidance_scale, unread there, is not declared. Nothing
// is refused (app.py @ 3878755c § task), and its records hold no dotted path to the
// settings (backends/reference/common.py @ 7b798a32 § tensor_observation).
func PerfServeReferenceControls() *schema.Controls {
	const invoke = "apps/perf_serving/trtmc_perf_serving/backends/reference/media.py @ ca938e40 § Diffusion.invoke"
	return &schema.Controls{
		Source: invoke + "; apps/perf_serving/trtmc_perf_serving/app.py @ 3878755c § task",
		Controls: []schema.Control{
			{Field: "size", Effect: schema.EffectSize, Allowed: "WxH (height, width)", Default: "the pipeline's",
				Values: [2]string{"128x128", "96x128"}, Source: invoke + ": height, width"},
			{Field: "num_inference_steps", Effect: schema.EffectSteps, Allowed: ">=1 (0 or -1: the pipeline's)", Default: "the pipeline's",
				Values: [2]string{"50", "100"}, Source: invoke + ": num_steps"},
			{Field: "true_cfg_scale", Effect: schema.EffectPixels, Allowed: ">0 (else the pipeline's)", Default: "4.0",
				Values: [2]string{"4.0", "1.5"}, Source: invoke + ": cfg_scale as true_cfg_scale"},
			{Field: "seed", Effect: schema.EffectSeed, Allowed: "integer (below 0: 0)", Values: [2]string{"42", "7"}, Source: invoke + ": seed; latent_seed"},
			{Field: "negative_prompt", Effect: schema.EffectPixels, Allowed: "text", Default: `" "`,
				Values: [2]string{" ", "blurry, low quality"}, Source: invoke + ": negative_prompt"},
		},
		Accepted: []schema.Refusal{
			{Field: "num_inference_steps", Value: "0", Why: invoke + ": num_steps 0 is the pipeline's default"},
			{Field: "qualkit_unknown_control", Value: "1", Why: "app.py @ 3878755c § task validates no operation field; " + invoke + " reads known keys only"},
		},
		// The same pipeline as the diffusers reference's (DiffusersControls), its fixed
		// cost a larger share at 128x128: the same points and band.
		StepRatio:   [2]float64{1.4, 2.4},
		NoPrecision: "perf-serve's records state no precision per request; --reference-dtype sets it for the server",
	}
}
