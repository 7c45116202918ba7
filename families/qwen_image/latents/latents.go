// Package latents draws, bit for bit and without Python, the noise TRTMC's perf-serve
// replays for a latent_seed: numpy.random.default_rng(seed).standard_normal(shape,
// float32) as raw float32 (latents.py @ d3e1a549 § noise; the families case draws the
// same, test_e2e.py @ 9777fef7 § _initial_latents). SeedSequence, PCG64 and the float32
// ziggurat are written from their published algorithms and held to NumPy by
// testdata/test_numpy_latents.py's golden digests.

package latents

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
)

// SeedSequence's mixing constants (numpy/random/bit_generator.pyx).
const (
	initA    = 0x43b0d7e5
	multA    = 0x931e8875
	initB    = 0x8b51f9dd
	multB    = 0x58f38ded
	mixMultL = 0xca01f9dd
	mixMultR = 0x4973f715
	xShift   = 16
	poolSize = 4
)

// seedState is SeedSequence(seed).generate_state(4, uint64) for a non-negative seed and
// no spawn key.
func seedState(seed uint64) [4]uint64 {
	var entropy []uint32 // the seed as little-endian 32-bit words, at least one
	for v := seed; ; v >>= 32 {
		entropy = append(entropy, uint32(v))
		if v>>32 == 0 {
			break
		}
	}
	hashConst := uint32(initA)
	hashmix := func(v uint32) uint32 {
		v ^= hashConst
		hashConst *= multA
		v *= hashConst
		return v ^ v>>xShift
	}
	mix := func(x, y uint32) uint32 {
		r := mixMultL*x - mixMultR*y
		return r ^ r>>xShift
	}
	var pool [poolSize]uint32
	for i := range pool {
		var e uint32
		if i < len(entropy) {
			e = entropy[i]
		}
		pool[i] = hashmix(e)
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	for src := poolSize; src < len(entropy); src++ {
		for dst := range pool {
			pool[dst] = mix(pool[dst], hashmix(entropy[src]))
		}
	}
	var words [8]uint32
	hc := uint32(initB)
	for i := range words {
		v := pool[i%poolSize] ^ hc
		hc *= multB
		v *= hc
		words[i] = v ^ v>>xShift
	}
	var out [4]uint64
	for i := range out {
		out[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	return out
}

// pcg64 is NumPy's PCG64: a 128-bit LCG with the XSL-RR output, and the 32-bit draws
// taken as halves of one 64-bit draw, low half first.
type pcg64 struct {
	hi, lo       uint64 // state
	incHi, incLo uint64
	half         uint32
	hasHalf      bool
}

// PCG_DEFAULT_MULTIPLIER_128.
const mulHi, mulLo = 0x2360ed051fc65da4, 0x4385df649fccf645

func newPCG64(seed uint64) *pcg64 {
	s := seedState(seed)
	g := &pcg64{}
	// initseq = s[2]:s[3]; inc = initseq<<1 | 1.
	g.incHi = s[2]<<1 | s[3]>>63
	g.incLo = s[3]<<1 | 1
	g.step()
	var carry uint64
	g.lo, carry = bits.Add64(g.lo, s[1], 0)
	g.hi, _ = bits.Add64(g.hi, s[0], carry)
	g.step()
	return g
}

func (g *pcg64) step() {
	hi, lo := bits.Mul64(g.lo, mulLo)
	hi += g.hi*mulLo + g.lo*mulHi
	var carry uint64
	g.lo, carry = bits.Add64(lo, g.incLo, 0)
	g.hi, _ = bits.Add64(hi, g.incHi, carry)
}

func (g *pcg64) next64() uint64 {
	g.step()
	return bits.RotateLeft64(g.hi^g.lo, -int(g.hi>>58))
}

func (g *pcg64) next32() uint32 {
	if g.hasHalf {
		g.hasHalf = false
		return g.half
	}
	v := g.next64()
	g.half, g.hasHalf = uint32(v>>32), true
	return uint32(v)
}

// nextFloat is next_float: the top 24 bits of a 32-bit draw, in [0, 1).
func (g *pcg64) nextFloat() float32 {
	return float32(g.next32()>>8) * (1.0 / 16777216.0)
}

// The normal ziggurat's 256 layers, float32 flavour (random_standard_normal_f).
const (
	zigR    = 3.6541528853610087963519472518
	zigArea = 0.0049286732339746519
	zigRF   = float32(3.6541528853610088)
	zigInvF = float32(0.27366123732975828)
)

var ki [256]uint32
var wi, fi [256]float32

// The tables follow the ziggurat's construction: x[255] = r, each layer below it of
// area v, x[0] = 0; k, w and f are the layer's acceptance ratio (scaled by 2^23, the
// 23 magnitude bits of a draw), width per unit and density.
func init() {
	pdf := func(x float64) float64 { return math.Exp(-0.5 * x * x) }
	var x [256]float64
	x[255] = zigR
	for i := 254; i >= 1; i-- {
		x[i] = math.Sqrt(-2 * math.Log(pdf(x[i+1])+zigArea/x[i+1]))
	}
	const scale = 1 << 23
	ki[0] = uint32(math.RoundToEven(zigR * pdf(zigR) / zigArea * scale))
	wi[0] = float32(zigArea / pdf(zigR) / scale)
	fi[0] = 1
	for i := 1; i < 256; i++ {
		ki[i] = uint32(math.RoundToEven(x[i-1] / x[i] * scale))
		wi[i] = float32(x[i] / scale)
		fi[i] = float32(pdf(x[i]))
	}
}

func (g *pcg64) normal() float32 {
	for {
		r := g.next32()
		idx := r & 0xff
		sign := r >> 8 & 1
		rabs := r >> 9 & 0x7fffff
		x := float32(rabs) * wi[idx]
		if sign == 1 {
			x = -x
		}
		if rabs < ki[idx] {
			return x
		}
		if idx == 0 {
			for {
				xx := -zigInvF * log1pf(-g.nextFloat())
				yy := -log1pf(-g.nextFloat())
				if yy+yy > float32(xx*xx) {
					if rabs>>8&1 == 1 {
						return -(zigRF + xx)
					}
					return zigRF + xx
				}
			}
		}
		// The layer's density test, in float32 against exp in double precision.
		if float64(float32((fi[idx-1]-fi[idx])*g.nextFloat())+fi[idx]) < math.Exp(-0.5*float64(x)*float64(x)) {
			return x
		}
	}
}

// Normal is numpy.random.default_rng(seed).standard_normal(n, dtype=numpy.float32)
// (NumPy takes no negative seed).
func Normal(seed uint64, n int) []float32 {
	g := newPCG64(seed)
	out := make([]float32, n)
	for i := range out {
		out[i] = g.normal()
	}
	return out
}

// maxElements bounds one noise array (1 GiB of float32), far above a 4096x4096 image's.
const maxElements = 1 << 28

// Raw is Normal's values as the raw little-endian float32 file latents.py writes
// (ndarray.tofile) and TRTMC's worker reads as initial_latents_path.
func Raw(seed uint64, shape ...int) ([]byte, error) {
	n := 1
	for _, d := range shape {
		if d <= 0 || n > maxElements/d {
			return nil, fmt.Errorf("latent shape %v: every dimension must be positive, at most %d values in all", shape, maxElements)
		}
		n *= d
	}
	v := Normal(seed, n)
	b := make([]byte, 4*n)
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b, nil
}

// QwenImageShape is the unpacked latent shape perf-serve draws for the Qwen-Image
// pipelines (QwenImagePipeline, QwenImageEditPipeline, QwenImageEditPlusPipeline):
// latents.py @ d3e1a549 § _qwen_image, (1, 1, in_channels // 4, 2*(H // (s*2)),
// 2*(W // (s*2))) with s = 2 ** len(vae.temperal_downsample). The families case draws
// (16, H/8, W/8) for the same checkpoint: the same count, so the same bytes.
func QwenImageShape(inChannels, temporalDownsample, height, width int) ([]int, error) {
	if inChannels < 4 || temporalDownsample < 0 || height <= 0 || width <= 0 {
		return nil, fmt.Errorf("qwen-image latent shape: in_channels %d, %d temporal downsample entries, %dx%d: not a Qwen-Image request", inChannels, temporalDownsample, width, height)
	}
	s := 1 << temporalDownsample
	return []int{1, 1, inChannels / 4, 2 * (height / (s * 2)), 2 * (width / (s * 2))}, nil
}

// CheckpointShape is the noise shape of an HxW request for the checkpoint in snapshot,
// read from its model_index.json, transformer/config.json and vae/config.json as
// latents.py @ d3e1a549 § read_checkpoint and canonical_shape read them; the Qwen-Image
// pipelines only.
func CheckpointShape(snapshot string, height, width int) ([]int, error) {
	var index struct {
		Class string `json:"_class_name"`
	}
	var transformer struct {
		InChannels int `json:"in_channels"`
	}
	var vae struct {
		TemporalDownsample []bool `json:"temperal_downsample"`
	}
	for _, c := range []struct {
		rel string
		v   any
	}{{"model_index.json", &index}, {"transformer/config.json", &transformer}, {"vae/config.json", &vae}} {
		b, err := os.ReadFile(filepath.Join(snapshot, c.rel))
		if err == nil {
			err = json.Unmarshal(b, c.v)
		}
		if err != nil {
			return nil, fmt.Errorf("latent replay reads the checkpoint's %s: %w", c.rel, err)
		}
	}
	switch index.Class {
	case "QwenImagePipeline", "QwenImageEditPipeline", "QwenImageEditPlusPipeline":
		return QwenImageShape(transformer.InChannels, len(vae.TemporalDownsample), height, width)
	}
	return nil, fmt.Errorf("latent replay: pipeline %q has no layout qualkit knows (the Qwen-Image pipelines)", index.Class)
}

// log1pf is the C library's single-precision log1p that NumPy's npy_log1pf calls on
// Linux (glibc's sysdeps/ieee754/flt-32/s_log1pf.c, the fdlibm algorithm), for the
// arguments the tail draw gives it, -u with u in [0, 1), the only ones handled. Rounding the double-precision
// log1p instead differs from it by one ulp now and then, and a differing tail sample
// changes the noise's bytes. Every product is converted to float32 so that no
// multiply-add is fused.
func log1pf(x float32) float32 {
	const (
		ln2Hi = float32(6.9313812256e-01) // 0x3f317180
		ln2Lo = float32(9.0580006145e-06) // 0x3717f7d1
		lp1   = float32(6.6666668653e-01)
		lp2   = float32(4.0000000596e-01)
		lp3   = float32(2.8571429849e-01)
		lp4   = float32(2.2222198546e-01)
		lp5   = float32(1.8183572590e-01)
		lp6   = float32(1.5313838422e-01)
		lp7   = float32(1.4798198640e-01)
	)
	hx := int32(math.Float32bits(x))
	ax := hx & 0x7fffffff
	k := int32(1)
	var f, c float32
	var hu int32
	if hx < 0x3ed413d7 { // x < 0.41422
		if ax < 0x31000000 { // |x| < 2**-29
			if ax < 0x24800000 {
				return x
			}
			return x - float32(float32(x*x)*0.5)
		}
		if hx > 0 || hx <= int32(-1097468385) { // 0xbe95f61f: -0.2929 < x < 0.41422
			k, f, hu = 0, x, 1
		}
	}
	if k != 0 {
		u := 1 + x
		hu = int32(math.Float32bits(u))
		k = hu>>23 - 127 // negative: u = 1+x <= 0.7072
		c = (x - (u - 1)) / u
		hu &= 0x007fffff

		if hu < 0x3504f7 {
			u = math.Float32frombits(uint32(hu | 0x3f800000))
		} else {
			k++
			u = math.Float32frombits(uint32(hu | 0x3f000000))
			hu = (0x00800000 - hu) >> 2
		}
		f = u - 1
	}
	hfsq := float32(float32(0.5*f) * f)
	fk := float32(k)
	if hu == 0 { // |f| < 2**-20
		if f == 0 {
			if k == 0 {
				return 0
			}
			c += float32(fk * ln2Lo)
			return float32(fk*ln2Hi) + c
		}
		r := float32(hfsq * (1 - float32(float32(0.66666666666666666)*f)))
		if k == 0 {
			return f - r
		}
		return float32(fk*ln2Hi) - ((r - (float32(fk*ln2Lo) + c)) - f)
	}
	s := f / (2 + f)
	z := float32(s * s)
	r := float32(z * (lp1 + float32(z*(lp2+float32(z*(lp3+float32(z*(lp4+float32(z*(lp5+float32(z*(lp6+float32(z*lp7)))))))))))))
	if k == 0 {
		return f - (hfsq - float32(s*(hfsq+r)))
	}
	return float32(fk*ln2Hi) - ((hfsq - (float32(s*(hfsq+r)) + (float32(fk*ln2Lo) + c))) - f)
}
