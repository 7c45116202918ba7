package pictures

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

var update = flag.Bool("update", false, "rewrite the golden PNGs under testdata/")

// synthetic makes a w x h PNG from a pixel function: integer arithmetic only.
func synthetic(t *testing.T, w, h int, px func(x, y int) color.NRGBA) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, px(x, y))
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func gradient(x, y int) color.NRGBA { return color.NRGBA{uint8(x * 4), uint8(y * 4), 0x80, 0xff} }

func inverted(x, y int) color.NRGBA {
	c := gradient(x, y)
	return color.NRGBA{0xff - c.R, 0xff - c.G, 0xff - c.B, 0xff}
}

// sheetFixture covers every state a line can be in: identical, a few differing pixels,
// many differing pixels, different sizes, a missing native output, undecodable bytes.
func sheetFixture(t *testing.T) Sheet {
	ref := synthetic(t, 60, 40, gradient)
	out := synthetic(t, 48, 48, inverted)
	fewOff := synthetic(t, 48, 48, func(x, y int) color.NRGBA {
		c := inverted(x, y)
		if x == 20 && y == 30 {
			c.R ^= 0x01
		}
		return c
	})
	manyOff := synthetic(t, 48, 48, func(x, y int) color.NRGBA {
		c := inverted(x, y)
		if x > y {
			c.G = uint8(int(c.G) + (x-y)*5)
		}
		return c
	})
	alpha := synthetic(t, 32, 48, func(x, y int) color.NRGBA { return color.NRGBA{0xff, 0, 0, uint8(x * 8)} })
	return Sheet{Row: "synthetic-row", RunID: "20260101T000000Z-1", Edits: []Edit{
		{Label: "00 warmup", Phase: "warmup", Sent: SendOrder{0, 0}, Instruction: "Invert the colours of the picture", Reference: ref, HTTP: out, Native: out,
			Quality: []QualityLine{{Text: "mean 0.500"}, {Text: "std 0.250"}, {Text: "std ratio 1.000"}, {Text: "meets the criteria"}}},
		{Label: "01 profiling", Phase: "profiling", Sent: SendOrder{1, 0}, Instruction: "One pixel drifts by one level, which a thumbnail alone would hide", Reference: ref, HTTP: out, Native: fewOff,
			Quality: []QualityLine{{Text: "mean 0.500"}, {Text: "std 0.250"}, {Text: "std ratio 1.000"}, {Text: "vs reference-000.png:"}, {Text: "psnr 9.50 dB"},
				{Text: "ssim 0.0800"}, {Text: "std ratio 1.000"}, {Text: "psnr 9.50 dB < 12", Miss: true}, {Text: "ssim 0.0800 < 0.1", Miss: true},
				{Text: "a miss long enough to wrap over two lines", Miss: true}}},
		{Label: "02 profiling", Phase: "profiling", Sent: SendOrder{1, 2}, Instruction: "A supercalifragilisticexpialidocious word wraps", Reference: alpha, HTTP: out, Native: manyOff},
		{Label: "03 profiling", Phase: "profiling", Sent: SendOrder{1, 1}, Instruction: "Sizes differ", Reference: ref, HTTP: out, Native: ref},
		{Label: "04 profiling", Phase: "profiling", Sent: SendOrder{1, 3}, Instruction: "No native output", Reference: ref, HTTP: out},
		{Label: "05 profiling", Phase: "profiling", Sent: SendOrder{1, 4}, Instruction: "Bytes that are no image, and non-ASCII: é", Reference: []byte("not an image"), HTTP: out, Native: []byte("\x89PNG broken")},
	}}
}

func chartFixture() Chart {
	return Chart{Row: "synthetic-row", RunID: "20260101T000000Z-1", TaskSource: "response body timing.task_ms", Requests: []Timing{
		{Label: "00", Sent: SendOrder{0, 0}, Warmup: true, ClientMs: 912.5, TaskMs: 840},
		{Label: "01", Sent: SendOrder{1, 0}, ClientMs: 181.25, TaskMs: 170.5},
		{Label: "02", Sent: SendOrder{1, 2}, ClientMs: 190, TaskMs: 171},
		{Label: "03", Sent: SendOrder{1, 1}, ClientMs: 185.5, TaskMs: math.NaN()},
		{Label: "04", Sent: SendOrder{1, 3}, ClientMs: math.NaN(), TaskMs: 169},
		{Label: "05", Sent: SendOrder{1, 4}, ClientMs: 201.75, TaskMs: 180.25},
	}}
}

// golden compares img with testdata/<name> pixel for pixel (the encoding may change
// with the Go release; the pixels may not), or rewrites it with -update.
func golden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, WritePNG(path, img))
	}
	f, err := os.Open(path)
	require.NoError(t, err, "golden %s missing: run go test ./internal/pictures -update", path)
	defer f.Close()
	want, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, want.Bounds(), img.Bounds(), "size differs from %s", path)
	for y := 0; y < img.Rect.Dy(); y++ {
		for x := 0; x < img.Rect.Dx(); x++ {
			w := color.RGBAModel.Convert(want.At(x, y)).(color.RGBA)
			if g := img.RGBAAt(x, y); g != w {
				t.Fatalf("%s: first differing pixel at (%d,%d): golden %v, rendered %v (rerun with -update if the change is intended)", path, x, y, w, g)
			}
		}
	}
}

func TestContactSheetGolden(t *testing.T) {
	golden(t, "contact-sheet.png", RenderContactSheet(sheetFixture(t)))
	for _, v := range []int{1, 2, 3} {
		old := sheetFixture(t)
		old.Version = v
		golden(t, fmt.Sprintf("v%d/contact-sheet.png", v), RenderContactSheet(old))
	}
}

// The sheet is drawn in the order AIPerf sent the requests, whatever the order of its raw
// export: two exports of the same requests in different orders give one picture (version
// 2 drew the export's order).
func TestContactSheetFollowsTheSendOrder(t *testing.T) {
	a, b := sheetFixture(t), sheetFixture(t)
	b.Edits[2], b.Edits[3] = b.Edits[3], b.Edits[2]
	b.Edits[0], b.Edits[5] = b.Edits[5], b.Edits[0]
	assert.Equal(t, RenderContactSheet(a).Pix, RenderContactSheet(b).Pix)
	a.Version, b.Version = 2, 2
	assert.NotEqual(t, RenderContactSheet(a).Pix, RenderContactSheet(b).Pix, "version 2 follows the export")
}

func TestLatencyChartGolden(t *testing.T) {
	golden(t, "latency.png", RenderLatencyChart(chartFixture()))
	for _, v := range []int{1, 3} {
		old := chartFixture()
		old.Version = v
		golden(t, fmt.Sprintf("v%d/latency.png", v), RenderLatencyChart(old))
	}
}

// Both pictures number the requests by their place in the order sent, one numbering
// (issue 48: the sheet read 00, 02, 01 by the raw export's index while the chart read
// 00-05 in export order). Two exports of the same requests, in other orders and with
// other indexes, give the same pictures; version 3 did not.
func TestBothPicturesNumberInTheOrderSent(t *testing.T) {
	a, b := sheetFixture(t), sheetFixture(t)
	b.Edits[1], b.Edits[3] = b.Edits[3], b.Edits[1]
	for i := range b.Edits {
		b.Edits[i].Label = fmt.Sprintf("%02d %s", 5-i, b.Edits[i].Phase)
	}
	assert.Equal(t, RenderContactSheet(a).Pix, RenderContactSheet(b).Pix, "the sheet")
	a.Version, b.Version = 3, 3
	assert.NotEqual(t, RenderContactSheet(a).Pix, RenderContactSheet(b).Pix, "version 3 drew the export's index")

	c, d := chartFixture(), chartFixture()
	d.Requests[2], d.Requests[3] = d.Requests[3], d.Requests[2]
	for i := range d.Requests {
		d.Requests[i].Label = fmt.Sprintf("%02d", 5-i)
	}
	assert.Equal(t, RenderLatencyChart(c).Pix, RenderLatencyChart(d).Pix, "the chart")
	c.Version, d.Version = 3, 3
	assert.NotEqual(t, RenderLatencyChart(c).Pix, RenderLatencyChart(d).Pix, "version 3 drew the export's order and index")
}

// Rendering twice gives the same bytes: nothing depends on time, maps or memory.
func TestRenderingIsDeterministic(t *testing.T) {
	s := sheetFixture(t)
	a, err := encodePNG(RenderContactSheet(s))
	require.NoError(t, err)
	b, err := encodePNG(RenderContactSheet(s))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	c1, _ := encodePNG(RenderLatencyChart(chartFixture()))
	c2, _ := encodePNG(RenderLatencyChart(chartFixture()))
	assert.Equal(t, c1, c2)
}

func TestWritesIntoTheRowFolder(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, ContactSheet(dir, sheetFixture(t)))
	require.NoError(t, LatencyChart(dir, chartFixture()))
	for _, f := range []string{schema.ContactSheetFile, schema.LatencyChartFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		_, err = png.Decode(bytes.NewReader(b))
		require.NoError(t, err, f)
	}
}

func TestEmptyInputsStillDraw(t *testing.T) {
	assert.False(t, RenderContactSheet(Sheet{Row: "r"}).Rect.Empty())
	assert.False(t, RenderLatencyChart(Chart{Row: "r"}).Rect.Empty())
}

func TestScale(t *testing.T) {
	for _, tt := range []struct {
		vmax   float64
		labels []string
	}{
		{0, []string{"0", "0.001"}},
		{0.7, []string{"0", "0.2", "0.4", "0.6", "0.8"}},
		{33.005, []string{"0", "10", "20", "30", "40"}},
		{91.52, []string{"0", "20", "40", "60", "80", "100"}},
		{912.5, []string{"0", "200", "400", "600", "800", "1000"}},
		{100, []string{"0", "20", "40", "60", "80", "100"}},
	} {
		sc := newScale(tt.vmax)
		var got []string
		for i := 0; i <= sc.ticks; i++ {
			got = append(got, sc.label(i))
		}
		assert.Equal(t, tt.labels, got, "vmax %v", tt.vmax)
		assert.GreaterOrEqual(t, sc.top, tt.vmax)
	}
}

func TestNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	assert.Equal(t, 3.0, nearestRank(xs, 50))
	assert.Equal(t, 5.0, nearestRank(xs, 95))
	assert.Equal(t, 1.0, nearestRank([]float64{1, 2}, 50))
}

func TestWrap(t *testing.T) {
	assert.Equal(t, []string{"Turn this photo into", "black and white"}, wrap("Turn this photo into black and white", 24))
	assert.Equal(t, []string{"abcdef", "gh ij"}, wrap("abcdefgh ij", 6))
	assert.Equal(t, []string{"caf?"}, wrap("café", 10))
	assert.Nil(t, wrap("", 10))
}

func TestWrapWords(t *testing.T) {
	assert.Equal(t, []string{"vs", "reference-", "000-long.png:"}, wrapWords("vs reference-000-long.png:", 13))
	assert.Equal(t, []string{"abcdef", "gh ij"}, wrapWords("abcdefgh ij", 6), "no break point: mid-word")
	assert.Equal(t, []string{"Turn this photo into", "black and white"}, wrapWords("Turn this photo into black and white", 24))
}

func TestFit(t *testing.T) {
	for _, tt := range []struct{ w, h, box, fw, fh int }{
		{640, 382, 128, 128, 76}, {64, 64, 128, 128, 128}, {32, 48, 128, 85, 128}, {1, 1000, 128, 1, 128}, {0, 5, 128, 0, 0},
	} {
		w, h := fit(tt.w, tt.h, tt.box)
		assert.Equal(t, [2]int{tt.fw, tt.fh}, [2]int{w, h}, "%dx%d", tt.w, tt.h)
	}
}
