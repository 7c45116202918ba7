package refedit

import (
	"strconv"

	"qualkit/families/refedit/edit"
	"qualkit/internal/schema"
)

// Controls are the settings refedit-v1 supports, read from its own parsers (each
// control's Source). Each probe instruction picks the edit where the control matters.
// Steps are measured by the edit's CPU time (timing.task_cpu_ms): on a host loaded 5
// times over, the wall time of equal work varied from 345 to 2102 ms; at 512x512 a blur
// pass costs more than decoding and encoding, so 25 and 50 passes give a ratio near 1.9.
func Controls() *schema.Controls {
	d, l := edit.BuiltinDefaults(), edit.Build(edit.BuiltinDefaults()).Limits
	return &schema.Controls{
		Source: "families/refedit/edit/settings.go ParseSettings, server/form.go readForm and openAIChoices",
		Controls: []schema.Control{
			{Field: edit.FieldSize, Effect: schema.EffectSize, Allowed: "WxH or auto", Default: "the input's size",
				Values: [2]string{"512x512", "384x256"}, Invalid: []string{"9000x9000", "0x512"},
				Recorded: []string{"settings.width", "settings.height"}, Source: "edit/settings.go parseSize"},
			{Field: edit.FieldNumInferenceSteps, Effect: schema.EffectSteps, Allowed: "1-" + strconv.Itoa(l.MaxNumInferenceSteps), Default: strconv.Itoa(d.NumInferenceSteps),
				Values: [2]string{"25", "50"}, Prompt: "Blur the whole image", Invalid: []string{"0", strconv.Itoa(l.MaxNumInferenceSteps + 1)},
				Recorded: []string{"settings.num_inference_steps"}, Source: "edit/settings.go ParseSettings; edit/ops.go boxBlurOp: one blur pass per step"},
			{Field: edit.FieldGuidanceScale, Effect: schema.EffectPixels, Allowed: "(0, " + strconv.FormatFloat(l.MaxGuidanceScale, 'f', -1, 64) + "]",
				Default: strconv.FormatFloat(d.GuidanceScale, 'f', -1, 64), Values: [2]string{"1.0", "2.0"}, Invalid: []string{"-1", "0"},
				Recorded: []string{"settings.guidance_scale"}, Source: "edit/settings.go ParseSettings; edit/pipeline.go blend"},
			{Field: edit.FieldSeed, Effect: schema.EffectSeed, Allowed: "0-9223372036854775807", Default: strconv.FormatUint(d.Seed, 10),
				Values: [2]string{"42", "7"}, Prompt: "Add film grain to the photo", Invalid: []string{"-1"},
				Recorded: []string{"settings.seed"}, Source: "edit/settings.go ParseSettings; edit/ops.go grainOp"},
			{Field: "quality", Effect: schema.EffectNoop, Allowed: "auto|low|medium|high|xhigh|max|standard",
				Values: [2]string{"low", "high"}, Recorded: []string{"ignored.quality"}, Source: "server/form.go openAIChoices: the edit is exact at every quality"},
		},
		Refused: []schema.Refusal{
			{Field: "negative_prompt", Value: "blurry", Why: "refedit has no negative prompt: server/form.go readForm refuses the unknown field"},
			{Field: "true_cfg_scale", Value: "4.0", Why: "refedit has one guidance: server/form.go readForm refuses the unknown field"},
			{Field: "mask", Value: "x", Why: "server/form.go openAIRefused: refedit edits the whole image"},
			{Field: "qualkit_unknown_control", Value: "1", Why: "a field no server knows: server/form.go readForm refuses it"},
		},
		StepRatio:       [2]float64{1.6, 2.4},
		StepTime:        "timing.task_cpu_ms",
		Precision:       edit.Precision,
		PrecisionRecord: "settings.precision",
	}
}
