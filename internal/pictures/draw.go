package pictures

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	xdraw "golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var (
	face       = basicfont.Face7x13
	charW      = 7
	lineH      = 14
	white      = color.RGBA{0xff, 0xff, 0xff, 0xff}
	black      = color.RGBA{0x20, 0x20, 0x20, 0xff}
	grey       = color.RGBA{0x70, 0x70, 0x70, 0xff}
	lightGrey  = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	faintGrey  = color.RGBA{0xf2, 0xf2, 0xf2, 0xff}
	green      = color.RGBA{0x1a, 0x7f, 0x37, 0xff}
	red        = color.RGBA{0xc0, 0x1c, 0x1c, 0xff}
	blue       = color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	orange     = color.RGBA{0xe0, 0x7b, 0x12, 0xff}
	yellow     = color.RGBA{0xff, 0xe0, 0x20, 0xff}
	checkLight = color.RGBA{0xff, 0xff, 0xff, 0xff}
	checkDark  = color.RGBA{0xd0, 0xd0, 0xd0, 0xff}
)

func newCanvas(w, h int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Rect, white)
	return img
}

func fill(dst *image.RGBA, r image.Rectangle, c color.RGBA) {
	draw.Draw(dst, r, image.NewUniform(c), image.Point{}, draw.Src)
}

// frame draws a one-pixel outline just inside r.
func frame(dst *image.RGBA, r image.Rectangle, c color.RGBA) {
	fill(dst, image.Rect(r.Min.X, r.Min.Y, r.Max.X, r.Min.Y+1), c)
	fill(dst, image.Rect(r.Min.X, r.Max.Y-1, r.Max.X, r.Max.Y), c)
	fill(dst, image.Rect(r.Min.X, r.Min.Y, r.Min.X+1, r.Max.Y), c)
	fill(dst, image.Rect(r.Max.X-1, r.Min.Y, r.Max.X, r.Max.Y), c)
}

// text draws s with its top-left corner at (x, y); basicfont is ASCII, so anything
// else is drawn as '?', the same on every machine.
func text(dst *image.RGBA, x, y int, c color.RGBA, s string) {
	d := font.Drawer{Dst: dst, Src: image.NewUniform(c), Face: face, Dot: fixed.P(x, y+face.Ascent)}
	d.DrawString(ascii(s))
}

func ascii(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, s)
}

// wrap breaks s into lines of at most n characters, at spaces where it can; a word
// longer than a line is cut at n (version 1).
func wrap(s string, n int) []string { return wrapAt(s, n, "") }

// wrapWords is wrap for version 2: a word longer than a line (a file name) breaks after
// its last '-', '_', '.' or '/' that fits, and at n only when none does.
func wrapWords(s string, n int) []string { return wrapAt(s, n, "-_./") }

// wrapAt breaks s into lines of at most n characters at spaces, and a word longer than
// a line after its last character of breaks that fits, else at n.
func wrapAt(s string, n int, breaks string) []string {
	var lines []string
	for _, word := range strings.Fields(ascii(s)) {
		for len(word) > n {
			cut := n
			if i := strings.LastIndexAny(word[:n], breaks); i >= 0 {
				cut = i + 1
			}
			lines = append(lines, word[:cut])
			word = word[cut:]
		}
		switch last := len(lines) - 1; {
		case last >= 0 && len(lines[last])+1+len(word) <= n:
			lines[last] += " " + word
		default:
			lines = append(lines, word)
		}
	}
	return lines
}

// Version is the version of the pictures this package draws now (4: both pictures in the
// order AIPerf sent the requests, numbered in that order; 3: the contact sheet in that
// order but numbered by the raw export, the latency chart as version 2 drew it).
const Version = 4

// version is v, or the current version for 0.
func version(v int) int {
	if v == 0 {
		return Version
	}
	return v
}

// clipText shortens s to n characters, marking the cut.
func clipText(s string, n int) string {
	s = ascii(s)
	if len(s) <= n {
		return s
	}
	if n <= 3 {
		return s[:n]
	}
	return s[:n-3] + "..."
}

// fit is the largest w x h within box x box with the aspect of sw x sh.
func fit(sw, sh, box int) (int, int) {
	if sw <= 0 || sh <= 0 {
		return 0, 0
	}
	if sw >= sh {
		return box, max(1, sh*box/sw)
	}
	return max(1, sw*box/sh), box
}

// thumbnail draws src scaled to fit a box x box cell at (x, y), centred, over a
// checkerboard so transparency shows.
func thumbnail(dst *image.RGBA, x, y, box int, src image.Image) {
	b := src.Bounds()
	w, h := fit(b.Dx(), b.Dy(), box)
	r := image.Rect(x+(box-w)/2, y+(box-h)/2, x+(box-w)/2+w, y+(box-h)/2+h)
	for cy := r.Min.Y; cy < r.Max.Y; cy += 8 {
		for cx := r.Min.X; cx < r.Max.X; cx += 8 {
			c := checkLight
			if ((cx-r.Min.X)/8+(cy-r.Min.Y)/8)%2 == 1 {
				c = checkDark
			}
			fill(dst, image.Rect(cx, cy, min(cx+8, r.Max.X), min(cy+8, r.Max.Y)), c)
		}
	}
	xdraw.NearestNeighbor.Scale(dst, r, src, b, xdraw.Over, nil)
	frame(dst, r.Inset(-1), lightGrey)
}

// encodePNG is the one PNG encoding this package writes.
func encodePNG(img image.Image) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.DefaultCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WritePNG writes img to path, creating its folder.
func WritePNG(path string, img image.Image) error {
	b, err := encodePNG(img)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
