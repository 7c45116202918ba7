package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	stdpng "image/png"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// perf-serve's reference backend writes no PNG: with --keep-artifacts its output is
// <scratch>/<request id>/output.npy (np.save of float32 [1, H, W, 3] in [0, 1]), the path
// in trtmc_observation.artifact and the sha256 of the array's bytes in .sha256
// (backends/reference/common.py @ 7b798a32 § tensor_observation, write_artifacts). The
// edit is then these values quantised to 8 bits as perf-serve's own media digest does
// (digests.py @ 7d4725ab § _to_uint8): clip to [0, 1] ([-1, 1] when the minimum is below
// -0.01), scale to 255, add 0.5 and truncate, in float32.

// npyArray is a float32 array read from a .npy file.
type npyArray struct {
	shape []int
	data  []float32
	raw   []byte // the values' bytes, little-endian, as the array holds them
}

var npyHeader = regexp.MustCompile(`'descr':\s*'([^']*)'.*'fortran_order':\s*(True|False).*'shape':\s*\(([^)]*)\)`)

// readNPY reads a version 1, 2 or 3 .npy file of little-endian float32 in C order.
func readNPY(b []byte) (npyArray, error) {
	if !bytes.HasPrefix(b, []byte("\x93NUMPY")) || len(b) < 10 {
		return npyArray{}, errors.New("not a .npy file (no \\x93NUMPY magic)")
	}
	var hlen, start int
	switch b[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return npyArray{}, errors.New(".npy header is cut short")
		}
		hlen, start = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return npyArray{}, fmt.Errorf(".npy format version %d.%d is unknown", b[6], b[7])
	}
	if start+hlen > len(b) {
		return npyArray{}, errors.New(".npy header is cut short")
	}
	m := npyHeader.FindStringSubmatch(string(b[start : start+hlen]))
	if m == nil {
		return npyArray{}, fmt.Errorf(".npy header %q has no descr, fortran_order and shape", b[start:start+hlen])
	}
	if m[1] != "<f4" || m[2] != "False" {
		return npyArray{}, fmt.Errorf(".npy array is %s (fortran order %s), not C-ordered little-endian float32", m[1], m[2])
	}
	a := npyArray{}
	n := 1
	for _, f := range strings.Split(m[3], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 {
			return npyArray{}, fmt.Errorf(".npy shape (%s) is not a tuple of sizes", m[3])
		}
		a.shape, n = append(a.shape, d), n*d
	}
	a.raw = b[start+hlen:]
	if len(a.raw) != 4*n {
		return npyArray{}, fmt.Errorf(".npy array of shape %v holds %d bytes, not %d", a.shape, len(a.raw), 4*n)
	}
	a.data = make([]float32, n)
	for i := range a.data {
		a.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.raw[4*i:]))
	}
	return a, nil
}

// npyImagePNG is the PNG of a reference backend's output array ([1, H, W, 3] or
// [H, W, 3]), quantised as perf-serve's media digest quantises it; sha256, when given,
// must be that of the array's bytes, as the observation states it.
func npyImagePNG(b []byte, sha string) ([]byte, error) {
	a, err := readNPY(b)
	if err != nil {
		return nil, err
	}
	if sha != "" {
		sum := sha256.Sum256(a.raw)
		if got := hex.EncodeToString(sum[:]); got != sha {
			return nil, fmt.Errorf("the array's sha256 is %s, the observation says %s", got, sha)
		}
	}
	shape := a.shape
	if len(shape) == 4 && shape[0] == 1 {
		shape = shape[1:]
	}
	if len(shape) != 3 || shape[2] != 3 || shape[0] == 0 || shape[1] == 0 {
		return nil, fmt.Errorf("the output array's shape is %v, not [1, H, W, 3]", a.shape)
	}
	h, w := shape[0], shape[1]
	low := float32(0)
	for _, v := range a.data {
		if v < -0.01 {
			low = -1
			break
		}
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range h * w {
		for c := range 3 {
			v := min(max(a.data[3*i+c], low), 1)
			q := float32(float32(float32(v-low)/float32(1-low))*255) + 0.5
			img.Pix[4*i+c] = uint8(min(max(q, 0), 255))
		}
		img.Pix[4*i+3] = 0xff
	}
	var out bytes.Buffer
	enc := stdpng.Encoder{CompressionLevel: stdpng.BestSpeed}
	if err := enc.Encode(&out, img); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
