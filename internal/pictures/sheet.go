package pictures

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // a reference image may be a JPEG fixture
	_ "image/png"
	"path/filepath"
	"slices"

	"qualkit/internal/judge"
	"qualkit/internal/schema"
)

// Sheet is what a row's contact sheet shows: every request AIPerf sent, warmup included,
// in the order AIPerf sent them (Edit.Sent), numbered in that order as the latency chart
// numbers them, so that two runs of the same workload line up request by request.
type Sheet struct {
	Row   string
	RunID string
	Edits []Edit
	// Version is the rendering: 0 or Version (the current); 3 (labelled by the raw
	// export's index); 2 (in the raw export's order); or 1 (the old legend, names
	// wrapped mid-word). The checker accepts any of them drawn from the same records.
	Version int
}

// SendOrder is a request's place in AIPerf's sending: its phase (AIPerf's phase_index:
// warmup first) and its number in that phase (session_num).
type SendOrder struct {
	Phase, Index int
}

func (a SendOrder) compare(b SendOrder) int {
	return cmp.Or(cmp.Compare(a.Phase, b.Phase), cmp.Compare(a.Index, b.Index))
}

// Edit is one request: the exact reference-image bytes it sent, its instruction, the
// PNG its HTTP response carried and the PNG the native Task wrote for the same input.
// A nil output is drawn as missing; bytes that do not decode are drawn as an error.
type Edit struct {
	Label       string // "00 warmup", "01 profiling": the raw export's index, which names its files (versions 1 to 3 draw it)
	Phase       string // "warmup", "profiling": version 4 draws "<place in the order sent> <phase>"
	Sent        SendOrder
	Instruction string
	Reference   []byte
	HTTP        []byte
	Native      []byte
	// Quality is what the quality stage measured on the HTTP output, one line each;
	// nil when the stage did not run.
	Quality []QualityLine
}

// QualityLine is one line of an output's quality column: a measure, or a criterion it
// missed (Miss, drawn red).
type QualityLine struct {
	Text string
	Miss bool
}

// Contact sheet geometry, in pixels.
const (
	pad        = 8
	thumb      = 128
	labelW     = 12 * 7 // "00 profiling"
	instrChars = 24
	instrW     = instrChars * 7
	qualChars  = 22
	qualW      = qualChars * 7
	captionH   = 2 * 14
)

// ContactSheet renders the sheet and writes it to <rowDir>/pictures/contact-sheet.png.
func ContactSheet(rowDir string, s Sheet) error {
	return WritePNG(filepath.Join(rowDir, filepath.FromSlash(schema.ContactSheetFile)), RenderContactSheet(s))
}

// RenderContactSheet draws the sheet: one line per request with the reference image,
// the instruction, the HTTP output, the native output and their difference.
func RenderContactSheet(s Sheet) *image.RGBA {
	v := version(s.Version)
	if v >= 3 {
		s.Edits = slices.Clone(s.Edits)
		slices.SortStableFunc(s.Edits, func(a, b Edit) int { return a.Sent.compare(b.Sent) })
	}
	if v >= 4 {
		for i := range s.Edits {
			s.Edits[i].Label = fmt.Sprintf("%02d %s", i, s.Edits[i].Phase)
		}
	}
	cells := make([]sheetLine, len(s.Edits))
	identical := 0
	bodyH := 0
	for i, e := range s.Edits {
		cells[i] = newSheetLine(e, v)
		if cells[i].diff.state == diffNone {
			identical++
		}
		bodyH += cells[i].height()
	}
	x0 := pad
	cols := []int{x0, x0 + labelW + pad}
	cols = append(cols, cols[1]+thumb+pad)                        // instruction
	cols = append(cols, cols[2]+instrW+pad)                       // HTTP
	cols = append(cols, cols[3]+thumb+pad, cols[3]+2*(thumb+pad)) // native, diff
	cols = append(cols, cols[5]+thumb+pad)                        // quality
	width := cols[6] + qualW + pad
	headH := pad + 3*lineH + pad
	footH := pad + len(sheetLegend[v])*lineH + pad
	img := newCanvas(width, headH+bodyH+footH)

	text(img, pad, pad, black, clipText(fmt.Sprintf("%s  run %s", s.Row, s.RunID), (width-2*pad)/charW))
	order := ""
	if v >= 3 {
		order = " in the order sent"
	}
	text(img, pad, pad+lineH, grey, fmt.Sprintf("%d requests%s (warmup included); native output pixel-identical to HTTP in %d of %d", len(s.Edits), order, identical, len(s.Edits)))
	headY := pad + 2*lineH + 4
	for i, h := range []string{"request", "reference", "instruction", "HTTP output", "native output", "difference", "HTTP output quality"} {
		text(img, cols[i], headY, black, h)
	}
	fill(img, image.Rect(pad, headH-pad/2, width-pad, headH-pad/2+1), lightGrey)

	y := headH
	for i, c := range cells {
		if i%2 == 1 {
			fill(img, image.Rect(0, y, width, y+c.height()), faintGrey)
		}
		c.draw(img, cols, y+pad)
		y += c.height()
	}
	fill(img, image.Rect(pad, y, width-pad, y+1), lightGrey)
	for i, l := range sheetLegend[v] {
		text(img, pad, y+pad+i*lineH, grey, l)
	}
	return img
}

// sheetLegend is the contact sheet's legend, per version: version 1's said "black =
// equal pixel" of every cell, though an identical pair is drawn as a green frame.
var sheetLegend = map[int][]string{
	1: {"difference: black = equal pixel; red to yellow = largest channel difference 1 to 255 (max over each thumbnail cell)",
		"quality: pixel mean, std and std ratio (to the input; to the reference image for the correctness case's pair); red = a criterion missed"},
	2: {"difference: a green frame = the pair is pixel-identical; else a heat map: black = equal pixel, red to yellow = largest channel",
		"difference 1 to 255 (max over each thumbnail cell), each differing pixel ringed yellow when there are few; red frame = nothing to compare",
		"quality: pixel mean, std and std ratio (to the input; to the reference image for the correctness case's pair); red = a criterion missed"},
}

type picture struct {
	img  image.Image
	info string // "512x512 8a78035f"
	err  string
}

func decodePicture(b []byte, what string) picture {
	if b == nil {
		return picture{err: "no " + what}
	}
	sum := sha256.Sum256(b)
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return picture{err: what + " does not decode"}
	}
	return picture{img: img, info: fmt.Sprintf("%dx%d %s", img.Bounds().Dx(), img.Bounds().Dy(), hex.EncodeToString(sum[:4]))}
}

type sheetLine struct {
	e                 Edit
	ref, http, native picture
	diff              diff
	instr             []string
	qual              []QualityLine
}

func newSheetLine(e Edit, v int) sheetLine {
	wrapAt := wrap
	if v >= 2 {
		wrapAt = wrapWords
	}
	l := sheetLine{e: e, ref: decodePicture(e.Reference, "reference"), http: decodePicture(e.HTTP, "HTTP output"),
		native: decodePicture(e.Native, "native output"), instr: wrapAt(e.Instruction, instrChars)}
	for _, q := range e.Quality {
		for _, s := range wrapAt(q.Text, qualChars) {
			l.qual = append(l.qual, QualityLine{Text: s, Miss: q.Miss})
		}
	}
	l.diff = compare(l.http.img, l.native.img)
	l.diff.sameBytes = e.HTTP != nil && bytes.Equal(e.HTTP, e.Native)
	return l
}

func (l sheetLine) height() int {
	return pad + max(thumb+captionH, len(l.instr)*lineH, len(l.qual)*lineH) + pad
}

func (l sheetLine) draw(img *image.RGBA, cols []int, y int) {
	label := wrap(l.e.Label, labelW/charW)
	for i, s := range label {
		text(img, cols[0], y+i*lineH, black, s)
	}
	drawPicture(img, cols[1], y, l.ref)
	for i, s := range l.instr {
		text(img, cols[2], y+i*lineH, black, s)
	}
	drawPicture(img, cols[3], y, l.http)
	drawPicture(img, cols[4], y, l.native)
	l.diff.draw(img, cols[5], y)
	for i, q := range l.qual {
		c := grey
		if q.Miss {
			c = red
		}
		text(img, cols[6], y+i*lineH, c, q.Text)
	}
}

func drawPicture(img *image.RGBA, x, y int, p picture) {
	if p.img == nil {
		frame(img, image.Rect(x, y, x+thumb, y+thumb), red)
		for i, s := range wrap(p.err, thumb/charW-1) {
			text(img, x+4, y+4+i*lineH, red, s)
		}
		return
	}
	thumbnail(img, x, y, thumb, p.img)
	text(img, x, y+thumb+3, grey, clipText(p.info, thumb/charW))
}

type diffState int

const (
	diffNone    diffState = iota // pixel-identical
	diffPixels                   // same size, some pixels differ
	diffSize                     // sizes differ
	diffMissing                  // one side is missing
)

// diff is the difference of two decoded outputs: per pixel, the largest channel
// difference at 8 bits, non-premultiplied (the harness's comparison).
type diff struct {
	state     diffState
	w, h      int
	mag       []uint8
	count     int
	maxDiff   int
	sizeText  string
	sameBytes bool
}

func compare(a, b image.Image) diff {
	if a == nil || b == nil {
		return diff{state: diffMissing}
	}
	ab, bb := a.Bounds(), b.Bounds()
	if ab.Size() != bb.Size() {
		return diff{state: diffSize, sizeText: fmt.Sprintf("%dx%d vs %dx%d", ab.Dx(), ab.Dy(), bb.Dx(), bb.Dy())}
	}
	d := diff{w: ab.Dx(), h: ab.Dy(), mag: make([]uint8, ab.Dx()*ab.Dy())}
	pa, pb := judge.ToNRGBA(a), judge.ToNRGBA(b)
	for y := 0; y < d.h; y++ {
		ra, rb := pa.Pix[y*pa.Stride:y*pa.Stride+4*d.w], pb.Pix[y*pb.Stride:y*pb.Stride+4*d.w]
		if bytes.Equal(ra, rb) {
			continue
		}
		for x := 0; x < d.w; x++ {
			i := 4 * x
			m := max(absDiff(ra[i], rb[i]), absDiff(ra[i+1], rb[i+1]), absDiff(ra[i+2], rb[i+2]), absDiff(ra[i+3], rb[i+3]))
			if m > 0 {
				d.mag[y*d.w+x] = uint8(m)
				d.count++
				d.maxDiff = max(d.maxDiff, m)
			}
		}
	}
	if d.count == 0 {
		d.state = diffNone
	} else {
		d.state = diffPixels
	}
	return d
}

func absDiff(a, b uint8) int {
	if a > b {
		return int(a - b)
	}
	return int(b - a)
}

func (d diff) draw(img *image.RGBA, x, y int) {
	switch d.state {
	case diffMissing:
		frame(img, image.Rect(x, y, x+thumb, y+thumb), red)
		text(img, x+4, y+4, red, "nothing to")
		text(img, x+4, y+4+lineH, red, "compare")
	case diffSize:
		frame(img, image.Rect(x, y, x+thumb, y+thumb), red)
		text(img, x+4, y+4, red, "sizes differ:")
		text(img, x+4, y+4+lineH, red, clipText(d.sizeText, thumb/charW-1))
	case diffNone:
		frame(img, image.Rect(x, y, x+thumb, y+thumb), green)
		text(img, x+4, y+4, green, "pixel-identical")
		if d.sameBytes {
			text(img, x+4, y+4+lineH, green, "(bytes too)")
		}
	case diffPixels:
		d.heatMap(img, x, y)
		text(img, x, y+thumb+3, red, clipText(fmt.Sprintf("%d px differ", d.count), thumb/charW))
		text(img, x, y+thumb+3+lineH, red, fmt.Sprintf("largest by %d", d.maxDiff))
	}
}

// heatMap draws the difference scaled into a thumbnail cell, each cell pixel the
// largest difference of the source pixels it covers, so one differing pixel still shows.
func (d diff) heatMap(img *image.RGBA, x, y int) {
	w, h := fit(d.w, d.h, thumb)
	ox, oy := x+(thumb-w)/2, y+(thumb-h)/2
	for ty := 0; ty < h; ty++ {
		y0 := ty * d.h / h
		y1 := max(y0+1, (ty+1)*d.h/h)
		for tx := 0; tx < w; tx++ {
			x0 := tx * d.w / w
			x1 := max(x0+1, (tx+1)*d.w/w)
			m := uint8(0)
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					m = max(m, d.mag[sy*d.w+sx])
				}
			}
			img.SetRGBA(ox+tx, oy+ty, heat(m))
		}
	}
	frame(img, image.Rect(ox, oy, ox+w, oy+h).Inset(-1), red)
	if d.count > markLimit {
		return
	}
	// A few differing pixels vanish in a thumbnail: ring each one.
	for sy := 0; sy < d.h; sy++ {
		for sx := 0; sx < d.w; sx++ {
			if d.mag[sy*d.w+sx] == 0 {
				continue
			}
			cx, cy := ox+sx*w/d.w, oy+sy*h/d.h
			ring := image.Rect(cx-4, cy-4, cx+5, cy+5).Intersect(image.Rect(ox, oy, ox+w, oy+h))
			if !ring.Empty() {
				frame(img, ring, yellow)
			}
		}
	}
}

// markLimit is the most differing pixels that are each ringed on the heat map.
const markLimit = 32

// heat maps a difference of 0..255 levels to black (equal), then red to yellow.
func heat(m uint8) color.RGBA {
	if m == 0 {
		return color.RGBA{0, 0, 0, 0xff}
	}
	return color.RGBA{0xff, uint8(0x20 + int(m)*0xdf/0xff), 0, 0xff}
}

// toNRGBA converts to 8-bit non-premultiplied RGBA, as the harness compares pixels.
