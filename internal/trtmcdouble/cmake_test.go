package trtmcdouble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configureArgs is TRTMC's documented configure line.
func configureArgs(src, build string, extra ...string) []string {
	args := []string{"cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
		"-DCMAKE_CUDA_ARCHITECTURES=90-real", "-DTRTMC_BUILD_BACKEND_TRT=ON", "-DTRTMC_BUILD_BACKEND_RTX=OFF",
		"-DTRTMC_BUILD_TESTS=ON", "-DTRTMC_BUILD_BENCHMARKS=OFF", "-DTRTMC_ENABLE_LIBTORCH_MULTINOMIAL=OFF"}
	return append(args, extra...)
}

// configured is a checkout of layout with a configured build directory.
func configured(t *testing.T, layout string, extra ...string) (*runner, string) {
	t.Helper()
	src := shapedCheckout(t, layout)
	build := filepath.Join(t.TempDir(), "trtmc-build")
	r := newRunner(t, src)
	res := r.run(configureArgs(src, build, extra...)...)
	require.Equal(t, 0, res.code, res.stderr)
	return r, build
}

func TestCMakeConfigureWritesTheCache(t *testing.T) {
	for _, layout := range []string{LayoutFamilies, LayoutLegacy} {
		t.Run(layout, func(t *testing.T) {
			src := shapedCheckout(t, layout)
			build := filepath.Join(t.TempDir(), "opt", "qualkit", "trtmc-build")
			res := newRunner(t, src).run(configureArgs(src, build, "-DTRTMC_BUILD_EXAMPLES=ON")...)
			require.Equal(t, 0, res.code, res.stderr)
			assert.Contains(t, res.stdout, "Build files have been written to: "+build)
			b, err := os.ReadFile(filepath.Join(build, "CMakeCache.txt"))
			require.NoError(t, err)
			lines := strings.Split(string(b), "\n")
			for _, want := range []string{
				"CMAKE_BUILD_TYPE:STRING=Release", "CMAKE_CUDA_ARCHITECTURES:STRING=90-real",
				"TRTMC_BUILD_BACKEND_TRT:BOOL=ON", "TRTMC_BUILD_BACKEND_RTX:BOOL=OFF", "TRTMC_BUILD_TESTS:BOOL=ON",
				"TRTMC_BUILD_BENCHMARKS:BOOL=OFF", "TRTMC_BUILD_EXAMPLES:BOOL=ON",
				"TRTMC_ENABLE_LIBTORCH_MULTINOMIAL:BOOL=OFF", "CMAKE_HOME_DIRECTORY:INTERNAL=" + src,
			} {
				assert.Contains(t, lines, want)
			}
			assert.Contains(t, string(b), "# Written by the qualkit contract double of cmake")
		})
	}
}

func TestCMakeConfigureAcceptsSpellings(t *testing.T) {
	src := shapedCheckout(t, LayoutLegacy)
	build := filepath.Join(t.TempDir(), "b")
	args := configureArgs(src, build)
	args = append(args[:7], append([]string{"-D", "CMAKE_BUILD_TYPE:STRING=Release"}, args[8:]...)...)
	res := newRunner(t, src).run(args...)
	require.Equal(t, 0, res.code, res.stderr)
	cache, err := readCMakeCache(build)
	require.NoError(t, err)
	assert.Equal(t, "Release", cache["CMAKE_BUILD_TYPE"])

	res = newRunner(t, src).run("cmake", "--version")
	assert.Equal(t, 0, res.code)
	assert.Contains(t, res.stdout, "qualkit contract double")
}

func TestCMakeConfigureRejects(t *testing.T) {
	src := shapedCheckout(t, LayoutFamilies)
	notCheckout := t.TempDir()
	build := filepath.Join(t.TempDir(), "b")
	replace := func(old, new string) []string {
		args := configureArgs(src, build)
		for i, a := range args {
			if a == old {
				args[i] = new
			}
		}
		return args
	}
	drop := func(flag string) []string {
		var out []string
		for _, a := range configureArgs(src, build) {
			if !strings.HasPrefix(a, flag) {
				out = append(out, a)
			}
		}
		return out
	}
	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"unknown -D":          {configureArgs(src, build, "-DTRTMC_BUILD_FOO=ON"), 2, "unknown option -DTRTMC_BUILD_FOO"},
		"RTX on":              {replace("-DTRTMC_BUILD_BACKEND_RTX=OFF", "-DTRTMC_BUILD_BACKEND_RTX=ON"), 2, "-DTRTMC_BUILD_BACKEND_RTX=ON: the double plays only OFF"},
		"Debug":               {replace("-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_BUILD_TYPE=Debug"), 2, "plays only Release"},
		"arch without -real":  {replace("-DCMAKE_CUDA_ARCHITECTURES=90-real", "-DCMAKE_CUDA_ARCHITECTURES=90"), 2, "<SM>-real"},
		"tests not ON or OFF": {replace("-DTRTMC_BUILD_TESTS=ON", "-DTRTMC_BUILD_TESTS=maybe"), 2, "ON or OFF"},
		"-D without =":        {configureArgs(src, build, "-DTRTMC_BUILD_TESTS"), 2, "is not KEY=VALUE"},
		"missing -D":          {drop("-DTRTMC_ENABLE_LIBTORCH_MULTINOMIAL"), 2, "missing: -DTRTMC_ENABLE_LIBTORCH_MULTINOMIAL"},
		"no generator":        {drop("-G")[:len(drop("-G"))], 2, "Unknown argument Ninja"},
		"make generator":      {replace("Ninja", "Unix Makefiles"), 2, `generator "Unix Makefiles"`},
		"no -B":               {[]string{"cmake", "-S", src, "-G", "Ninja"}, 2, "-S, -B and -G are all required"},
		"unknown argument":    {configureArgs(src, build, "--fresh"), 2, "Unknown argument --fresh"},
		"-S without value":    {[]string{"cmake", "-B", build, "-S"}, 2, "-S needs a value"},
		"not a checkout":      {configureArgs(notCheckout, build), 1, "is not a TRTMC checkout"},
	} {
		t.Run(name, func(t *testing.T) {
			res := newRunner(t, src).run(tc.args...)
			assert.Equal(t, tc.code, res.code)
			assert.Contains(t, res.stderr, tc.want)
			assert.NoFileExists(t, filepath.Join(build, "CMakeCache.txt"))
		})
	}
}

func TestCMakeBuildProducesTheTargets(t *testing.T) {
	for name, tc := range map[string]struct {
		layout  string
		extra   []string
		targets []string
		files   map[string]bool // path -> is a program
	}{
		"families": {LayoutFamilies, []string{"-DTRTMC_BUILD_EXAMPLES=ON"},
			[]string{"trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image", "qwen_image_e2e_harness", "trtmc_benchmark_worker"},
			map[string]bool{"trtmc": true, "libtrtmc_core.so": false, "libtrtmc_runtime.so": false, "libtrtmc_c.so": false,
				"libtrtmc_backend_trt.so": false, "libtrtmc_model_qwen_image.so": false,
				"families/qwen_image/qwen_image_e2e_harness": true, "trtmc_benchmark_worker": true}},
		"legacy": {LayoutLegacy, []string{"-DTRTMC_BUILD_BENCHMARKS=ON"},
			[]string{"trtmc", "trtmc_backend_trt", "trtmc_model_qwen_image", "trtmc_benchmark_worker"},
			map[string]bool{"trtmc": true, "libtrtmc_backend_trt.so": false, "models/qwen_image/libtrtmc_model_qwen_image.so": false,
				"trtmc_benchmark_worker": true}},
	} {
		t.Run(name, func(t *testing.T) {
			src := shapedCheckout(t, tc.layout)
			build := filepath.Join(t.TempDir(), "b")
			args := configureArgs(src, build)
			for i, a := range args { // the extra -D replaces the default OFF
				if strings.HasPrefix(a, "-DTRTMC_BUILD_BENCHMARKS") && tc.layout == LayoutLegacy {
					args[i] = tc.extra[0]
				}
			}
			if tc.layout == LayoutFamilies {
				args = append(args, tc.extra...)
			}
			r := newRunner(t, src)
			require.Equal(t, 0, r.run(args...).code)
			res := r.run(append([]string{"cmake", "--build", build, "--parallel", "--target"}, tc.targets...)...)
			require.Equal(t, 0, res.code, res.stderr)
			for path, program := range tc.files {
				b, err := os.ReadFile(filepath.Join(build, path))
				require.NoError(t, err, path)
				if program {
					assert.Equal(t, fakeSelf, string(b), "%s is a copy of the double", path)
					st, err := os.Stat(filepath.Join(build, path))
					require.NoError(t, err)
					assert.NotZero(t, st.Mode().Perm()&0o111, "%s is executable", path)
				} else {
					assert.True(t, strings.HasPrefix(string(b), "qualkit contract double"), path)
				}
			}
			if tc.layout == LayoutLegacy {
				assert.NoFileExists(t, filepath.Join(build, "libtrtmc_core.so"))
			}
		})
	}
}

func TestCMakeBuildParallelForms(t *testing.T) {
	r, build := configured(t, LayoutFamilies)
	for _, args := range [][]string{
		{"cmake", "--build", build, "--target", "trtmc"},
		{"cmake", "--build", build, "--parallel", "8", "--target", "trtmc", "trtmc_backend_trt"},
		{"cmake", "--build", build, "--target", "trtmc", "--parallel"},
	} {
		res := r.run(args...)
		assert.Equal(t, 0, res.code, "%v: %s", args, res.stderr)
	}
}

func TestCMakeBuildRejects(t *testing.T) {
	rf, familiesBuild := configured(t, LayoutFamilies, "-DTRTMC_BUILD_EXAMPLES=OFF")
	rl, legacyBuild := configured(t, LayoutLegacy)
	offSrc := shapedCheckout(t, LayoutFamilies)
	testsOff := filepath.Join(t.TempDir(), "off")
	args := configureArgs(offSrc, testsOff)
	for i, a := range args {
		if a == "-DTRTMC_BUILD_TESTS=ON" {
			args[i] = "-DTRTMC_BUILD_TESTS=OFF"
		}
	}
	require.Equal(t, 0, rf.run(args...).code)

	for name, tc := range map[string]struct {
		r    *runner
		args []string
		code int
		want string
	}{
		"legacy doc's typo target": {rl, []string{"cmake", "--build", legacyBuild, "--target", "trtmc_model_qwen"}, 1, "no rule to make target 'trtmc_model_qwen'"},
		"unknown target":           {rf, []string{"cmake", "--build", familiesBuild, "--target", "trtmc", "everything"}, 1, "no rule to make target 'everything'"},
		"harness in legacy":        {rl, []string{"cmake", "--build", legacyBuild, "--target", "qwen_image_e2e_harness"}, 1, "no rule to make target 'qwen_image_e2e_harness'"},
		"harness with tests off":   {rf, []string{"cmake", "--build", testsOff, "--target", "qwen_image_e2e_harness"}, 1, "no rule to make target 'qwen_image_e2e_harness'"},
		"worker without examples":  {rf, []string{"cmake", "--build", familiesBuild, "--target", "trtmc_benchmark_worker"}, 1, "-DTRTMC_BUILD_EXAMPLES=ON"},
		"worker without benches":   {rl, []string{"cmake", "--build", legacyBuild, "--target", "trtmc_benchmark_worker"}, 1, "-DTRTMC_BUILD_BENCHMARKS=ON"},
		"no --target":              {rf, []string{"cmake", "--build", familiesBuild}, 2, "no --target"},
		"-j":                       {rf, []string{"cmake", "--build", familiesBuild, "-j", "4", "--target", "trtmc"}, 2, "Unknown argument -j"},
		"no build dir":             {rf, []string{"cmake", "--build"}, 2, "Usage: cmake --build <dir>"},
		"not configured":           {rf, []string{"cmake", "--build", t.TempDir(), "--target", "trtmc"}, 1, "could not load cache"},
	} {
		t.Run(name, func(t *testing.T) {
			res := tc.r.run(tc.args...)
			assert.Equal(t, tc.code, res.code)
			assert.Contains(t, res.stderr, tc.want)
		})
	}
	assert.NoFileExists(t, filepath.Join(familiesBuild, "trtmc"), "a failing target list builds nothing")
}
