package evidencecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"math"
	"path"
	"slices"
	"strings"

	"qualkit/families/all"

	"qualkit/internal/judge"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// checkQuality re-derives the quality stage from the PNGs, by results.json's criteria.
func (r *rowCheck) checkQuality() {
	q := r.res.Quality
	if q == nil {
		r.truth(!r.ran(schema.StageQuality), schema.ResultsFile, "quality", "present once the quality stage ran", "none")
		return
	}
	stated := map[float64]bool{}
	for _, f := range q.Files {
		b, ok := r.read(f.File)
		if !ok {
			r.fail(f.File, "exact file set", "the family's thresholds file "+f.Source+" (results.json quality.files)", "missing")
			continue
		}
		r.same(schema.ResultsFile, "quality.files "+f.File+" sha256", bytesSHA256(b), f.SHA256, f.File)
		var doc any
		if json.Unmarshal(b, &doc) == nil {
			jsonNumbers(doc, stated)
		}
	}
	// Bounds loosened in results.json alone do not pass.
	c := q.Criteria
	for _, b := range []struct {
		name string
		v    *float64
	}{{"pixel_mean_min", c.MeanMin}, {"pixel_mean_max", c.MeanMax}, {"pixel_std_min", c.StdMin}, {"std_ratio_min", c.StdRatioMin},
		{"psnr_min", c.PSNRMin}, {"ssim_min", c.SSIMMin}, {"reference_std_ratio_min", c.RefStdRatioMin}} {
		if b.v != nil {
			r.truth(stated[*b.v], schema.ResultsFile, "quality.criteria."+b.name, "a value the family's thresholds files state", fmt.Sprint(*b.v))
		}
	}
	for _, w := range []struct {
		name string
		v    float64
	}{{"std_ratio_when_input_std_at_least", c.StdRatioWhenInputStd}, {"reference_std_ratio_when_reference_std_at_least", c.RefStdRatioWhenRefStd}} {
		if w.v != 0 {
			r.truth(stated[w.v], schema.ResultsFile, "quality.criteria."+w.name, "a value the family's thresholds files state", fmt.Sprint(w.v))
		}
	}
	if r.rawErr != nil {
		return
	}
	byID := map[string]schema.QualityRequest{}
	for _, got := range q.Requests {
		byID[got.RequestID] = got
	}
	failures, derived := 0, 0
	for _, req := range r.reqs {
		want, miss, ok := req.quality.m, req.quality.miss, req.quality.ok
		if !ok {
			continue // checkBenchmark says what is wrong with the output or its input
		}
		failures += len(miss)
		derived++
		got, ok := byID[req.id]
		at := "quality.requests[" + req.id + "]."
		if !ok {
			r.fail(schema.ResultsFile, at, "a measure of every HTTP output in identity/", "none")
			continue
		}
		r.same(schema.ResultsFile, at+"file", want.File, got.File, "")
		for _, m := range []struct {
			name      string
			want, got float64
		}{{"mean", want.Mean, got.Mean}, {"std", want.Std, got.Std}, {"input_std", want.InputStd, got.InputStd}, {"std_ratio", want.StdRatio, got.StdRatio}} {
			r.truth(math.Abs(m.want-m.got) < 2e-6, schema.ResultsFile, at+m.name, fmt.Sprintf("%.6f (%s and its input in %s)", m.want, req.httpRel(), schema.RawExportFile), fmt.Sprintf("%.6f", m.got))
		}
		r.same(schema.ResultsFile, at+"failures", fmt.Sprint(len(miss)), fmt.Sprint(len(got.Failures)), "the criteria in results.json quality.criteria applied to the re-derived measures")
	}
	r.same(schema.ResultsFile, "quality.requests", fmt.Sprint(derived), fmt.Sprint(len(q.Requests)), "one per HTTP output in identity/")
	if p := q.Pair; p != nil {
		failures += r.checkQualityPair(q.Criteria, p)
	}
	r.same(schema.ResultsFile, "quality.failures", fmt.Sprint(failures), fmt.Sprint(q.Failures), "the re-derived misses")
	if r.ran(schema.StageQuality) {
		r.truth(r.passed(schema.StageQuality) == (failures == 0), schema.ResultsFile, "stage quality", fmt.Sprintf("%d criterion(s) missed", failures), "stage "+r.stageStatus(schema.StageQuality))
	}
}

// derivedQuality is re-derived once: checkQuality and the contact sheet read it.
type derivedQuality struct {
	m    schema.QualityRequest
	miss []string
	ok   bool
}

type derivedPairQuality struct {
	d    schema.QualityPair
	miss []string
	err  error
}

// loadQuality re-derives each request's measures, and the pair's when its reference is
// one the correctness case wrote and kept.
func (r *rowCheck) loadQuality() {
	if r.res == nil || r.res.Quality == nil || r.rawErr != nil {
		return
	}
	c := r.res.Quality.Criteria
	for _, q := range r.reqs {
		m, miss, ok := measureRequest(q, c)
		q.quality = derivedQuality{m, miss, ok}
	}
	p := r.res.Quality.Pair
	if p == nil || !pathUnder(p.Reference, schema.CorrectnessArtifacts+"/") {
		return
	}
	ref, ok := r.read(p.Reference)
	for _, q := range r.reqs {
		if ok && q.id == p.RequestID && q.httpFile != nil {
			d, miss, err := measurePair(c, ref, q.httpFile)
			r.pair = &derivedPairQuality{d, miss, err}
		}
	}
}

// derivedMeasures: pair is nil when there is none.
func (r *rowCheck) derivedMeasures() ([]schema.QualityRequest, *schema.QualityPair) {
	var reqs []schema.QualityRequest
	for _, q := range r.reqs {
		if q.quality.ok {
			reqs = append(reqs, q.quality.m)
		}
	}
	if r.pair == nil || r.pair.err != nil {
		return reqs, nil
	}
	return reqs, &r.pair.d
}

func measureRequest(req *request, c schema.QualityCriteria) (schema.QualityRequest, []string, bool) {
	if req.httpFile == nil || req.sent == nil {
		return schema.QualityRequest{}, nil, false
	}
	out, err := decodePNG(req.httpFile)
	if err != nil {
		return schema.QualityRequest{}, nil, false
	}
	in, _, err := image.Decode(bytes.NewReader(req.sent))
	if err != nil {
		return schema.QualityRequest{}, nil, false
	}
	outS, inS := quality.Measure(out), quality.Measure(in)
	m := schema.QualityRequest{RequestID: req.id, Phase: req.phase, File: req.httpRel(),
		Mean: outS.Mean, Std: outS.Std, InputStd: inS.Std, StdRatio: quality.Ratio(outS, inS)}
	miss := quality.Judge(c, outS, inS)
	if judge.IsConstant(out) {
		miss = append(miss, "output is a constant image")
	} else if judge.ChangedFraction(in, out) < judge.MinChangedFraction {
		miss = append(miss, "output is the input image unchanged or only resized")
	}
	return m, miss, true
}

// checkQualityPair returns the misses.
func (r *rowCheck) checkQualityPair(c schema.QualityCriteria, p *schema.QualityPair) int {
	var req *request
	for _, q := range r.reqs {
		if q.id == p.RequestID {
			req = q
		}
	}
	if req == nil || req.httpFile == nil {
		r.fail(schema.ResultsFile, "quality.pair.request_id", "a request of "+schema.RawExportFile+" with an HTTP output", p.RequestID)
		return 0
	}
	r.same(schema.ResultsFile, "quality.pair.prompt", req.prompt, p.Prompt, schema.RawExportFile)
	r.same(schema.ResultsFile, "quality.pair.metric", c.PairMetric, p.Metric, "results.json quality.criteria.pair_metric")
	if want := r.pairMetricOfBackend(); want != c.PairMetric {
		r.fail(schema.ResultsFile, "quality.criteria.pair_metric", fmt.Sprintf("%q: the formula the %s backend's thresholds were set for (%s)", want, r.res.Checkpoint.Backend, r.layoutNote()), fmt.Sprintf("%q", c.PairMetric))
	}
	if !pathUnder(p.Reference, schema.CorrectnessArtifacts+"/") {
		r.fail(schema.ResultsFile, "quality.pair.reference", "an image the correctness case wrote (correctness/artifacts/)", p.Reference)
		return 0
	}
	if rl, ok := r.rules(); !ok {
		return 0 // checkRules failed the row
	} else if want := rl.PairReference(r.layout(), r.res.Checkpoint.Profile); want != "" {
		r.same(schema.ResultsFile, "quality.pair.reference", schema.Artifact(want), p.Reference,
			"where the "+r.res.Checkpoint.Backend+" correctness case writes the pair's reference image")
	}
	if r.pair == nil {
		r.fail(p.Reference, "exact file set", "the correctness case's reference image of the quality pair", "missing")
		return 0
	}
	d, miss, err := r.pair.d, r.pair.miss, r.pair.err
	if err != nil {
		r.fail(p.Reference, "a PNG", "decodable reference and output", err.Error())
		return 0
	}
	for _, m := range []struct {
		name      string
		want, got float64
	}{{"psnr_db", d.PSNR, p.PSNR}, {"ssim", d.SSIM, p.SSIM}, {"windowed_ssim", d.WindowedSSIM, p.WindowedSSIM}, {"std", d.Std, p.Std}, {"reference_std", d.ReferenceStd, p.ReferenceStd}, {"std_ratio", d.StdRatio, p.StdRatio}} {
		r.truth(math.Abs(m.want-m.got) < 2e-6, schema.ResultsFile, "quality.pair."+m.name, fmt.Sprintf("%.6f (%s vs %s)", m.want, req.httpRel(), p.Reference), fmt.Sprintf("%.6f", m.got))
	}
	if p.CaseLatentsSHA256 != "" || p.InitialLatentsSHA256 != "" {
		miss = append(miss, r.checkPairNoise(p, req)...)
	}
	r.same(schema.ResultsFile, "quality.pair.failures", fmt.Sprint(len(miss)), fmt.Sprint(len(p.Failures)), "the criteria applied to the re-derived PSNR, SSIM and std ratio")
	return len(miss)
}

// checkPairNoise: a pair replaying the case's noise sent a latent_seed, and its noise is
// both the records line's and the case's; it returns the miss.
func (r *rowCheck) checkPairNoise(p *schema.QualityPair, req *request) []string {
	r.truth(req.latentSeed != nil, schema.RawExportFile, "request "+req.id+" latent_seed", "sent: the pair claims the case's replayed noise", "absent")
	var served string
	for _, rec := range r.records {
		if rec.RequestID == req.id {
			served = rec.Observation.InitialLatents
		}
	}
	r.same(schema.ResultsFile, "quality.pair.initial_latents_sha256", served, p.InitialLatentsSHA256, schema.RecordsFile+" observation.initial_latents_sha256 of request "+req.id)
	if served == "" || served != p.CaseLatentsSHA256 {
		return []string{"the served pair did not start from the case's own noise"}
	}
	return nil
}

func measurePair(c schema.QualityCriteria, refPNG, outPNG []byte) (schema.QualityPair, []string, error) {
	ref, err1 := decodePNG(refPNG)
	out, err2 := decodePNG(outPNG)
	if err1 != nil || err2 != nil {
		return schema.QualityPair{}, nil, fmt.Errorf("reference: %v; output: %v", err1, err2)
	}
	m, err := quality.MeasurePair(c.PairMetric, ref, out)
	if err != nil {
		return schema.QualityPair{}, []string{err.Error()}, nil
	}
	psnr, ssim := m.PSNR, m.SSIM
	outS, refS := quality.Measure(out), quality.Measure(ref)
	d := schema.QualityPair{PSNR: psnr, SSIM: ssim, Std: outS.Std, ReferenceStd: refS.Std, StdRatio: quality.Ratio(outS, refS)}
	if c.PairMetric != "" {
		d.Metric, d.WindowedSSIM = m.Metric, m.WindowedSSIM
	}
	return d, quality.JudgePair(c, psnr, ssim, outS, refS), nil
}

func pathUnder(p, dir string) bool {
	return len(p) > len(dir) && p[:len(dir)] == dir && path.Clean(p) == p
}

func jsonNumbers(v any, into map[float64]bool) {
	switch x := v.(type) {
	case float64:
		into[x] = true
	case map[string]any:
		for _, e := range x {
			jsonNumbers(e, into)
		}
	case []any:
		for _, e := range x {
			jsonNumbers(e, into)
		}
	}
}

// rules (families/all): a backend with none fails the row (checkRules).
func (r *rowCheck) rules() (judge.Rules, bool) {
	return judge.Find(all.Rules, r.res.Checkpoint.Backend)
}

func (r *rowCheck) checkRules() {
	if _, ok := r.rules(); !ok {
		var known []string
		for _, rl := range all.Rules {
			known = append(known, rl.Backend)
		}
		slices.Sort(known)
		r.fail(schema.ResultsFile, "checkpoint.backend", "a backend whose evidence rules the checker knows ("+strings.Join(known, ", ")+
			"; a family lists its own in families/all)", fmt.Sprintf("%q", r.res.Checkpoint.Backend))
	}
}

// pairMetricOfBackend is the pair metric the row's thresholds were set for.
func (r *rowCheck) pairMetricOfBackend() string {
	rl, ok := r.rules()
	if !ok {
		return "the metric of a backend the checker knows"
	}
	return rl.PairMetric(r.layout())
}

func (r *rowCheck) layout() string {
	if r.res.Bundle == nil {
		return ""
	}
	return r.res.Bundle.Settings["layout"]
}

func (r *rowCheck) layoutNote() string {
	if l := r.layout(); l != "" {
		return "layout " + l + " in bundle.build_settings"
	}
	return "no layout in bundle.build_settings"
}

func decodePNG(b []byte) (*image.NRGBA, error) {
	img, err := judge.DecodePNG(b)
	if err != nil {
		return nil, err
	}
	return judge.ToNRGBA(img), nil
}
