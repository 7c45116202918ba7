package controls

import (
	"fmt"
	"image"
	"image/color"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// decl is a declaration with one control of each effect, a refusal and recorded values.
func decl() *schema.Controls {
	return &schema.Controls{
		Controls: []schema.Control{
			{Field: "size", Effect: schema.EffectSize, Allowed: "WxH", Values: [2]string{"4x4", "6x2"}, Recorded: []string{"settings.width", "settings.height"}},
			{Field: "num_inference_steps", Effect: schema.EffectSteps, Allowed: "1-100", Values: [2]string{"10", "20"}, Invalid: []string{"0"}, Recorded: []string{"settings.num_inference_steps"}},
			{Field: "guidance_scale", Effect: schema.EffectPixels, Allowed: ">0", Values: [2]string{"1", "2"}},
			{Field: "seed", Effect: schema.EffectSeed, Values: [2]string{"1", "2"}, Recorded: []string{"settings.seed"}},
			{Field: "quality", Effect: schema.EffectNoop, Values: [2]string{"low", "high"}},
		},
		Refused:   []schema.Refusal{{Field: "mask", Value: "x"}},
		StepRatio: [2]float64{1.6, 2.4},
	}
}

func solid(w, h int, v uint8) image.Image {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range m.Pix {
		m.Pix[i] = v
	}
	m.Set(0, 0, color.NRGBA{A: 255})
	return m
}

// good is what an honest server answers: every probe of Plan, sizes as asked, pixels
// per value, Task time 5 ms fixed + 1 ms a step, refusals naming their field, and records
// that state what each request asked.
func good() Input {
	d := decl()
	probes := Plan(d, map[string]string{"size": "4x4", "seed": "1", "num_inference_steps": "10", "guidance_scale": "1"}, "edit")
	in := Input{Decl: d, Outputs: map[string]image.Image{}}
	for _, p := range probes {
		switch {
		case strings.Contains(p.Name, "-invalid-") || strings.HasPrefix(p.Name, "refused-"):
			p.Status, p.Message = 400, p.Field+" is not supported"
		default:
			p.Status = 200
			size := p.Settings["size"]
			w, h := 4, 4
			if size == "6x2" {
				w, h = 6, 2
			}
			v := uint8(100)
			if p.Field != "quality" && (p.Value == "2" || p.Value == "20") {
				v = 150
			}
			in.Outputs[p.Name] = solid(w, h, v)
			if p.Field == "num_inference_steps" {
				p.TaskMS = 5 + map[string]float64{"10": 10, "20": 20}[p.Value]
			}
			sw, sh, _ := strings.Cut(size, "x")
			in.Work = append(in.Work, Asked{RequestID: p.RequestID, Settings: p.Settings, Record: map[string]any{"settings": map[string]any{
				"width": sw, "height": sh, "num_inference_steps": p.Settings["num_inference_steps"], "seed": p.Settings["seed"]}}})
		}
		in.Probes = append(in.Probes, p)
	}
	return in
}

func TestJudgePasses(t *testing.T) {
	v := Judge(good())
	require.NoError(t, v.Err)
	require.Len(t, v.Result.Controls, 5)
	steps := v.Result.Controls[1]
	assert.Equal(t, schema.Pass, steps.Verdict)
	assert.InDelta(t, 25.0/15.0, steps.Ratio, 0.001)
	assert.InDelta(t, 1.0, steps.PerStepMS, 1e-9)
	assert.InDelta(t, 5.0, steps.FixedMS, 1e-9)
	assert.Len(t, v.Result.Refused, 2, "steps 0 and mask")
	assert.Equal(t, 0, len(v.Result.Work.Mismatches))
	assert.Positive(t, v.Result.Work.Values)
}

func TestJudgeFailsEachWay(t *testing.T) {
	set := func(in *Input, name string, f func(p *schema.ControlProbe)) {
		for i := range in.Probes {
			if in.Probes[i].Name == name {
				f(&in.Probes[i])
			}
		}
	}
	for _, tc := range []struct {
		name, want string
		plant      func(in *Input)
	}{
		{"steps ignored", "control num_inference_steps: the time (Task) at 20 steps is 1.00 x", func(in *Input) {
			for i := range StepRepeats {
				set(in, fmt.Sprintf("num_inference_steps-b-%d", i+1), func(p *schema.ControlProbe) { p.TaskMS = 15 })
			}
		}},
		{"size pinned", "control size: size=6x2 gave a 4x4 PNG", func(in *Input) { in.Outputs["size-b"] = solid(4, 4, 100) }},
		{"guidance dropped", "control guidance_scale: guidance_scale 1 and 2 gave pixel-identical outputs", func(in *Input) {
			in.Outputs["guidance_scale-b"] = in.Outputs["guidance_scale-a"]
		}},
		{"seed ignored", "control seed: seed 1 and 2 gave pixel-identical outputs", func(in *Input) { in.Outputs["seed-b"] = in.Outputs["seed-a"] }},
		{"seed not reproducible", "the same seed 1 twice gave outputs", func(in *Input) { in.Outputs["seed-a-repeat"] = solid(4, 4, 7) }},
		{"no-op changes pixels", "quality is declared a no-op", func(in *Input) { in.Outputs["quality-b"] = solid(4, 4, 9) }},
		{"declared value refused", "guidance_scale=\"2\" (probe guidance_scale-b) was answered 400", func(in *Input) {
			set(in, "guidance_scale-b", func(p *schema.ControlProbe) { p.Status, p.Message = 400, "no" })
		}},
		{"unknown field accepted", "field mask=\"x\": answered 200", func(in *Input) {
			set(in, "refused-mask", func(p *schema.ControlProbe) { p.Status = 200 })
		}},
		{"refusal is a 500", "answered 500, want a 4xx", func(in *Input) {
			set(in, "num_inference_steps-invalid-1", func(p *schema.ControlProbe) { p.Status = 500 })
		}},
		{"refusal names no field", "the message does not name mask", func(in *Input) {
			set(in, "refused-mask", func(p *schema.ControlProbe) { p.Message = "bad request" })
		}},
		{"records state other work", "asked num_inference_steps=20, the server's records say it ran 4", func(in *Input) {
			for i, a := range in.Work {
				if a.Settings["num_inference_steps"] == "20" {
					in.Work[i].Record = map[string]any{"settings": map[string]any{"width": "4", "height": "4", "num_inference_steps": 4.0, "seed": "1"}}
				}
			}
		}},
		{"no records line", "the server wrote no records line", func(in *Input) { in.Work[0].Record = nil }},
		{"quality gate missed", "quality gate: flat", func(in *Input) {
			in.Gate = func(p schema.ControlProbe, _ image.Image) []string {
				if p.Name == "seed-b" {
					return []string{"flat"}
				}
				return nil
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.plant(&in)
			v := Judge(in)
			require.Error(t, v.Err)
			assert.Contains(t, v.Err.Error(), tc.want)
		})
	}
}

// A host whose load changes between the pairs does not move the verdict: each pair is
// sent back to back and the median pair's ratio counts (the least time of each point
// would give 50/15 = 3.33 here, outside the band).
func TestJudgeStepsMedianPair(t *testing.T) {
	in := good()
	times := map[string]float64{"num_inference_steps-a-1": 15, "num_inference_steps-b-1": 50,
		"num_inference_steps-a-2": 30, "num_inference_steps-b-2": 50, "num_inference_steps-a-3": 30, "num_inference_steps-b-3": 50,
		"num_inference_steps-a-4": 90, "num_inference_steps-b-4": 50, "num_inference_steps-a-5": 30, "num_inference_steps-b-5": 50}
	for i := range in.Probes {
		if ms, ok := times[in.Probes[i].Name]; ok {
			in.Probes[i].TaskMS = ms
		}
	}
	v := Judge(in)
	require.NoError(t, v.Err)
	assert.InDelta(t, 50.0/30.0, v.Result.Controls[1].Ratio, 0.001)
}

// The steps pairs alternate which point goes first.
func TestPlanAlternatesStepPairs(t *testing.T) {
	var order []string
	for _, p := range Plan(decl(), nil, "edit") {
		if p.Field == "num_inference_steps" && !strings.Contains(p.Name, "invalid") {
			order = append(order, strings.TrimPrefix(p.Name, "num_inference_steps-"))
		}
	}
	assert.Equal(t, []string{"a-1", "b-1", "b-2", "a-2", "a-3", "b-3", "b-4", "a-4", "a-5", "b-5"}, order)
}

func TestJudgeWithoutDeclaration(t *testing.T) {
	v := Judge(Input{})
	require.NoError(t, v.Err)
	assert.Nil(t, v.Result.Declared)
	assert.Equal(t, "not declared", Summary(nil))
}

func TestSummary(t *testing.T) {
	assert.Equal(t, "size WxH, num_inference_steps 1-100, guidance_scale >0, seed, quality (no-op)", Summary(decl()))
}

func TestPlanChangesOneSettingAtATime(t *testing.T) {
	base := map[string]string{"size": "4x4", "seed": "1"}
	for _, p := range Plan(decl(), base, "edit") {
		for k, v := range base {
			if k != p.Field {
				assert.Equal(t, v, p.Settings[k], "probe %s changes %s too", p.Name, k)
			}
		}
		assert.Equal(t, p.Value, p.Settings[p.Field], p.Name)
		assert.Equal(t, schema.ControlsRequestID(p.Name), p.RequestID)
	}
	assert.Equal(t, "4x4", base["size"], "the base settings are not changed")
}

// A family that names a StepTime has its steps probes timed by it, and nothing else.
func TestByStepTime(t *testing.T) {
	d := decl()
	steps := schema.ControlProbe{Field: "num_inference_steps", Status: 200}
	assert.False(t, ByStepTime(d, steps), "no StepTime: the Task time")
	d.StepTime = "timing.task_cpu_ms"
	assert.True(t, ByStepTime(d, steps))
	assert.False(t, ByStepTime(d, schema.ControlProbe{Field: "num_inference_steps", Status: 400}), "a refused value ran nothing")
	assert.False(t, ByStepTime(d, schema.ControlProbe{Field: "seed", Status: 200}))
}

// A declared gap (a field the server answers 200 where a refusal is wanted) is sent,
// recorded with its citation, and passes only while the server still answers 200.
func TestJudgeDeclaredGap(t *testing.T) {
	d := decl()
	d.Refused = nil
	d.Accepted = []schema.Refusal{{Field: "qualkit_unknown_control", Value: "1", Why: "app.py § task validates no operation field"}}
	probes := Plan(d, map[string]string{"size": "4x4"}, "edit")
	last := probes[len(probes)-1]
	require.Equal(t, "accepted-qualkit_unknown_control", last.Name)
	assert.Equal(t, "1", last.Settings["qualkit_unknown_control"])

	in := good()
	in.Decl = d
	gap := last
	gap.Status = 200
	in.Probes = append(in.Probes[:len(in.Probes)-1], gap) // good()'s last probe is its refusal
	v := Judge(in)
	require.NoError(t, v.Err)
	require.Len(t, v.Result.Refused, 2) // steps 0, and the gap
	assert.Equal(t, schema.RefusalVerdict{Field: "qualkit_unknown_control", Value: "1", Status: 200, Verdict: schema.Gap,
		Gap: "app.py § task validates no operation field"}, v.Result.Refused[1])

	gap.Status, gap.Message = 400, "unsupported fields: qualkit_unknown_control"
	in.Probes[len(in.Probes)-1] = gap
	v = Judge(in)
	require.Error(t, v.Err)
	assert.Contains(t, v.Err.Error(), "field qualkit_unknown_control=\"1\": declared accepted with 200")
	assert.Equal(t, schema.Fail, v.Result.Refused[1].Verdict)
}
