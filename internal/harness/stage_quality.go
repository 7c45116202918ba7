package harness

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// quality judges what the server returned to AIPerf, every output warmup included: not
// its input (unchanged or only resized) and not constant, whatever the family; then the
// family's own criteria from its own files (pixel mean and deviation, the deviation's
// ratio to the input's), and the reference criteria (PSNR, SSIM) for the output of the
// pair the correctness case also ran, against the reference image that case wrote.
func (r *row) quality(ctx context.Context) error {
	sum := &schema.QualitySummary{Requests: []schema.QualityRequest{}}
	r.result.Quality = sum
	var spec QualitySpec
	if judge := r.spec.Quality; judge != nil {
		var err error
		if spec, err = judge(r.env); err != nil {
			return fmt.Errorf("the family's quality criteria: %w", err)
		}
	}
	sum.Criteria = spec.Criteria
	for i, f := range spec.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("the family's thresholds file: %w", err)
		}
		rel := fmt.Sprintf("%s/%d-%s", schema.QualityThresholdsDir, i+1, filepath.Base(f))
		if err := r.ev.WriteFile(rel, b); err != nil {
			return err
		}
		sum.Files = append(sum.Files, schema.ThresholdsFile{Source: r.source(f), File: rel, SHA256: bytesSHA256(b)})
	}
	var pairSHA string
	if spec.Pair != nil {
		b, err := os.ReadFile(spec.Pair.Image)
		if err != nil {
			return fmt.Errorf("the quality pair's image: %w", err)
		}
		pairSHA = bytesSHA256(b)
	}
	var problems []string
	size := r.result.Settings["size"]
	for i, rec := range r.export.Raw {
		id := rec.Metadata.XRequestID
		png, ok := r.httpPNG[id]
		if !ok {
			return fmt.Errorf("request %s: no HTTP output (the benchmark stage keeps one per request)", id)
		}
		sent, err := r.sent(rec)
		if err != nil {
			return err
		}
		out, err := DecodePNG(png)
		if err != nil {
			return err
		}
		in, _, err := image.Decode(bytes.NewReader(sent.Image))
		if err != nil {
			return fmt.Errorf("request %s: the sent reference image does not decode: %w", id, err)
		}
		outS, inS := quality.Measure(out), quality.Measure(in)
		q := schema.QualityRequest{RequestID: id, Phase: rec.Metadata.BenchmarkPhase, File: schema.IdentityPNG(i, rec.Metadata.BenchmarkPhase, schema.SideHTTP),
			Mean: round6(outS.Mean), Std: round6(outS.Std), InputStd: round6(inS.Std), StdRatio: round6(quality.Ratio(outS, inS))}
		q.Failures = notSource(in, out, size)
		q.Failures = append(q.Failures, quality.Judge(spec.Criteria, outS, inS)...)
		for _, f := range q.Failures {
			problems = append(problems, fmt.Sprintf("request %s (%s, %q): %s", id, q.Phase, sent.Prompt, f))
		}
		sum.Requests = append(sum.Requests, q)
		if spec.Pair != nil && sum.Pair == nil && bytesSHA256(sent.Image) == pairSHA && sent.Prompt == spec.Pair.Prompt {
			p, err := r.judgePair(spec, id, out)
			if err != nil {
				return err
			}
			sum.Pair = p
			for _, f := range p.Failures {
				problems = append(problems, fmt.Sprintf("request %s, the pair the correctness case ran (%s): %s", id, p.Reference, f))
			}
		}
	}
	if spec.Pair != nil && sum.Pair == nil {
		problems = append(problems, fmt.Sprintf("no request sent the pair the correctness case ran (%s with %q): the reference criteria were not applied",
			filepath.Base(spec.Pair.Image), spec.Pair.Prompt))
	}
	for _, q := range sum.Requests {
		sum.Failures += len(q.Failures)
	}
	if sum.Pair != nil {
		sum.Failures += len(sum.Pair.Failures)
	}
	if err := r.ev.WriteJSON(schema.QualityFile, sum); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d criterion(s) missed:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return nil
}

// judgePair measures the pair's HTTP output against the reference image the correctness
// case wrote, read from its artifacts.
func (r *row) judgePair(spec QualitySpec, id string, out image.Image) (*schema.QualityPair, error) {
	rel := filepath.ToSlash(filepath.Join(filepath.FromSlash(schema.CorrectnessArtifacts), spec.Pair.Reference))
	b, err := os.ReadFile(r.ev.Path(rel))
	if err != nil {
		return nil, fmt.Errorf("the reference image of the correctness case: %w", err)
	}
	ref, err := DecodePNG(b)
	if err != nil {
		return nil, fmt.Errorf("the reference image of the correctness case %s: %w", rel, err)
	}
	p := &schema.QualityPair{RequestID: id, Image: filepath.Base(spec.Pair.Image), Prompt: spec.Pair.Prompt, Reference: rel, Noise: spec.Pair.Noise}
	m, err := quality.MeasurePair(spec.Criteria.PairMetric, ref, out)
	if err != nil {
		p.Failures = append(p.Failures, err.Error())
		return p, nil
	}
	psnr, ssim := m.PSNR, m.SSIM
	outS, refS := quality.Measure(out), quality.Measure(ref)
	p.PSNR, p.SSIM = round6(psnr), round6(ssim)
	if spec.Criteria.PairMetric != "" {
		p.Metric, p.WindowedSSIM = m.Metric, round6(m.WindowedSSIM)
	}
	p.Std, p.ReferenceStd, p.StdRatio = round6(outS.Std), round6(refS.Std), round6(quality.Ratio(outS, refS))
	p.Failures = quality.JudgePair(spec.Criteria, psnr, ssim, outS, refS)
	if spec.Pair.CaseLatents != "" {
		if err := r.pairLatents(spec.Pair, id, p); err != nil {
			p.Failures = append(p.Failures, err.Error())
		}
	}
	return p, nil
}

// pairLatents holds the pair's served noise to the case's own: the sha256 the server's
// records line states for the request, and that of the noise file the case drew.
func (r *row) pairLatents(pair *QualityPair, id string, p *schema.QualityPair) error {
	file, _, err := FindCaseBundle(filepath.Join(r.env.Work, caseScratch, pair.CaseLatents))
	if err != nil {
		return fmt.Errorf("the noise the correctness case drew: %w", err)
	}
	if p.CaseLatentsSHA256, err = pathSHA256(file); err != nil {
		return fmt.Errorf("the noise the correctness case drew: %w", err)
	}
	ts := r.spec.Timing
	err = eachRecord(r.ev.Path(schema.RecordsFile), func(doc any) {
		if rid, err := valueAt(doc, ts.RecordID); err == nil && fmt.Sprint(rid) == id {
			if v, err := valueAt(doc, pair.ServedLatents); err == nil {
				p.InitialLatentsSHA256 = fmt.Sprint(v)
			}
		}
	})
	switch {
	case err != nil:
		return fmt.Errorf("the server's records: %w", err)
	case p.InitialLatentsSHA256 == "":
		return fmt.Errorf("the server's records state no %s for request %s: it did not replay the case's noise", pair.ServedLatents, id)
	case p.InitialLatentsSHA256 != p.CaseLatentsSHA256:
		return fmt.Errorf("the served pair did not start from the case's own noise: the server replayed latents sha256 %s, the case drew %s (%s)",
			p.InitialLatentsSHA256, p.CaseLatentsSHA256, filepath.Base(file))
	}
	return nil
}

// notSource is the criterion every family shares: the output is an edit, not its input
// only resized, and not one flat colour. (An output that is the input's very bytes the
// benchmark stage has refused already.)
func notSource(in, out image.Image, size string) []string {
	if IsConstant(out) {
		return []string{"output is a constant image"}
	}
	if f := ChangedFraction(in, out); f < MinChangedFraction {
		return []string{fmt.Sprintf("output is the input image unchanged or only resized: %.1f %% of its pixels differ by more than %d levels from the input resized to %s, the gate needs %.0f %%",
			100*f, ChangeLevels, size, 100*MinChangedFraction)}
	}
	return nil
}

// source names a family file for the evidence: relative to the repository root when
// inside it, else as given.
func (r *row) source(path string) string { return filepath.ToSlash(relInside(r.env.Root, path)) }

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
