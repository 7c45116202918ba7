package trtmcdouble

import (
	"bytes"
	"encoding/base64"
	"image"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// mediaDigest is digests.py @ 7d4725ab § add_media_digests for the worker's images: the
// request folder's output*.png (not *.input.*) in frame order, and a 64x64 RGB thumbnail
// of the first, middle and last frame with the frames' geometry; nil when there is no PNG.
func mediaDigest(workdir string) (*object, error) {
	matches, _ := filepath.Glob(filepath.Join(workdir, "output*.png"))
	var pngs []string
	for _, m := range matches {
		if !strings.Contains(filepath.Base(m), ".input.") {
			pngs = append(pngs, m)
		}
	}
	if len(pngs) == 0 {
		return nil, nil
	}
	sort.Slice(pngs, func(i, j int) bool { return frameKeyLess(filepath.Base(pngs[i]), filepath.Base(pngs[j])) })
	var frames []*image.NRGBA
	for _, p := range pngs {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		img, err := decodeImage(b)
		if err != nil {
			return nil, err
		}
		frames = append(frames, toNRGBA(img))
	}
	picks := []int{0}
	for _, i := range []int{len(frames) / 2, len(frames) - 1} {
		if i != picks[len(picks)-1] {
			picks = append(picks, i)
		}
	}
	var thumbs []any
	for _, i := range picks {
		var t []any
		for _, v := range thumbnail(frames[i], 64) {
			t = append(t, int(v))
		}
		thumbs = append(thumbs, t)
	}
	b := frames[0].Bounds()
	pick := make([]any, len(picks))
	for i, p := range picks {
		pick[i] = p
	}
	return pairs("frames", len(frames), "height", b.Dy(), "width", b.Dx(), "sampled_frames", pick,
		"thumbnail_size", 64, "thumbnails", thumbs), nil
}

// frameKeyLess orders file names by their dot-separated parts, numbers before words and
// by value (digests.py § media_frames).
func frameKeyLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			return na < nb
		case (ea == nil) != (eb == nil):
			return ea == nil
		case ea != nil && pa[i] != pb[i]:
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

// thumbnail is PIL's Image.resize((size, size), BILINEAR) of an RGB image, flattened:
// PIL's separable resampler (a triangle filter widened by the scale when shrinking,
// coefficients in 22-bit fixed point, a horizontal then a vertical pass through 8-bit
// pixels). The values are only seen with --full-observations.
func thumbnail(img *image.NRGBA, size int) []uint8 {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	rgb := make([]uint8, 0, 3*w*h)
	for y := range h {
		row := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := range w {
			rgb = append(rgb, row[4*x], row[4*x+1], row[4*x+2])
		}
	}
	horizontal := resamplePass(rgb, w, h, size, true)
	return resamplePass(horizontal, size, h, size, false)
}

const precisionBits = 32 - 8 - 2

// resamplePass resizes one axis of packed RGB: the width (horizontal) or the height.
func resamplePass(in []uint8, w, h, out int, horizontal bool) []uint8 {
	inSize := h
	if horizontal {
		inSize = w
	}
	bounds, coeffs, ksize := resampleCoeffs(inSize, out)
	ow, oh := out, h
	if !horizontal {
		ow, oh = w, out
	}
	res := make([]uint8, 3*ow*oh)
	for y := range oh {
		for x := range ow {
			i := x
			if !horizontal {
				i = y
			}
			xmin, n := bounds[2*i], bounds[2*i+1]
			k := coeffs[i*ksize : i*ksize+n]
			for c := range 3 {
				ss := int64(1) << (precisionBits - 1)
				for j, kv := range k {
					var px uint8
					if horizontal {
						px = in[3*(y*w+xmin+j)+c]
					} else {
						px = in[3*((xmin+j)*w+x)+c]
					}
					ss += int64(px) * int64(kv)
				}
				res[3*(y*ow+x)+c] = clip8(ss >> precisionBits)
			}
		}
	}
	return res
}

func clip8(v int64) uint8 { return uint8(min(max(v, 0), 255)) }

// resampleCoeffs is PIL's precompute_coeffs for the bilinear filter (support 1) and its
// 8-bit normalisation: each output pixel's first input pixel and count, and its weights.
func resampleCoeffs(inSize, outSize int) ([]int, []int32, int) {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1)
	support := filterscale
	ksize := int(math.Ceil(support))*2 + 1
	bounds := make([]int, 2*outSize)
	coeffs := make([]int32, outSize*ksize)
	for xx := range outSize {
		center := (float64(xx) + 0.5) * scale
		ss := 1 / filterscale
		xmin := max(int(center-support+0.5), 0)
		xmax := min(int(center+support+0.5), inSize) - xmin
		k := make([]float64, xmax)
		var ww float64
		for x := range xmax {
			v := math.Abs((float64(x+xmin) - center + 0.5) * ss)
			wv := 0.0
			if v < 1 {
				wv = 1 - v
			}
			k[x], ww = wv, ww+wv
		}
		for x := range k {
			if ww != 0 {
				k[x] /= ww
			}
			r := 0.5
			if k[x] < 0 {
				r = -0.5
			}
			coeffs[xx*ksize+x] = int32(k[x]*(1<<precisionBits) + r)
		}
		bounds[2*xx], bounds[2*xx+1] = xmin, xmax
	}
	return bounds, coeffs, ksize
}

func sortStrings(s []string) { sort.Strings(s) }

func base64StdStrict(s string) ([]byte, error) { return base64.StdEncoding.Strict().DecodeString(s) }

func clip(b []byte, n int) string {
	b = bytes.TrimSpace(b)
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
