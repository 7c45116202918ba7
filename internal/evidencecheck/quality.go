package evidencecheck

import (
	"encoding/json"
	"fmt"
	"math"
	"path"

	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// checkQuality re-derives the quality stage from the PNGs: each HTTP output's pixel mean
// and deviation and its input's, the pair's PSNR and SSIM against the reference image the
// correctness case wrote, the criteria each misses (by results.json's criteria, whose
// files are kept with their sha256), and the stage's outcome.
func (r *rowCheck) checkQuality() {
	q := r.res.Quality
	if q == nil {
		r.truth(!r.ran(schema.StageQuality), resultsFile, "quality", "present once the quality stage ran", "none")
		return
	}
	stated := map[float64]bool{}
	for _, f := range q.Files {
		b, ok := r.read(f.File)
		if !ok {
			r.fail(f.File, "exact file set", "the family's thresholds file "+f.Source+" (results.json quality.files)", "missing")
			continue
		}
		r.same(resultsFile, "quality.files "+f.File+" sha256", bytesSHA256(b), f.SHA256, f.File)
		var doc any
		if json.Unmarshal(b, &doc) == nil {
			jsonNumbers(doc, stated)
		}
	}
	// Each bound the stage applied is a number the family's own files state: criteria
	// loosened in results.json alone do not pass.
	c := q.Criteria
	for _, b := range []struct {
		name string
		v    *float64
	}{{"pixel_mean_min", c.MeanMin}, {"pixel_mean_max", c.MeanMax}, {"pixel_std_min", c.StdMin}, {"std_ratio_min", c.StdRatioMin},
		{"psnr_min", c.PSNRMin}, {"ssim_min", c.SSIMMin}} {
		if b.v != nil {
			r.truth(stated[*b.v], resultsFile, "quality.criteria."+b.name, "a value the family's thresholds files state", fmt.Sprint(*b.v))
		}
	}
	if c.StdRatioWhenInputStd != 0 {
		r.truth(stated[c.StdRatioWhenInputStd], resultsFile, "quality.criteria.std_ratio_when_input_std_at_least", "a value the family's thresholds files state", fmt.Sprint(c.StdRatioWhenInputStd))
	}
	if r.rawErr != nil {
		return
	}
	byID := map[string]schema.QualityRequest{}
	for _, got := range q.Requests {
		byID[got.RequestID] = got
	}
	failures := 0
	for _, req := range r.reqs {
		if req.httpFile == nil || req.sent == nil {
			continue
		}
		out, err := decodePNG(req.httpFile)
		if err != nil {
			continue // checkBenchmark says what is wrong with it
		}
		in, err := decodeAny(req.sent)
		if err != nil {
			continue
		}
		outS, inS := quality.Measure(out), quality.Measure(in)
		want := schema.QualityRequest{RequestID: req.id, Phase: req.phase, File: req.httpRel(),
			Mean: outS.Mean, Std: outS.Std, InputStd: inS.Std, StdRatio: quality.Ratio(outS, inS)}
		miss := quality.Judge(q.Criteria, outS, inS)
		if isConstant(out) {
			miss = append(miss, "output is a constant image")
		} else if changedFraction(in, out) < minChangedFraction {
			miss = append(miss, "output is the input image unchanged or only resized")
		}
		failures += len(miss)
		r.derived = append(r.derived, want)
		got, ok := byID[req.id]
		at := "quality.requests[" + req.id + "]."
		if !ok {
			r.fail(resultsFile, at, "a measure of every HTTP output in identity/", "none")
			continue
		}
		r.same(resultsFile, at+"file", want.File, got.File, "")
		for _, m := range []struct {
			name      string
			want, got float64
		}{{"mean", want.Mean, got.Mean}, {"std", want.Std, got.Std}, {"input_std", want.InputStd, got.InputStd}, {"std_ratio", want.StdRatio, got.StdRatio}} {
			r.truth(math.Abs(m.want-m.got) < 2e-6, resultsFile, at+m.name, fmt.Sprintf("%.6f (%s and its input in %s)", m.want, req.httpRel(), rawExport), fmt.Sprintf("%.6f", m.got))
		}
		r.same(resultsFile, at+"failures", fmt.Sprint(len(miss)), fmt.Sprint(len(got.Failures)), "the criteria in results.json quality.criteria applied to the re-derived measures")
	}
	r.same(resultsFile, "quality.requests", fmt.Sprint(len(r.derived)), fmt.Sprint(len(q.Requests)), "one per HTTP output in identity/")
	if p := q.Pair; p != nil {
		failures += r.checkQualityPair(q.Criteria, p)
	}
	r.same(resultsFile, "quality.failures", fmt.Sprint(failures), fmt.Sprint(q.Failures), "the re-derived misses")
	if r.ran(schema.StageQuality) {
		r.truth(r.passed(schema.StageQuality) == (failures == 0), resultsFile, "stage quality", fmt.Sprintf("%d criterion(s) missed", failures), "stage "+r.stageStatus(schema.StageQuality))
	}
}

// checkQualityPair re-derives the pair's PSNR and SSIM; it returns the misses.
func (r *rowCheck) checkQualityPair(c schema.QualityCriteria, p *schema.QualityPair) int {
	var req *request
	for _, q := range r.reqs {
		if q.id == p.RequestID {
			req = q
		}
	}
	if req == nil || req.httpFile == nil {
		r.fail(resultsFile, "quality.pair.request_id", "a request of "+rawExport+" with an HTTP output", p.RequestID)
		return 0
	}
	r.same(resultsFile, "quality.pair.prompt", req.rec.prompt(), p.Prompt, rawExport)
	if !pathUnder(p.Reference, "correctness/artifacts/") {
		r.fail(resultsFile, "quality.pair.reference", "an image the correctness case wrote (correctness/artifacts/)", p.Reference)
		return 0
	}
	b, ok := r.read(p.Reference)
	if !ok {
		r.fail(p.Reference, "exact file set", "the correctness case's reference image of the quality pair", "missing")
		return 0
	}
	ref, err1 := decodePNG(b)
	out, err2 := decodePNG(req.httpFile)
	if err1 != nil || err2 != nil {
		r.fail(p.Reference, "a PNG", "decodable reference and output", fmt.Sprint(err1, err2))
		return 0
	}
	psnr, err := quality.PSNR(ref, out)
	if err != nil {
		return len(p.Failures)
	}
	ssim, err := quality.SSIM(ref, out)
	if err != nil {
		return len(p.Failures)
	}
	r.derivedPair = &schema.QualityPair{PSNR: psnr, SSIM: ssim}
	r.truth(math.Abs(psnr-p.PSNR) < 2e-6, resultsFile, "quality.pair.psnr_db", fmt.Sprintf("%.6f (%s vs %s)", psnr, req.httpRel(), p.Reference), fmt.Sprintf("%.6f", p.PSNR))
	r.truth(math.Abs(ssim-p.SSIM) < 2e-6, resultsFile, "quality.pair.ssim", fmt.Sprintf("%.6f (%s vs %s)", ssim, req.httpRel(), p.Reference), fmt.Sprintf("%.6f", p.SSIM))
	miss := quality.JudgePair(c, psnr, ssim)
	r.same(resultsFile, "quality.pair.failures", fmt.Sprint(len(miss)), fmt.Sprint(len(p.Failures)), "the criteria applied to the re-derived PSNR and SSIM")
	return len(miss)
}

func pathUnder(p, dir string) bool {
	return len(p) > len(dir) && p[:len(dir)] == dir && path.Clean(p) == p
}

// jsonNumbers collects every number in a decoded JSON document.
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
