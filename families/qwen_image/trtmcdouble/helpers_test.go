package trtmcdouble

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is qualkit's repository root, from this package's directory.
const repoRoot = "../../.."

// fakeSelf is what the tests' "own executable" holds.
const fakeSelf = "#!qualkit-test: stands for the trtmcdouble binary\n"

// result is one in-process run of a program.
type result struct {
	code           int
	stdout, stderr string
}

// runner runs programs of the double in-process.
type runner struct {
	t     *testing.T
	ctx   context.Context
	wd    string
	self  string
	env   map[string]string
	stdin io.Reader
	// execs records the calls of the proc's exec hook (what syscall.Exec would have
	// replaced the process with); each call returns errExecRecorded.
	execs *[]execCall
}

// execCall is one call of a proc's exec hook.
type execCall struct {
	path      string
	argv, env []string
}

// errExecRecorded is what the tests' exec hook returns: the process was not replaced.
var errExecRecorded = errors.New("qualkit test: exec recorded, not run")

func newRunner(t *testing.T, wd string) *runner {
	t.Helper()
	self := filepath.Join(t.TempDir(), "trtmcdouble")
	require.NoError(t, os.WriteFile(self, []byte(fakeSelf), 0o755))
	return &runner{t: t, ctx: context.Background(), wd: wd, self: self, env: map[string]string{}, execs: &[]execCall{}}
}

func (r *runner) with(kv ...string) *runner {
	c := *r
	c.env = map[string]string{}
	for k, v := range r.env {
		c.env[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c.env[kv[i]] = kv[i+1]
	}
	return &c
}

func (r *runner) run(args ...string) result {
	var out, errb bytes.Buffer
	stdin := r.stdin
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	execs := r.execs
	hook := func(path string, argv, env []string) error {
		*execs = append(*execs, execCall{path: path, argv: append([]string(nil), argv...), env: append([]string(nil), env...)})
		return errExecRecorded
	}
	code := dispatch(&proc{ctx: r.ctx, args: args, env: r.env, stdin: stdin, stdout: &out, stderr: &errb, wd: r.wd, self: r.self, exec: hook})
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// shapedCheckout copies the shaped tree of layout into a temporary directory (what
// Checkout does, without building the binary or committing).
func shapedCheckout(t *testing.T, layout string) string {
	t.Helper()
	dir := t.TempDir()
	tree := map[string]string{LayoutFamilies: familiesTree, LayoutLegacy: legacyTree}[layout]
	require.NotEmpty(t, tree, layout)
	require.NoError(t, copyTree(filepath.Join(repoRoot, tree), dir))
	return dir
}

// testPhoto is the shaped trees' 640x382 JPEG.
func testPhoto(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, legacyTree, legacyModelDir, "data/test_img.jpeg"))
	require.NoError(t, err)
	return b
}

func fixtureImage(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "fixtures/images", name))
	require.NoError(t, err)
	return b
}

// adapterSpec is the bundle qualkit's adapter builds: 1024x1024, 20 steps, bf16, the
// photo as condition image.
func adapterSpec(t *testing.T) BundleSpec {
	return BundleSpec{Precision: "bf16", MaxCacheLength: 256, ImageWidth: 1024, ImageHeight: 1024,
		NumInferenceSteps: 20, Revision: Revision, Condition: testPhoto(t)}
}

func writeTestBundle(t *testing.T, path string, spec BundleSpec) BundleHeader {
	t.Helper()
	h, err := NewBundleHeader(spec)
	require.NoError(t, err)
	require.NoError(t, WriteBundle(path, h))
	h, err = ReadBundle(path)
	require.NoError(t, err)
	return h
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func encodeTestPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func decodeTestPNG(t *testing.T, b []byte) *image.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	return toNRGBA(img)
}

// gradient is a smooth colour ramp.
func gradient(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, color.NRGBA{uint8(255 * x / w), uint8(255 * y / h), uint8(255 * (x + y) / (w + h)), 255})
		}
	}
	return img
}

// noise is an incompressible image.
func noise(w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
		if i%4 == 3 {
			img.Pix[i] = 255
		}
	}
	return img
}

func uniform(w, h int, c color.NRGBA) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return img
}

// changedFraction is the fraction of pixels whose mean absolute RGB difference exceeds
// 8 levels.
func changedFraction(t *testing.T, a, b *image.NRGBA) float64 {
	t.Helper()
	require.Equal(t, a.Bounds(), b.Bounds())
	changed, n := 0, 0
	for i := 0; i < len(a.Pix); i += 4 {
		d := 0
		for c := range 3 {
			d += abs(int(a.Pix[i+c]) - int(b.Pix[i+c]))
		}
		if float64(d)/3 > 8 {
			changed++
		}
		n++
	}
	return float64(changed) / float64(n)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// fakeNativeBuild is the build folder the stand-in CMake build makes for layout
// (checkout/cmake/qualkit_double.cmake and the layout's CMakeLists.txt): its cache, the
// CLI as the test's own executable, the libraries and the programs.
func fakeNativeBuild(t *testing.T, src, layout string) string {
	t.Helper()
	build := filepath.Join(t.TempDir(), "opt", "qualkit", "trtmc-build")
	writeFile(t, filepath.Join(build, "CMakeCache.txt"), "CMAKE_HOME_DIRECTORY:INTERNAL="+src+
		"\nCMAKE_CUDA_ARCHITECTURES:UNINITIALIZED=90-real\nTRTMC_BUILD_TESTS:BOOL=ON\nQUALKIT_CONTRACT_DOUBLE:INTERNAL=ON\n")
	writeFile(t, filepath.Join(build, "trtmc"), fakeSelf)
	writeFile(t, filepath.Join(build, libBackendTRT), "lib")
	if layout == LayoutLegacy {
		writeFile(t, filepath.Join(build, "models", "qwen_image", libModelQwen), "lib")
	} else {
		writeFile(t, filepath.Join(build, libModelQwen), "lib")
	}
	return build
}
