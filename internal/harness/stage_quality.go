package harness

import (
	"bytes"
	"fmt"
	"image"
	"math"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/judge"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// quality judges every output the server returned to AIPerf (judgeQuality), against the
// family's criteria from its own files and, for the pair the correctness case also ran,
// the reference image that case wrote.
func (r *row) quality(fx *fixtures.Workload, caseScratch string, bench *benchmarkResult) (*schema.QualitySummary, error) {
	in := qualityInput{Size: fx.FormSettings()["size"], Stopped: true}
	var files []schema.ThresholdsFile
	stopped := func(err error) (*schema.QualitySummary, error) {
		v := judgeQuality(in)
		v.Summary.Files = files
		return &v.Summary, err
	}
	var spec family.QualitySpec
	if judge := r.spec.Quality; judge != nil {
		var err error
		if spec, err = judge(r.env); err != nil {
			return stopped(fmt.Errorf("the family's quality criteria: %w", err))
		}
	}
	in.Criteria, in.Pair = spec.Criteria, spec.Pair
	for i, f := range spec.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			return stopped(fmt.Errorf("the family's thresholds file: %w", err))
		}
		rel := schema.ThresholdsCopy(i+1, filepath.Base(f))
		if err := r.ev.WriteFile(rel, b); err != nil {
			return stopped(err)
		}
		files = append(files, schema.ThresholdsFile{Source: r.source(f), File: rel, SHA256: bytesSHA256(b)})
	}
	var pairSHA string
	if spec.Pair != nil {
		b, err := os.ReadFile(spec.Pair.Image)
		if err != nil {
			return stopped(fmt.Errorf("the quality pair's image: %w", err))
		}
		pairSHA = bytesSHA256(b)
	}
	for i, rec := range bench.export.Raw {
		id := rec.Metadata.XRequestID
		png, ok := bench.httpPNG[id]
		if !ok {
			return stopped(fmt.Errorf("request %s: no HTTP output (the benchmark stage keeps one per request)", id))
		}
		sent, err := r.sent(rec)
		if err != nil {
			return stopped(err)
		}
		out, err := judge.DecodePNG(png)
		if err != nil {
			return stopped(err)
		}
		img, _, err := image.Decode(bytes.NewReader(sent.Image))
		if err != nil {
			return stopped(fmt.Errorf("request %s: the sent reference image does not decode: %w", id, err))
		}
		in.Requests = append(in.Requests, qualityCase{RequestID: id, Phase: rec.Metadata.BenchmarkPhase, Index: i, Prompt: sent.Prompt, Out: out, In: img})
		if spec.Pair != nil && in.PairCase == nil && bytesSHA256(sent.Image) == pairSHA && sent.Prompt == spec.Pair.Prompt {
			pc, err := r.gatherPair(spec.Pair, caseScratch, id, out)
			if err != nil {
				return stopped(err)
			}
			in.PairCase = pc
		}
	}
	in.Stopped = false
	v := judgeQuality(in)
	v.Summary.Files = files
	if err := r.ev.WriteJSON(schema.QualityFile, &v.Summary); err != nil {
		return &v.Summary, err
	}
	return &v.Summary, v.Err
}

// gatherPair reads what the pair's output is measured against: the case's reference
// image and, when the family states both, the noise the case drew and the server replayed.
func (r *row) gatherPair(pair *family.QualityPair, caseScratch, id string, out image.Image) (*qualityPairCase, error) {
	rel := filepath.ToSlash(filepath.Join(filepath.FromSlash(schema.CorrectnessArtifacts), pair.Reference))
	b, err := os.ReadFile(r.ev.Path(rel))
	if err != nil {
		return nil, fmt.Errorf("the reference image of the correctness case: %w", err)
	}
	ref, err := judge.DecodePNG(b)
	if err != nil {
		return nil, fmt.Errorf("the reference image of the correctness case %s: %w", rel, err)
	}
	pc := &qualityPairCase{RequestID: id, Reference: rel, Ref: ref, Out: out}
	if pair.CaseLatents != "" {
		l := r.gatherLatents(pair, caseScratch, id)
		pc.Latents = &l
	}
	return pc, nil
}

// pairLatents is the noise the case drew and the sha256 the server states it replayed.
type pairLatents struct {
	Field      string // where the records line states it (QualityPair.ServedLatents)
	File       string
	CaseSHA256 string
	CaseErr    error
	Served     string
	RecordsErr error
}

func (r *row) gatherLatents(pair *family.QualityPair, caseScratch, id string) pairLatents {
	l := pairLatents{Field: pair.ServedLatents}
	if l.File, _, l.CaseErr = FindCaseBundle(filepath.Join(caseScratch, pair.CaseLatents)); l.CaseErr != nil {
		return l
	}
	if l.CaseSHA256, l.CaseErr = pathSHA256(l.File); l.CaseErr != nil {
		return l
	}
	ts := r.spec.Timing
	l.RecordsErr = eachRecord(r.ev.Path(schema.RecordsFile), func(doc any) {
		if rid, err := schema.ValueAt(doc, ts.RecordID); err == nil && fmt.Sprint(rid) == id {
			if v, err := schema.ValueAt(doc, pair.ServedLatents); err == nil {
				l.Served = fmt.Sprint(v)
			}
		}
	})
	return l
}

// qualityCase is one HTTP output measured.
type qualityCase struct {
	RequestID, Phase, Prompt string
	Index                    int
	Out, In                  image.Image
}

// qualityPairCase is the request that sent the pair the correctness case ran; Reference
// is relative to the row folder, Latents nil when the family states none.
type qualityPairCase struct {
	RequestID string
	Reference string
	Ref, Out  image.Image
	Latents   *pairLatents
}

// qualityInput is every HTTP output in the raw export's order. Stopped: the stage ended
// before every output was gathered.
type qualityInput struct {
	Criteria schema.QualityCriteria
	Size     string
	Requests []qualityCase
	Pair     *family.QualityPair
	PairCase *qualityPairCase
	Stopped  bool
}

// qualityVerdict is the quality summary (the thresholds files apart) and why it fails.
type qualityVerdict struct {
	Summary schema.QualitySummary
	Err     error
}

// judgeQuality measures every output against its input and the family's criteria, and
// the pair's against the case's reference. A stopped stage's summary lists what was
// measured, no failure counted and no error of its own.
func judgeQuality(in qualityInput) qualityVerdict {
	sum := schema.QualitySummary{Criteria: in.Criteria, Requests: []schema.QualityRequest{}}
	var problems []string
	for _, c := range in.Requests {
		outS, inS := quality.Measure(c.Out), quality.Measure(c.In)
		q := schema.QualityRequest{RequestID: c.RequestID, Phase: c.Phase, File: schema.IdentityPNG(c.Index, c.Phase, schema.SideHTTP),
			Mean: round6(outS.Mean), Std: round6(outS.Std), InputStd: round6(inS.Std), StdRatio: round6(quality.Ratio(outS, inS))}
		q.Failures = notSource(c.In, c.Out, in.Size)
		q.Failures = append(q.Failures, quality.Judge(in.Criteria, outS, inS)...)
		for _, f := range q.Failures {
			problems = append(problems, fmt.Sprintf("request %s (%s, %q): %s", c.RequestID, q.Phase, c.Prompt, f))
		}
		sum.Requests = append(sum.Requests, q)
		if pc := in.PairCase; pc != nil && pc.RequestID == c.RequestID {
			p := judgePair(in.Criteria, in.Pair, pc)
			sum.Pair = p
			for _, f := range p.Failures {
				problems = append(problems, fmt.Sprintf("request %s, the pair the correctness case ran (%s): %s", c.RequestID, p.Reference, f))
			}
		}
	}
	if in.Stopped {
		return qualityVerdict{Summary: sum}
	}
	if in.Pair != nil && sum.Pair == nil {
		problems = append(problems, fmt.Sprintf("no request sent the pair the correctness case ran (%s with %q): the reference criteria were not applied",
			filepath.Base(in.Pair.Image), in.Pair.Prompt))
	}
	for _, q := range sum.Requests {
		sum.Failures += len(q.Failures)
	}
	if sum.Pair != nil {
		sum.Failures += len(sum.Pair.Failures)
	}
	v := qualityVerdict{Summary: sum}
	if len(problems) > 0 {
		v.Err = fmt.Errorf("%d criterion(s) missed:\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return v
}

// judgePair measures the pair's HTTP output against the reference image the correctness
// case wrote (PSNR, SSIM, the deviations' ratio), and holds its noise to the case's.
func judgePair(c schema.QualityCriteria, pair *family.QualityPair, pc *qualityPairCase) *schema.QualityPair {
	p := &schema.QualityPair{RequestID: pc.RequestID, Image: filepath.Base(pair.Image), Prompt: pair.Prompt, Reference: pc.Reference, Noise: pair.Noise}
	m, err := quality.MeasurePair(c.PairMetric, pc.Ref, pc.Out)
	if err != nil {
		p.Failures = append(p.Failures, err.Error())
		return p
	}
	psnr, ssim := m.PSNR, m.SSIM
	outS, refS := quality.Measure(pc.Out), quality.Measure(pc.Ref)
	p.PSNR, p.SSIM = round6(psnr), round6(ssim)
	if c.PairMetric != "" {
		p.Metric, p.WindowedSSIM = m.Metric, round6(m.WindowedSSIM)
	}
	p.Std, p.ReferenceStd, p.StdRatio = round6(outS.Std), round6(refS.Std), round6(quality.Ratio(outS, refS))
	p.Failures = quality.JudgePair(c, psnr, ssim, outS, refS)
	if l := pc.Latents; l != nil {
		p.CaseLatentsSHA256, p.InitialLatentsSHA256 = l.CaseSHA256, l.Served
		if err := judgeLatents(*l, pc.RequestID); err != nil {
			p.Failures = append(p.Failures, err.Error())
		}
	}
	return p
}

// judgeLatents holds the pair's served noise to the case's own: the sha256 the server's
// records line states for request id, and that of the noise file the case drew.
func judgeLatents(l pairLatents, id string) error {
	switch {
	case l.CaseErr != nil:
		return fmt.Errorf("the noise the correctness case drew: %w", l.CaseErr)
	case l.RecordsErr != nil:
		return fmt.Errorf("the server's records: %w", l.RecordsErr)
	case l.Served == "":
		return fmt.Errorf("the server's records state no %s for request %s: it did not replay the case's noise", l.Field, id)
	case l.Served != l.CaseSHA256:
		return fmt.Errorf("the served pair did not start from the case's own noise: the server replayed latents sha256 %s, the case drew %s (%s)",
			l.Served, l.CaseSHA256, filepath.Base(l.File))
	}
	return nil
}

// notSource is the criterion every family shares: the output is an edit, not its input
// only resized, and not one flat colour. (An output that is the input's very bytes the
// benchmark stage has refused already.)
func notSource(in, out image.Image, size string) []string {
	if judge.IsConstant(out) {
		return []string{"output is a constant image"}
	}
	if f := judge.ChangedFraction(in, out); f < judge.MinChangedFraction {
		return []string{fmt.Sprintf("output is the input image unchanged or only resized: %.1f %% of its pixels differ by more than %d levels from the input resized to %s, the gate needs %.0f %%",
			100*f, judge.ChangeLevels, size, 100*judge.MinChangedFraction)}
	}
	return nil
}

// source names a family file for the evidence, relative to the repository root when inside.
func (r *row) source(path string) string { return filepath.ToSlash(relInside(r.env.Root, path)) }

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
