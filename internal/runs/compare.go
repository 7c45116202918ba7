package runs

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"qualkit/internal/schema"
)

// Band is how far a timing may move before it counts as a regression: beyond both the
// relative part (the workload's scale) and the absolute part (the host's own jitter,
// which dominates millisecond requests). docs/operations.md ("Past runs") has the data.
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
	// Across judges timings of rows that ran on another setup (host, runtime, GPUs,
	// load) too; by default they are listed, not judged.
	Across bool
	// Unlike names, per row, how the two runs' setups differ ("" when alike).
	Unlike map[string]string
}

// Setup is where a row ran: what its timings depend on besides the code.
func Setup(run *Run, r schema.Result) string {
	gpus := "no GPU"
	if ids := leased(r); len(ids) > 0 {
		gpus = fmt.Sprintf("%d GPU(s) %s", len(ids), shortGPUs(ids))
	}
	return fmt.Sprintf("host %s (%d CPUs), runtime %s, %s", orDash(run.Info.Hostname), run.Info.CPUs, orDash(r.Runtime), gpus)
}

func leased(r schema.Result) []string {
	if r.Lease == nil {
		return nil
	}
	return r.Lease.GPUs
}

// shortGPUs are the UUIDs' first 8 characters after GPU-, "-" for none.
func shortGPUs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.TrimPrefix(id, "GPU-")
		out[i] = out[i][:min(8, len(out[i]))]
	}
	return orDash(strings.Join(out, ","))
}

// Host load: a run's host was busy when its 1-minute load average, at the run's start or
// end, exceeded BusyLoadPerCPU per CPU, or when more than BusySteal of its CPU time was
// stolen; timings of a busy run, or of two runs whose loads differ by more than
// LoadDiffPerCPU per CPU, are not like for like (one run of issue 48 ran inside make
// test at load ~20 on 2 CPUs: p95 +98.7 ms, called a regression).
const (
	BusyLoadPerCPU = 1.0
	BusySteal      = 0.05
	LoadDiffPerCPU = 0.5
)

// load is a run's highest 1-minute load average per CPU and the share of CPU time
// stolen; ok is false when run.json records none.
func (r *Run) load() (perCPU, steal float64, ok bool) {
	l := r.Info.Load
	if l == nil || r.Info.CPUs <= 0 {
		return 0, 0, false
	}
	perCPU = max(l.LoadAvgStart[0], l.LoadAvgEnd[0]) / float64(r.Info.CPUs)
	if wall := r.Info.Finished.Sub(r.Info.Started).Seconds(); wall > 0 {
		steal = l.StealS / (wall * float64(r.Info.CPUs))
	}
	return perCPU, steal, true
}

// Load says how busy the run's host was: "load 0.21 per CPU (0.42 on 2 CPUs), 0 % stolen".
func (r *Run) Load() string {
	perCPU, steal, ok := r.load()
	if !ok {
		return "host load not recorded"
	}
	s := fmt.Sprintf("load %.2f per CPU (%.2f on %d CPUs), %.0f %% stolen", perCPU, perCPU*float64(r.Info.CPUs), r.Info.CPUs, 100*steal)
	if r.busy() {
		s += ": busy"
	}
	return s
}

func (r *Run) busy() bool {
	perCPU, steal, ok := r.load()
	return ok && (perCPU > BusyLoadPerCPU || steal > BusySteal)
}

// unlikeLoad says how two runs' host loads make their timings unlike ("" if not).
func unlikeLoad(a, b *Run) string {
	la, _, oka := a.load()
	lb, _, okb := b.load()
	if !oka || !okb || (!a.busy() && !b.busy() && math.Abs(la-lb) <= LoadDiffPerCPU) {
		return ""
	}
	return "host " + a.Load() + " vs " + b.Load()
}

// unlike says how two rows' setups differ ("" when alike).
func unlike(a *Run, ra schema.Result, b *Run, rb schema.Result) string {
	var d []string
	if l := unlikeLoad(a, b); l != "" {
		d = append(d, l)
	}
	if a.Info.Hostname != b.Info.Hostname || a.Info.CPUs != b.Info.CPUs {
		d = append(d, fmt.Sprintf("host %s (%d CPUs) vs %s (%d CPUs)", orDash(a.Info.Hostname), a.Info.CPUs, orDash(b.Info.Hostname), b.Info.CPUs))
	}
	if ra.Runtime != rb.Runtime {
		d = append(d, fmt.Sprintf("runtime %s vs %s", orDash(ra.Runtime), orDash(rb.Runtime)))
	}
	if !slices.Equal(leased(ra), leased(rb)) {
		d = append(d, "other GPUs")
	}
	if ca, cb := a.Clocks[ra.Row], b.Clocks[rb.Row]; ca != "" && cb != "" && ca != cb {
		d = append(d, fmt.Sprintf("GPU max SM clock %s vs %s MHz", ca, cb))
	}
	return strings.Join(d, "; ")
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
func Compare(a, b *Run, band Band, across bool) *Comparison {
	c := &Comparison{A: a, B: b, Band: band, Across: across, Unlike: map[string]string{}}
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
	diff := unlike(c.A, a, c.B, b)
	if diff != "" {
		c.Unlike[a.Row] = diff
	}
	judged := diff == "" || c.Across
	notJudged := "not judged: " + diff + " (-across judges it)"

	st := Line{What: "status", A: a.Status, B: b.Status}
	switch {
	case a.Status == b.Status:
	case schema.Passing(a.Status) && !schema.Passing(b.Status):
		st.Regression = "the row no longer passes"
	case a.Status == schema.StatusQualified:
		st.Regression = "the row is no longer qualified"
	}
	add(st)

	ta, fa, oka := identity(a)
	tb, fb, okb := identity(b)
	id := Line{What: "native/HTTP pixel matches", A: ta, B: tb}
	if oka && okb && fb < fa {
		id.Regression = "fewer native/HTTP pixel matches"
	} else if oka && fa == 1 && !okb {
		id.Regression = "identity was not established in run B"
	}
	add(id)

	// band adds l, with the delta from va to vb and the regression when the band is exceeded.
	band := func(l Line, va, vb float64, regression string) {
		l.Delta = delta(va, vb)
		switch {
		case !judged:
			l.Delta += "; " + notJudged
		case c.Band.exceeds(va, vb):
			l.Regression = regression + " than the noise band allows (" + c.Band.String() + ")"
		}
		add(l)
	}
	timing := func(what string, qa, qb *schema.Quantiles, pick func(*schema.Quantiles) float64) {
		l := Line{What: what, A: ms(qa, pick), B: ms(qb, pick)}
		if qa == nil || qb == nil {
			add(l)
			return
		}
		band(l, pick(qa), pick(qb), "slower")
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
		band(per, 1000/a.ImagesPerS, 1000/b.ImagesPerS, "fewer images per second")
	} else {
		add(per)
	}
}

// identity is the row's native/HTTP pixel matches as text and as a fraction.
func identity(r schema.Result) (text string, fraction float64, ok bool) {
	if r.Identity == nil || r.Identity.Total == 0 {
		return "-", 0, false
	}
	return fmt.Sprintf("%d/%d", r.Identity.PixelMatches, r.Identity.Total), float64(r.Identity.PixelMatches) / float64(r.Identity.Total), true
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
	for _, row := range slices.Sorted(maps.Keys(c.Unlike)) {
		verdict := "its timings are listed, not judged (-across judges them)"
		if c.Across {
			verdict = "its timings are judged all the same (-across)"
		}
		fmt.Fprintf(&b, "NOT LIKE FOR LIKE: row %s ran on another setup in B (%s): %s\n", row, c.Unlike[row], verdict)
	}
	if len(c.Unlike) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "A: %s (%s, commit %s, %s; %s)\nB: %s (%s, commit %s, %s; %s)\nnoise band: %s\n\n",
		c.A.Info.RunID, c.A.Started(), c.A.Commit(), c.A.setups(), c.A.Load(), c.B.Info.RunID, c.B.Started(), c.B.Commit(), c.B.setups(), c.B.Load(), c.Band)
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
	b.WriteString("| run | started (UTC) | commit | host | row | runtime | GPUs | status | native/HTTP | client p50 (ms) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range runs {
		host := fmt.Sprintf("%s (%d CPUs)", orDash(r.Info.Hostname), r.Info.CPUs)
		if len(r.Rows) == 0 {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | - | - | - | - | - | - |\n", r.Info.RunID, r.Started(), r.Commit(), host)
		}
		for _, res := range r.Rows {
			p50 := "-"
			if res.HTTP != nil {
				p50 = fmt.Sprintf("%.1f", res.HTTP.P50)
			}
			gpus := shortGPUs(leased(res))
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				r.Info.RunID, r.Started(), r.Commit(), host, res.Row, orDash(res.Runtime), gpus, res.Status, idText(res), p50)
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

// setups names where the run's rows ran, each distinct setup once.
func (r *Run) setups() string {
	var out []string
	for _, res := range r.Rows {
		if s := Setup(r, res); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return fmt.Sprintf("host %s (%d CPUs)", orDash(r.Info.Hostname), r.Info.CPUs)
	}
	return strings.Join(out, "; ")
}

func idText(r schema.Result) string { t, _, _ := identity(r); return t }
