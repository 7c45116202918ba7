package pictures

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// Chart is what a row's latency chart shows: per request, in the order AIPerf sent them
// (numbered in that order, as the contact sheet numbers them; before version 4, in the
// order of the raw export), AIPerf's client latency and the server's Task-call time, two
// separate bars.
type Chart struct {
	Row        string
	RunID      string
	TaskSource string // where the Task time comes from ("response body timing.task_ms")
	Requests   []Timing
	// Version is the rendering (see Sheet.Version): version 1 drew the p50s only, and
	// left the plot's right part empty when the legend was wider than the bars.
	Version int
}

// Timing is one request. A value that was not recorded is math.NaN().
type Timing struct {
	Label    string // "00": the raw export's index (versions 1 to 3 draw it)
	Sent     SendOrder
	Warmup   bool
	ClientMs float64
	TaskMs   float64
}

// Chart geometry, in pixels.
const (
	chartLeft   = 64
	chartRight  = 16
	chartPlotH  = 200
	chartBottom = 3 * 14
	groupW      = 48
	barW        = 16
	minPlotW    = 400
)

// LatencyChart renders the chart and writes it to <rowDir>/pictures/latency.png.
func LatencyChart(rowDir string, c Chart) error {
	return WritePNG(filepath.Join(rowDir, filepath.FromSlash(schema.LatencyChartFile)), RenderLatencyChart(c))
}

// RenderLatencyChart draws client latency and Task time per request, warmup requests
// on a grey band, and the nearest-rank p50 of the measured requests as dashed lines.
func RenderLatencyChart(c Chart) *image.RGBA {
	v := version(c.Version)
	if v >= 4 {
		c.Requests = slices.Clone(c.Requests)
		slices.SortStableFunc(c.Requests, func(a, b Timing) int { return a.Sent.compare(b.Sent) })
		for i := range c.Requests {
			c.Requests[i].Label = fmt.Sprintf("%02d", i)
		}
	}
	var client, task []float64
	vmax := 0.0
	for _, r := range c.Requests {
		for _, v := range []float64{r.ClientMs, r.TaskMs} {
			if !math.IsNaN(v) {
				vmax = max(vmax, v)
			}
		}
		if !r.Warmup {
			if !math.IsNaN(r.ClientMs) {
				client = append(client, r.ClientMs)
			}
			if !math.IsNaN(r.TaskMs) {
				task = append(task, r.TaskMs)
			}
		}
	}
	sc := newScale(vmax)
	title := fmt.Sprintf("%s  run %s: latency per request", c.Row, c.RunID)
	legends := []string{
		"client latency (AIPerf request_latency), measured p50 " + pText(client, 50),
		"Task time (" + cmp.Or(c.TaskSource, "-") + "), measured p50 " + pText(task, 50),
		"warmup: not in the p50s",
		"dashed: nearest-rank p50 of the measured requests",
	}
	if v >= 2 {
		legends = []string{
			"client latency (AIPerf request_latency), measured p50 " + pText(client, 50) + ", p95 " + pText(client, 95),
			"Task time (" + cmp.Or(c.TaskSource, "-") + "), measured p50 " + pText(task, 50) + ", p95 " + pText(task, 95),
			"warmup: in neither the p50s nor the p95s",
			"dashed: nearest-rank p50 of the measured requests; dotted: their p95",
		}
	}
	textW := len(title) * charW
	for _, l := range legends {
		textW = max(textW, 16+len(l)*charW)
	}
	plotW := max(len(c.Requests)*groupW, minPlotW, textW+2*pad-chartLeft-chartRight)
	gw := groupW
	if v >= 2 && len(c.Requests) > 0 {
		gw = plotW / len(c.Requests) // the groups spread over the whole plot
	}
	top := pad + 6*lineH + pad
	width := chartLeft + plotW + chartRight
	img := newCanvas(width, top+chartPlotH+chartBottom)
	plot := image.Rect(chartLeft, top, chartLeft+plotW, top+chartPlotH)

	text(img, pad, pad, black, title)
	for i, col := range []color.RGBA{blue, orange, lightGrey} {
		y := pad + (i+1)*lineH
		fill(img, image.Rect(pad, y+3, pad+10, y+13), col)
		text(img, pad+16, y, black, legends[i])
	}
	text(img, pad+16, pad+4*lineH, grey, legends[3])

	for i, r := range c.Requests {
		if r.Warmup {
			x := plot.Min.X + i*gw
			fill(img, image.Rect(x, plot.Min.Y, x+gw, plot.Max.Y), lightGrey)
			text(img, x+(gw-6*charW)/2, plot.Min.Y+2, grey, "warmup")
		}
	}
	for i := 0; i <= sc.ticks; i++ {
		y := plot.Max.Y - sc.pixels(float64(i)*sc.step, chartPlotH)
		if i > 0 {
			fill(img, image.Rect(plot.Min.X, y, plot.Max.X, y+1), faintGrey)
		}
		label := sc.label(i)
		text(img, plot.Min.X-6-len(label)*charW, y-7, grey, label)
	}
	text(img, plot.Min.X-6-2*charW, plot.Min.Y-lineH-10, grey, "ms")

	for i, r := range c.Requests {
		x := plot.Min.X + i*gw + (gw-2*barW-2)/2
		bar(img, plot, x, r.ClientMs, sc, blue)
		bar(img, plot, x+barW+2, r.TaskMs, sc, orange)
		label := clipText(r.Label, gw/charW)
		text(img, plot.Min.X+i*gw+(gw-len(label)*charW)/2, plot.Max.Y+4, black, label)
	}
	for _, series := range []struct {
		xs []float64
		c  color.RGBA
	}{{client, blue}, {task, orange}} {
		if len(series.xs) == 0 {
			continue
		}
		dashed(img, plot, plot.Max.Y-sc.pixels(nearestRank(series.xs, 50), chartPlotH), series.c)
		if v >= 2 {
			dotted(img, plot, plot.Max.Y-sc.pixels(nearestRank(series.xs, 95), chartPlotH), series.c)
		}
	}
	fill(img, image.Rect(plot.Min.X, plot.Min.Y, plot.Min.X+1, plot.Max.Y+1), black)
	fill(img, image.Rect(plot.Min.X, plot.Max.Y, plot.Max.X, plot.Max.Y+1), black)
	order := "request, in AIPerf raw-export order"
	if v >= 4 {
		order = "request, in the order sent"
	}
	text(img, plot.Min.X, plot.Max.Y+4+lineH+2, grey, order)
	return img
}

func bar(img *image.RGBA, plot image.Rectangle, x int, v float64, sc scale, c color.RGBA) {
	if math.IsNaN(v) {
		text(img, x+(barW-charW)/2, plot.Max.Y-lineH, red, "?")
		return
	}
	h := max(sc.pixels(v, chartPlotH), 1)
	fill(img, image.Rect(x, plot.Max.Y-h, x+barW, plot.Max.Y), c)
}

func dashed(img *image.RGBA, plot image.Rectangle, y int, c color.RGBA) {
	for x := plot.Min.X + 1; x < plot.Max.X; x += 8 {
		fill(img, image.Rect(x, y, min(x+5, plot.Max.X), y+1), c)
	}
}

func dotted(img *image.RGBA, plot image.Rectangle, y int, c color.RGBA) {
	for x := plot.Min.X + 1; x < plot.Max.X; x += 3 {
		fill(img, image.Rect(x, y, x+1, y+1), c)
	}
}

func pText(xs []float64, p int) string {
	if len(xs) == 0 {
		return "-"
	}
	return strconv.FormatFloat(nearestRank(xs, p), 'f', 3, 64) + " ms"
}

// nearestRank is sorted[ceil(p*n/100)-1], the percentile method of the reports.
func nearestRank(xs []float64, p int) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := (p*len(s) + 99) / 100
	return s[min(max(rank, 1), len(s))-1]
}

// scale is the y axis: ticks at multiples of a 1-2-5 step. Steps are decimal
// constants (mantissa, power of ten), so labels are exact and no logarithm is taken.
type scale struct {
	step  float64
	mant  int
	exp   int
	ticks int
	top   float64
}

func newScale(vmax float64) scale {
	for exp := -3; exp <= 9; exp++ {
		for _, mant := range []int{1, 2, 5} {
			step := float64(mant) * pow10(exp)
			if step*5 >= vmax {
				ticks := max(int(vmax/step), 1)
				if float64(ticks)*step < vmax {
					ticks++
				}
				return scale{step: step, mant: mant, exp: exp, ticks: ticks, top: float64(ticks) * step}
			}
		}
	}
	return scale{step: vmax, mant: 1, exp: 0, ticks: 1, top: vmax}
}

func pow10(exp int) float64 {
	p := 1.0
	for ; exp > 0; exp-- {
		p *= 10
	}
	for ; exp < 0; exp++ {
		p /= 10
	}
	return p
}

func (s scale) pixels(v float64, h int) int {
	if s.top <= 0 {
		return 0
	}
	return min(int(v*float64(h)/s.top), h)
}

// label is tick i as a decimal: i*mant*10^exp, written from integers.
func (s scale) label(i int) string {
	n := strconv.Itoa(i * s.mant)
	if s.exp >= 0 {
		if i == 0 {
			return "0"
		}
		return n + strings.Repeat("0", s.exp)
	}
	frac := -s.exp
	if len(n) <= frac {
		n = strings.Repeat("0", frac-len(n)+1) + n
	}
	out := strings.TrimRight(n[:len(n)-frac]+"."+n[len(n)-frac:], "0")
	return strings.TrimSuffix(out, ".")
}
