// Package controls plans and judges the controls stage: for every request setting a
// family declares (schema.Controls), requests that differ only in it, and for every field
// it does not support, a request that must be refused by name. The harness sends the
// probes and judges what came back; the evidence checker re-derives the verdict from the
// PNGs and the server's records with the same Judge.
package controls

import (
	"cmp"
	"fmt"
	"image"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// StepRepeats is how often each point of the steps measurement is sent, N and 2N back
// to back each time (N first, then 2N first, alternately, so a load that rises or falls
// through the stage biases the pairs both ways): the ratio of each pair is taken over the
// same moments of a busy host, and the median pair counts.
const StepRepeats = 5

// Plan is the probes for decl: each control's two values (seed's first twice; steps'
// each StepRepeats times), each invalid value, each refused field, in that order. base
// are the settings every probe carries unless it changes one (the influence probe's),
// prompt the instruction unless the control names its own.
func Plan(decl *schema.Controls, base map[string]string, prompt string) []schema.ControlProbe {
	if decl == nil {
		return nil
	}
	var out []schema.ControlProbe
	add := func(name, field, value, instr string) {
		s := map[string]string{}
		maps.Copy(s, base)
		s[field] = value
		out = append(out, schema.ControlProbe{Name: name, RequestID: schema.ControlsRequestID(name), Field: field, Value: value, Prompt: instr, Settings: s})
	}
	for _, c := range decl.Controls {
		instr := cmpOr(c.Prompt, prompt)
		switch c.Effect {
		case schema.EffectSeed:
			add(c.Field+"-a", c.Field, c.Values[0], instr)
			add(c.Field+"-a-repeat", c.Field, c.Values[0], instr)
			add(c.Field+"-b", c.Field, c.Values[1], instr)
		case schema.EffectSteps:
			for i := range StepRepeats {
				a := func() { add(fmt.Sprintf("%s-a-%d", c.Field, i+1), c.Field, c.Values[0], instr) }
				b := func() { add(fmt.Sprintf("%s-b-%d", c.Field, i+1), c.Field, c.Values[1], instr) }
				if i%2 == 0 {
					a()
					b()
				} else {
					b()
					a()
				}
			}
		default:
			add(c.Field+"-a", c.Field, c.Values[0], instr)
			add(c.Field+"-b", c.Field, c.Values[1], instr)
		}
	}
	for _, c := range decl.Controls {
		for i, v := range c.Invalid {
			add(fmt.Sprintf("%s-invalid-%d", c.Field, i+1), c.Field, v, cmpOr(c.Prompt, prompt))
		}
	}
	for _, f := range decl.Refused {
		add("refused-"+strings.ToLower(f.Field), f.Field, f.Value, prompt)
	}
	for _, f := range decl.Accepted {
		add("accepted-"+strings.ToLower(f.Field), f.Field, f.Value, prompt)
	}
	return out
}

// ByStepTime says whether probe p's time is read from the records at decl.StepTime
// rather than being the request's Task time: a steps probe answered 200, of a family
// that names one.
func ByStepTime(decl *schema.Controls, p schema.ControlProbe) bool {
	if decl == nil || decl.StepTime == "" || p.Status != 200 {
		return false
	}
	return slices.ContainsFunc(decl.Controls, func(c schema.Control) bool { return c.Field == p.Field && c.Effect == schema.EffectSteps })
}

// Input is what the probes got back, and what the server recorded of every request.
type Input struct {
	Decl   *schema.Controls
	Probes []schema.ControlProbe // as sent and answered (Plan's, Status, Message, TaskMS set)
	// Outputs are the decoded PNGs of the probes answered 200, by name.
	Outputs map[string]image.Image
	// Gate is the family's quality gates for one output (nil: none); a missed gate fails
	// the stage: every probe is an edit like any other.
	Gate func(probe schema.ControlProbe, out image.Image) []string
	// Work are the requests whose records are held to what they asked: the benchmark's
	// and the 200 probes'.
	Work []Asked
}

// Asked is one request's settings and its records line (nil when the server wrote none).
type Asked struct {
	RequestID string
	Settings  map[string]string
	Record    any
}

// Verdict is the stage's result and why it fails (nil: it passes).
type Verdict struct {
	Result schema.ControlsResult
	Err    error
}

// Judge holds every control to its declared effect, every refusal to a 4xx naming its
// field, every output to the quality gates, and every records line to what its request
// asked.
func Judge(in Input) Verdict {
	res := schema.ControlsResult{Declared: in.Decl, Probes: in.Probes, Controls: []schema.ControlVerdict{}, Refused: []schema.RefusalVerdict{}}
	if in.Decl == nil {
		return Verdict{Result: res}
	}
	byName := map[string]schema.ControlProbe{}
	for _, p := range in.Probes {
		byName[p.Name] = p
	}
	var problems []string
	for _, c := range in.Decl.Controls {
		v := judgeControl(c, in.Decl.StepRatio, cmpOr(in.Decl.StepTime, "Task"), byName, in.Outputs)
		if v.Error != "" {
			problems = append(problems, fmt.Sprintf("control %s: %s", c.Field, v.Error))
		}
		res.Controls = append(res.Controls, v)
	}
	for _, p := range in.Probes {
		var v schema.RefusalVerdict
		switch {
		case strings.Contains(p.Name, "-invalid-") || strings.HasPrefix(p.Name, "refused-"):
			v = judgeRefusal(p)
		case strings.HasPrefix(p.Name, "accepted-"):
			v = judgeAccepted(p, in.Decl.Accepted)
		default:
			continue
		}
		if v.Error != "" {
			problems = append(problems, fmt.Sprintf("field %s=%q: %s", p.Field, p.Value, v.Error))
		}
		res.Refused = append(res.Refused, v)
	}
	for _, p := range in.Probes {
		out, ok := in.Outputs[p.Name]
		if !ok || in.Gate == nil {
			continue
		}
		if miss := in.Gate(p, out); len(miss) > 0 {
			if res.Quality == nil {
				res.Quality = map[string]string{}
			}
			res.Quality[p.Name] = strings.Join(miss, "; ")
			problems = append(problems, fmt.Sprintf("probe %s (%s=%s): quality gate: %s", p.Name, p.Field, p.Value, res.Quality[p.Name]))
		}
	}
	res.Work = judgeWork(in.Decl, in.Work)
	for _, m := range res.Work.Mismatches {
		problems = append(problems, "work recorded: "+m)
	}
	v := Verdict{Result: res}
	if len(problems) > 0 {
		v.Err = fmt.Errorf("%d control check(s) failed:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return v
}

// judgeControl judges one control from its probes.
func judgeControl(c schema.Control, band [2]float64, measure string, probes map[string]schema.ControlProbe, outs map[string]image.Image) schema.ControlVerdict {
	v := schema.ControlVerdict{Field: c.Field, Effect: c.Effect, Verdict: schema.Fail}
	names := []string{c.Field + "-a", c.Field + "-b"}
	switch c.Effect {
	case schema.EffectSeed:
		names = []string{c.Field + "-a", c.Field + "-a-repeat", c.Field + "-b"}
	case schema.EffectSteps:
		names = nil
		for i := range StepRepeats {
			names = append(names, fmt.Sprintf("%s-a-%d", c.Field, i+1), fmt.Sprintf("%s-b-%d", c.Field, i+1))
		}
	}
	for _, n := range names {
		p, ok := probes[n]
		switch {
		case !ok:
			v.Error = fmt.Sprintf("probe %s was not sent", n)
		case p.Status != 200:
			v.Error = fmt.Sprintf("%s=%q (probe %s) was answered %d: %s: a declared value must be served", c.Field, p.Value, n, p.Status, p.Message)
		case outs[n] == nil:
			v.Error = fmt.Sprintf("probe %s has no output image", n)
		}
		if v.Error != "" {
			v.Figure = "not measured"
			return v
		}
	}
	a, b := outs[names[0]], outs[names[len(names)-1]]
	switch c.Effect {
	case schema.EffectPixels:
		d := differing(a, b)
		v.Differing = d
		v.Figure = fmt.Sprintf("%s %s vs %s: %d pixels differ", c.Field, c.Values[0], c.Values[1], d)
		if d == 0 {
			v.Error = fmt.Sprintf("%s %s and %s gave pixel-identical outputs: the server ignores %s", c.Field, c.Values[0], c.Values[1], c.Field)
		}
	case schema.EffectNoop:
		d := differing(a, b)
		v.Differing = d
		v.Figure = fmt.Sprintf("%s %s vs %s: %d pixels differ (no-op)", c.Field, c.Values[0], c.Values[1], d)
		if d != 0 {
			v.Error = fmt.Sprintf("%s is declared a no-op, and %s and %s gave outputs %d pixels apart", c.Field, c.Values[0], c.Values[1], d)
		}
	case schema.EffectSeed:
		rep, other := differing(a, outs[names[1]]), differing(a, b)
		v.Differing = other
		v.Figure = fmt.Sprintf("seed %s twice: %d pixels differ; %s vs %s: %d differ", c.Values[0], rep, c.Values[0], c.Values[1], other)
		switch {
		case rep != 0:
			v.Error = fmt.Sprintf("the same %s %s twice gave outputs %d pixels apart: it does not reproduce", c.Field, c.Values[0], rep)
		case other == 0:
			v.Error = fmt.Sprintf("%s %s and %s gave pixel-identical outputs: the server ignores %s", c.Field, c.Values[0], c.Values[1], c.Field)
		}
	case schema.EffectSize:
		var got []string
		for i, n := range names {
			s := outs[n].Bounds().Size()
			got = append(got, fmt.Sprintf("%dx%d", s.X, s.Y))
			if !strings.EqualFold(got[i], strings.TrimSpace(c.Values[i])) && v.Error == "" {
				v.Error = fmt.Sprintf("%s=%s gave a %s PNG: the server does not honour %s", c.Field, c.Values[i], got[i], c.Field)
			}
		}
		v.Figure = fmt.Sprintf("asked %s, %s; got %s", c.Values[0], c.Values[1], strings.Join(got, ", "))
	case schema.EffectSteps:
		judgeSteps(&v, c, band, measure, probes, names)
	default:
		v.Error = fmt.Sprintf("unknown effect %q", c.Effect)
	}
	if v.Error == "" {
		v.Verdict = schema.Pass
	}
	return v
}

// judgeSteps: the least Task time at 2N steps over that at N lies in the band; the two
// points give the per-step and the fixed cost.
func judgeSteps(v *schema.ControlVerdict, c schema.Control, band [2]float64, measure string, probes map[string]schema.ControlProbe, names []string) {
	n1, err1 := strconv.ParseFloat(c.Values[0], 64)
	n2, err2 := strconv.ParseFloat(c.Values[1], 64)
	if err1 != nil || err2 != nil || !(n2 > n1) || n1 <= 0 {
		v.Error = fmt.Sprintf("values %q and %q: want two step counts, N and a larger one", c.Values[0], c.Values[1])
		return
	}
	// The pair whose ratio is the median of the pairs (N and 2N sent back to back).
	pairs := make([][2]float64, 0, len(names)/2)
	for i := 0; i+1 < len(names); i += 2 {
		pairs = append(pairs, [2]float64{probes[names[i]].TaskMS, probes[names[i+1]].TaskMS})
	}
	slices.SortFunc(pairs, func(x, y [2]float64) int { return cmp.Compare(x[1]/x[0], y[1]/y[0]) })
	t := pairs[len(pairs)/2]
	v.TaskMS = [2]float64{round3(t[0]), round3(t[1])}
	if !(t[0] > 0) {
		v.Error = fmt.Sprintf("no Task time at %s steps", c.Values[0])
		v.Figure = "not measured"
		return
	}
	v.Ratio = round3(t[1] / t[0])
	v.PerStepMS = round3((t[1] - t[0]) / (n2 - n1))
	v.FixedMS = round3(t[0] - n1*(t[1]-t[0])/(n2-n1))
	v.Figure = fmt.Sprintf("%s %.1f ms at %s steps, %.1f ms at %s: ratio %.2f (band %.2f-%.2f, the median of %d pairs); %.2f ms/step + %.1f ms fixed",
		measure, t[0], c.Values[0], t[1], c.Values[1], v.Ratio, band[0], band[1], len(pairs), v.PerStepMS, v.FixedMS)
	if v.Ratio < band[0] || v.Ratio > band[1] {
		v.Error = fmt.Sprintf("the time (%s) at %s steps is %.2f x that at %s, outside the family's band %.2f-%.2f: the server does not run the steps asked",
			measure, c.Values[1], v.Ratio, c.Values[0], band[0], band[1])
	}
}

// judgeRefusal: a 4xx whose message names the field.
func judgeRefusal(p schema.ControlProbe) schema.RefusalVerdict {
	v := schema.RefusalVerdict{Field: p.Field, Value: p.Value, Status: p.Status, Message: p.Message, Verdict: schema.Fail}
	switch {
	case p.Status == 200:
		v.Error = fmt.Sprintf("answered 200: the server accepted %s=%q instead of refusing it", p.Field, p.Value)
	case p.Status < 400 || p.Status > 499:
		v.Error = fmt.Sprintf("answered %d, want a 4xx", p.Status)
	case !strings.Contains(p.Message, p.Field):
		v.Error = fmt.Sprintf("answered %d, and the message does not name %s: %s", p.Status, p.Field, p.Message)
	default:
		v.Verdict = schema.Pass
	}
	return v
}

// judgeAccepted: a declared gap is answered 200, as the declaration says.
func judgeAccepted(p schema.ControlProbe, accepted []schema.Refusal) schema.RefusalVerdict {
	v := schema.RefusalVerdict{Field: p.Field, Value: p.Value, Status: p.Status, Message: p.Message, Verdict: schema.Gap}
	if i := slices.IndexFunc(accepted, func(a schema.Refusal) bool { return a.Field == p.Field && a.Value == p.Value }); i >= 0 {
		v.Gap = accepted[i].Why
	}
	if p.Status != 200 {
		v.Verdict = schema.Fail
		v.Error = fmt.Sprintf("declared accepted with 200 (%s), and answered %d: the declaration no longer says what the server does", v.Gap, p.Status)
	}
	return v
}

// judgeWork holds each records line to what its request asked, for every control that
// states where the records carry it, and to the declared precision.
func judgeWork(decl *schema.Controls, work []Asked) schema.WorkCheck {
	w := schema.WorkCheck{Requests: len(work)}
	recorded := slices.ContainsFunc(decl.Controls, func(c schema.Control) bool { return len(c.Recorded) > 0 }) || decl.PrecisionRecord != ""
	for _, a := range work {
		if !recorded {
			break
		}
		if a.Record == nil {
			w.Mismatches = append(w.Mismatches, fmt.Sprintf("request %s: the server wrote no records line", a.RequestID))
			continue
		}
		for _, c := range decl.Controls {
			asked, ok := a.Settings[c.Field]
			if !ok || len(c.Recorded) == 0 {
				continue
			}
			w.Values++
			got, err := recordedValue(a.Record, c.Recorded)
			switch {
			case err != nil:
				w.Mismatches = append(w.Mismatches, fmt.Sprintf("request %s: %s: %v", a.RequestID, c.Field, err))
			case !sameValue(asked, got):
				w.Mismatches = append(w.Mismatches, fmt.Sprintf("request %s asked %s=%s, the server's records say it ran %s", a.RequestID, c.Field, asked, got))
			}
		}
		if decl.PrecisionRecord != "" {
			w.Values++
			got, err := recordedValue(a.Record, []string{decl.PrecisionRecord})
			if err != nil || got != decl.Precision {
				w.Mismatches = append(w.Mismatches, fmt.Sprintf("request %s: the records state precision %q (%v), the family declares %q", a.RequestID, got, err, decl.Precision))
			}
		}
	}
	return w
}

// recordedValue is the value at paths in a records line, joined by "x".
func recordedValue(doc any, paths []string) (string, error) {
	var parts []string
	for _, p := range paths {
		cur := doc
		for _, key := range strings.Split(p, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return "", fmt.Errorf("the records line has no %s", p)
			}
			if cur, ok = m[key]; !ok || cur == nil {
				return "", fmt.Errorf("the records line has no %s", p)
			}
		}
		switch x := cur.(type) {
		case string:
			parts = append(parts, x)
		case float64:
			parts = append(parts, strconv.FormatFloat(x, 'f', -1, 64))
		default:
			parts = append(parts, fmt.Sprint(x))
		}
	}
	return strings.Join(parts, "x"), nil
}

// sameValue compares numbers as numbers, and anything else ignoring case and spaces.
func sameValue(a, b string) bool {
	fa, ea := strconv.ParseFloat(strings.TrimSpace(a), 64)
	fb, eb := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if ea == nil && eb == nil {
		return fa == fb
	}
	return strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// Summary is the declared controls in a few words, for the inventory's supported-controls
// column: "size, num_inference_steps 1-100, guidance_scale (0, 3], seed"; "not declared"
// for none.
func Summary(decl *schema.Controls) string {
	if decl == nil || len(decl.Controls) == 0 {
		return "not declared"
	}
	var parts []string
	for _, c := range decl.Controls {
		if c.Effect == schema.EffectNoop {
			parts = append(parts, c.Field+" (no-op)")
			continue
		}
		parts = append(parts, strings.TrimSpace(c.Field+" "+c.Allowed))
	}
	return strings.Join(parts, ", ")
}

// differing counts the pixels whose 8-bit RGBA differ; every pixel when the sizes differ.
func differing(a, b image.Image) int {
	if a.Bounds().Size() != b.Bounds().Size() {
		return max(a.Bounds().Dx()*a.Bounds().Dy(), b.Bounds().Dx()*b.Bounds().Dy())
	}
	pa, pb := judge.ToNRGBA(a), judge.ToNRGBA(b)
	n := 0
	for y := range pa.Rect.Dy() {
		ra, rb := pa.Pix[y*pa.Stride:y*pa.Stride+4*pa.Rect.Dx()], pb.Pix[y*pb.Stride:y*pb.Stride+4*pb.Rect.Dx()]
		for x := 0; x < len(ra); x += 4 {
			if [4]uint8(ra[x:x+4]) != [4]uint8(rb[x:x+4]) {
				n++
			}
		}
	}
	return n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
