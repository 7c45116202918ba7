package evidencecheck

import (
	"errors"
	"fmt"
	"image"
	"math"
	"path"
	"path/filepath"

	"qualkit/internal/judge"
	"qualkit/internal/pictures"
	"qualkit/internal/schema"
)

// ErrNoRawExport: the row has no readable AIPerf raw export, so nothing to draw.
var ErrNoRawExport = errors.New("no readable " + schema.RawExportFile)

// PictureInputs derives the contact sheet's and latency chart's data from the row's raw
// files alone; the checker re-renders from it.
func PictureInputs(rowDir string) (pictures.Sheet, pictures.Chart, error) {
	rowDir = filepath.Clean(rowDir)
	runDir, name := filepath.Dir(rowDir), filepath.Base(rowDir)
	c := &checker{dir: runDir, rep: &Report{Dir: runDir}}
	r := newRowCheck(c, name, nil)
	if r.rawErr != nil {
		return pictures.Sheet{}, pictures.Chart{}, fmt.Errorf("pictures of %s: %w (%v)", rowDir, ErrNoRawExport, r.rawErr)
	}
	sheet, chart := r.pictureInputs()
	return sheet, chart, nil
}

// WritePictures writes <rowDir>/pictures/. Call it after results.json and before the
// run's SHA256SUMS, so the checksums cover the pictures.
func WritePictures(rowDir string) error {
	sheet, chart, err := PictureInputs(rowDir)
	if err != nil {
		return err
	}
	if err := pictures.ContactSheet(rowDir, sheet); err != nil {
		return err
	}
	return pictures.LatencyChart(rowDir, chart)
}

func (r *rowCheck) pictureInputs() (pictures.Sheet, pictures.Chart) {
	runID := "(no results.json)"
	if r.res != nil {
		runID = r.res.RunID
	}
	sheet := pictures.Sheet{Row: r.name, RunID: runID}
	chart := pictures.Chart{Row: r.name, RunID: runID}
	if r.res != nil && r.res.TaskSource != nil {
		chart.TaskSource = r.res.TaskSource.Primary()
	}
	for _, q := range r.reqs {
		sent := pictures.SendOrder{Phase: q.rec.Metadata.PhaseIndex, Index: q.rec.Metadata.SessionNum}
		sheet.Edits = append(sheet.Edits, pictures.Edit{
			Label: fmt.Sprintf("%02d %s", q.index, q.phase), Phase: q.phase, Instruction: q.prompt,
			Sent:      sent,
			Reference: q.sent, HTTP: q.httpFile, Native: q.native, Quality: r.qualityLines(q),
		})
		t := pictures.Timing{Label: fmt.Sprintf("%02d", q.index), Sent: sent, Warmup: q.phase == phaseWarmup, ClientMs: math.NaN(), TaskMs: math.NaN()}
		if q.client {
			t.ClientMs = q.clientMs
		}
		if v, ok := r.tasks[q.id]; ok {
			t.TaskMs = v
		}
		chart.Requests = append(chart.Requests, t)
	}
	return sheet, chart
}

// qualityLines is nil when the quality stage did not run.
func (r *rowCheck) qualityLines(q *request) []pictures.QualityLine {
	if r.res == nil || r.res.Quality == nil {
		return nil
	}
	sum := r.res.Quality
	m, miss, ok := q.quality.m, q.quality.miss, q.quality.ok
	if !ok {
		return []pictures.QualityLine{{Text: "not measured: no decodable output or input", Miss: true}}
	}
	lines := []pictures.QualityLine{
		{Text: fmt.Sprintf("mean %.3f", m.Mean)},
		{Text: fmt.Sprintf("std %.3f", m.Std)},
		{Text: fmt.Sprintf("std ratio %.3f", m.StdRatio)},
	}
	if p := sum.Pair; p != nil && p.RequestID == q.id && q.httpFile != nil {
		lines = append(lines, pictures.QualityLine{Text: "vs " + path.Base(p.Reference) + ":"})
		if r.pair == nil {
			lines = append(lines, pictures.QualityLine{Text: "reference image missing", Miss: true})
		} else if d, pmiss, err := r.pair.d, r.pair.miss, r.pair.err; err != nil {
			lines = append(lines, pictures.QualityLine{Text: "does not decode", Miss: true})
		} else {
			lines = append(lines, pictures.QualityLine{Text: fmt.Sprintf("psnr %.2f dB", d.PSNR)},
				pictures.QualityLine{Text: fmt.Sprintf("ssim %.4f", d.SSIM)},
				pictures.QualityLine{Text: fmt.Sprintf("std ratio %.3f", d.StdRatio)})
			miss = append(miss, pmiss...)
		}
	}
	for _, s := range miss {
		lines = append(lines, pictures.QualityLine{Text: s, Miss: true})
	}
	if len(miss) == 0 {
		lines = append(lines, pictures.QualityLine{Text: "meets the criteria"})
	}
	return lines
}

func (r *rowCheck) checkPictures() {
	have := map[string]bool{}
	for _, f := range []string{schema.ContactSheetFile, schema.LatencyChartFile} {
		have[f] = r.exists(f)
	}
	if !have[schema.ContactSheetFile] && !have[schema.LatencyChartFile] {
		return
	}
	if r.rawErr != nil {
		for f, ok := range have {
			if ok {
				r.fail(f, "picture of the raw records", "a readable "+schema.RawExportFile+" to draw from", "a picture")
			}
		}
		return
	}
	sheet, chart := r.pictureInputs()
	for _, f := range []string{schema.ContactSheetFile, schema.LatencyChartFile} {
		if have[f] {
			r.comparePicture(f, f == schema.ContactSheetFile, sheet, chart)
		}
	}
}

func (r *rowCheck) comparePicture(file string, isSheet bool, sheet pictures.Sheet, chart pictures.Chart) {
	b, _ := r.read(file)
	got, err := decodePNG(b)
	if err != nil {
		r.fail(file, "picture of the raw records", "a PNG", err.Error())
		return
	}
	render := func(v int) *image.NRGBA {
		if isSheet {
			sheet.Version = v
			return judge.ToNRGBA(pictures.RenderContactSheet(sheet))
		}
		chart.Version = v
		return judge.ToNRGBA(pictures.RenderLatencyChart(chart))
	}
	what := "the latency chart drawn from " + schema.ProfileExportFile + " and " + orDash(r.taskSrc)
	if isSheet {
		what = "the contact sheet drawn from " + schema.RawExportFile + " and the identity PNGs"
	}
	// The current rendering, or an older one of the same records (runs made before it).
	want := render(pictures.Version)
	d := judge.Compare8(want, got)
	for v := pictures.Version - 1; v >= 1 && (!d.SameSize || d.DifferingPixel > 0); v-- {
		if old := judge.Compare8(render(v), got); old.SameSize && old.DifferingPixel == 0 {
			d = old
		}
	}
	switch {
	case !d.SameSize:
		r.fail(file, "picture of the raw records", what+" ("+judge.ImageSize(want)+")", judge.ImageSize(got))
	case d.DifferingPixel > 0:
		r.fail(file, "picture of the raw records", what, fmt.Sprintf("%d pixel(s) differ, first at (%d,%d)", d.DifferingPixel, d.FirstX, d.FirstY))
	default:
		r.c.rep.Claims++
	}
}
