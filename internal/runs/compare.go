package runs

import (
	"fmt"
	"io"
	"math"
	"strings"

	"qualkit/internal/schema"
)

// Band is how far a timing may move between two runs before it counts as a regression:
// a change counts only when it exceeds both the relative and the absolute part. The
// relative part scales with the workload; the absolute part is the host's own jitter,
// which dominates millisecond requests. The defaults and the measurements behind them
// are in the README ("Past runs").
type Band struct {
	Rel float64 // fraction of run A's value
	Ms  float64 // milliseconds
}

// DefaultBand: Ms covers the largest change seen between five identical runs of the
// reference row on the 2-core development machine (p95 59.1 to 111.5 ms, 52.4 ms);
// Rel is the smallest shift a second-long GPU edit must show to count.
var DefaultBand = Band{Rel: 0.10, Ms: 60}

// exceeds says whether moving from a to b (milliseconds, bigger is worse) is beyond the band.
func (b Band) exceeds(a, bv float64) bool {
	d := bv - a
	return d > b.Ms && d > b.Rel*a
}

func (b Band) String() string {
	return fmt.Sprintf("a change counts only above both %.0f%% and %.0f ms", 100*b.Rel, b.Ms)
}

// Line is one compared quantity of one row.
type Line struct {
	Row, What  string
	A, B       string
	Delta      string
	Regression string // why this is a regression; "" when it is not one
}

// Comparison is run B against run A, row by row.
type Comparison struct {
	A, B  *Run
	Band  Band
	Lines []Line
}

// Regressions lists every line that is one.
func (c *Comparison) Regressions() []Line {
	var out []Line
	for _, l := range c.Lines {
		if l.Regression != "" {
			out = append(out, l)
		}
	}
	return out
}

// Compare compares run b with run a, the baseline. A row of a that b lacks is a
// regression; a row only b has is listed as new.
func Compare(a, b *Run, band Band) *Comparison {
	c := &Comparison{A: a, B: b, Band: band}
	for _, ra := range a.Rows {
		rb, ok := b.Row(ra.Row)
		if !ok {
			c.Lines = append(c.Lines, Line{Row: ra.Row, What: "row", A: ra.Status, B: "(absent)", Regression: "the row is not in run B"})
			continue
		}
		c.compareRow(ra, rb)
	}
	for _, rb := range b.Rows {
		if _, ok := a.Row(rb.Row); !ok {
			c.Lines = append(c.Lines, Line{Row: rb.Row, What: "row", A: "(absent)", B: rb.Status, Delta: "new"})
		}
	}
	return c
}

func (c *Comparison) compareRow(a, b schema.Result) {
	add := func(l Line) { l.Row = a.Row; c.Lines = append(c.Lines, l) }

	st := Line{What: "status", A: a.Status, B: b.Status}
	switch {
	case a.Status == b.Status:
	case schema.Passing(a.Status) && !schema.Passing(b.Status):
		st.Regression = "the row no longer passes"
	case a.Status == schema.StatusQualified:
		st.Regression = "the row is no longer qualified"
	}
	add(st)

	ia, ib := identity(a), identity(b)
	id := Line{What: "native/HTTP pixel matches", A: ia.text, B: ib.text}
	if ia.ok && ib.ok && ib.fraction < ia.fraction {
		id.Regression = "fewer native/HTTP pixel matches"
	} else if ia.ok && ia.fraction == 1 && !ib.ok {
		id.Regression = "identity was not established in run B"
	}
	add(id)

	timing := func(what string, qa, qb *schema.Quantiles, pick func(*schema.Quantiles) float64) {
		l := Line{What: what, A: ms(qa, pick), B: ms(qb, pick)}
		if qa != nil && qb != nil {
			va, vb := pick(qa), pick(qb)
			l.Delta = delta(va, vb)
			if c.Band.exceeds(va, vb) {
				l.Regression = "slower than the noise band allows (" + c.Band.String() + ")"
			}
		}
		add(l)
	}
	p50 := func(q *schema.Quantiles) float64 { return q.P50 }
	p95 := func(q *schema.Quantiles) float64 { return q.P95 }
	timing("client p50 (ms)", a.HTTP, b.HTTP, p50)
	timing("client p95 (ms)", a.HTTP, b.HTTP, p95)
	timing("Task p50 (ms)", a.Task, b.Task, p50)
	timing("Task p95 (ms)", a.Task, b.Task, p95)

	// Throughput is compared as time per image, so the same band applies.
	per := Line{What: "time per image (ms)", A: perImage(a.ImagesPerS), B: perImage(b.ImagesPerS)}
	if a.ImagesPerS > 0 && b.ImagesPerS > 0 {
		va, vb := 1000/a.ImagesPerS, 1000/b.ImagesPerS
		per.Delta = delta(va, vb)
		if c.Band.exceeds(va, vb) {
			per.Regression = "fewer images per second than the noise band allows (" + c.Band.String() + ")"
		}
	}
	add(per)
}

type identityCount struct {
	text     string
	fraction float64
	ok       bool
}

func identity(r schema.Result) identityCount {
	if r.Identity == nil || r.Identity.Total == 0 {
		return identityCount{text: "-"}
	}
	return identityCount{text: fmt.Sprintf("%d/%d", r.Identity.PixelMatches, r.Identity.Total),
		fraction: float64(r.Identity.PixelMatches) / float64(r.Identity.Total), ok: true}
}

func ms(q *schema.Quantiles, pick func(*schema.Quantiles) float64) string {
	if q == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", pick(q))
}

func perImage(ips float64) string {
	if ips <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", 1000/ips)
}

func delta(a, b float64) string {
	d := b - a
	if a == 0 || math.IsNaN(a) {
		return fmt.Sprintf("%+.1f", d)
	}
	return fmt.Sprintf("%+.1f (%+.0f%%)", d, 100*d/a)
}

// WriteMarkdown prints the comparison as a table, regressions marked, then a verdict.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s (%s, commit %s)\nB: %s (%s, commit %s)\nnoise band: %s\n\n",
		c.A.Info.RunID, c.A.Started(), c.A.Commit(), c.B.Info.RunID, c.B.Started(), c.B.Commit(), c.Band)
	b.WriteString("| row | what | A | B | B - A | regression |\n|---|---|---|---|---|---|\n")
	for _, l := range c.Lines {
		reg := "-"
		if l.Regression != "" {
			reg = "**" + l.Regression + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", l.Row, l.What, l.A, l.B, orDash(l.Delta), reg)
	}
	if n := len(c.Regressions()); n > 0 {
		fmt.Fprintf(&b, "\n%d regression(s) in B.\n", n)
	} else {
		b.WriteString("\nno regression in B.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteList prints runs newest first, one line per row.
func WriteList(w io.Writer, runs []*Run) error {
	var b strings.Builder
	b.WriteString("| run | started (UTC) | commit | row | status | native/HTTP | client p50 (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		if len(r.Rows) == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | - | - | - | - |\n", r.Info.RunID, r.Started(), r.Commit())
		}
		for _, res := range r.Rows {
			p50 := "-"
			if res.HTTP != nil {
				p50 = fmt.Sprintf("%.1f", res.HTTP.P50)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
				r.Info.RunID, r.Started(), r.Commit(), res.Row, res.Status, identity(res).text, p50)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
