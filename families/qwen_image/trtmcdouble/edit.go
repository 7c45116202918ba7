package trtmcdouble

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // decodeImage's formats
	"image/png"
	"math"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/image/draw"
)

// Settings are the controls of one edit, as every program of the double names them
// (the server's form fields, the CLI's flags, the worker's request keys).
type Settings struct {
	Seed           int64
	Steps          int
	CFGScale       float64 // cfg_scale, true_cfg_scale, --cfg-scale
	GuidanceScale  float64 // guidance_scale, --guidance-scale; <= 0: unset
	NegativePrompt string
	Width, Height  int
	// Latents is the sha256 of the initial noise a request supplied (initial_latents_path,
	// the case's latents file), "" when the model draws its own from Seed. Supplied noise
	// replaces the seed's, as in the model.
	Latents string
}

// TrueCFG is the true CFG scale the edit runs with: TRTMC's Qwen-Image takes guidance_scale
// as it, default 4.0, and ignores cfg_scale (config/models/qwen-image-edit-2511.yaml @
// ca938e40), so CFGScale is validated but moves nothing.
func (s Settings) TrueCFG() float64 {
	if s.GuidanceScale > 0 {
		return s.GuidanceScale
	}
	return DefaultCFGScale
}

// Default edit settings, shared so that every program gives the same bytes.
const (
	DefaultSize          = 1024
	DefaultSteps         = 50
	DefaultCFGScale      = 4.0
	DefaultGuidanceScale = -1.0 // unset: the bundle's default true CFG (TrueCFG)
	DefaultNegative      = " "
	maxEditSide          = 4096
)

// DefaultSettings are the settings of a request that sets none, for a bundle.
func DefaultSettings(h BundleHeader) Settings {
	s := Settings{Steps: DefaultSteps, CFGScale: DefaultCFGScale, GuidanceScale: DefaultGuidanceScale,
		NegativePrompt: DefaultNegative, Width: DefaultSize, Height: DefaultSize}
	if h.ImageWidth > 0 && h.ImageHeight > 0 {
		s.Width, s.Height = h.ImageWidth, h.ImageHeight
	}
	if h.NumInferenceSteps > 0 {
		s.Steps = h.NumInferenceSteps
	}
	return s
}

func (s Settings) validate() error {
	switch {
	case s.Width < 1 || s.Height < 1 || s.Width > maxEditSide || s.Height > maxEditSide:
		return fmt.Errorf("size %dx%d: width and height must be 1..%d", s.Width, s.Height, maxEditSide)
	case s.Steps < 1:
		return fmt.Errorf("num_inference_steps %d: must be at least 1", s.Steps)
	}
	return nil
}

// Edit is the double's image edit: a pure, deterministic function of the reference image
// (PNG or JPEG), the prompt and the settings, returning a Width x Height PNG: a colour
// transform keyed by sha256 of the prompt and settings. It is no diffusion model.
func Edit(src []byte, prompt string, s Settings) ([]byte, error) {
	img, err := decodeImage(src)
	if err != nil {
		return nil, err
	}
	out, err := editImage(img, prompt, s)
	if err != nil {
		return nil, err
	}
	return encodePNG(out)
}

func decodeImage(b []byte) (image.Image, error) {
	img, format, err := image.Decode(bytes.NewReader(b))
	return img, pngOrJPEG(format, err)
}

func imageSize(b []byte) (w, h int, err error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	return cfg.Width, cfg.Height, pngOrJPEG(format, err)
}

// pngOrJPEG is err, or an error when the format is neither (another package may register more).
func pngOrJPEG(format string, err error) error {
	if format != "png" && format != "jpeg" {
		return errors.New("the image is neither PNG nor JPEG")
	} else if err != nil {
		return fmt.Errorf("%s: %w", strings.ToUpper(format), err)
	}
	return nil
}

// resize scales img to w x h, bilinear.
func resize(img image.Image, w, h int) *image.NRGBA {
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	draw.BiLinear.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst
}

func toNRGBA(img image.Image) *image.NRGBA {
	b := img.Bounds()
	dst := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Src)
	return dst
}

func editImage(img image.Image, prompt string, s Settings) (*image.NRGBA, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	out := resize(img, s.Width, s.Height)
	lk := lookFor(prompt, s)
	for y := range s.Height {
		row := out.Pix[y*out.Stride : y*out.Stride+4*s.Width]
		for x := range s.Width {
			px := row[4*x : 4*x+4]
			in := [3]uint8{px[0], px[1], px[2]}
			d := int(lk.stripe[(x*lk.fx+y*lk.fy)%len(lk.stripe)])
			for c := range 3 {
				px[c] = clamp8(int(lk.lut[c][in[lk.perm[c]]]) + d)
			}
			px[3] = 0xff
		}
	}
	denoise(out.Pix, out.Stride, s.Steps, lk.noise)
	return out, nil
}

// denoise is the double's sampler loop: the image moves from noise toward target in
// steps shares, one pass per step, so the Task time grows with the steps as the model's
// does (the controls stage measures it at N and 2N steps). The last share is the whole
// remainder, unsmoothed, so the pixels end exactly on target whatever the step count.
func denoise(target []uint8, stride, steps int, noise [32]byte) {
	x := make([]int32, len(target))
	r := binary.LittleEndian.Uint64(noise[:8]) | 1
	for i := range x {
		r ^= r << 13
		r ^= r >> 7
		r ^= r << 17
		x[i] = int32(r & 0xff)
	}
	for k := range steps {
		// A share of what is left to the target, and, on every step but the last, a
		// smoothing of each value with its four neighbours of the same channel.
		left := int32(steps - k)
		for i, t := range target {
			d := (int32(t) - x[i]) / left
			if i >= stride && i+stride < len(x) {
				d += (x[i-4] + x[i+4] + x[i-stride] + x[i+stride] - 4*x[i]) * (left - 1) / (8 * left)
			}
			x[i] += d
		}
	}
	for i, v := range x {
		target[i] = uint8(v)
	}
}

type look struct {
	perm   [3]int        // output channel c takes input channel perm[c]
	lut    [3][256]uint8 // gamma, then inversion, per output channel
	stripe []int8        // additive stripe pattern over one period
	fx, fy int           // stripe direction
	noise  [32]byte      // where the sampler loop starts (denoise)
}

func lookFor(prompt string, s Settings) look {
	noise := fmt.Sprintf("seed %d", s.Seed)
	if s.Latents != "" {
		noise = "latents " + s.Latents
	}
	// The colour transform follows the instruction and the sampler settings; the noise
	// sets only the stripe, as a diffusion model's noise moves detail, not the edit. Two
	// runs on different noise then land near each other (a pair that is not held to the
	// case's noise fails a PSNR floor by degrees, not by chance), and runs on the same
	// noise are identical.
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%g\x00%s", prompt, s.Steps, s.TrueCFG(), s.NegativePrompt))
	n := sha256.Sum256([]byte(noise))
	rotations := [][3]int{{1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}} // never the identity
	lk := look{perm: rotations[int(h[0])%len(rotations)], fx: 1 + int(h[9])%3, fy: int(h[10]) % 3, noise: n}
	invert := 1 + int(h[1])%7 // a non-empty set of inverted channels
	for c := range 3 {
		gamma := 0.45 + float64(h[2+c])/255*0.35 // 0.45..0.8, or its inverse 1.25..2.2
		if h[5+c]&1 == 1 {
			gamma = 1 / gamma
		}
		for v := range 256 {
			g := math.Round(255 * math.Pow(float64(v)/255, gamma))
			if invert&(1<<c) != 0 {
				g = 255 - g
			}
			lk.lut[c][v] = uint8(g)
		}
	}
	period := 16 + int(n[0])%48
	amp := 12 + float64(n[1]%12)
	phase := float64(n[2]) / 255 * 2 * math.Pi
	lk.stripe = make([]int8, period)
	for i := range lk.stripe {
		lk.stripe[i] = int8(math.Round(amp * math.Sin(2*math.Pi*float64(i)/float64(period)+phase)))
	}
	return lk
}

func clamp8(v int) uint8 {
	return uint8(min(max(v, 0), 255))
}

// encodePNG uses BestSpeed: bytes are never compared across encoders, and
// DefaultCompression's match search was a fifth of the double's CPU under -race (pprof).
func encodePNG(img image.Image) ([]byte, error) {
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// editCPU is editImage and its CPU time, which the programs report as the Task call's: on
// a shared host the wall measures the host's load, not the work (wall ratios at 10 and 20
// steps ranged 0.68 to 5.15). It runs on one locked OS thread, after a GC so that none
// the request's decoding started is helped along inside it.
func editCPU(img image.Image, prompt string, s Settings) (*image.NRGBA, time.Duration, error) {
	runtime.GC()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	out, err := editImage(img, prompt, s)
	return out, threadCPU() - start, err
}

// threadCPU is the calling OS thread's user and system time.
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
