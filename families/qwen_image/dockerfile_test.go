package qwenimage

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docker/Dockerfile.reference gives TRTMC's dev image what the probes require of it, so
// that an image built by its recipe passes them: every module of the HF reference and
// of perf-serve's serving imports (its last RUN imports them all), torchvision built for
// the torch it installs, and the checkout's apps/perf_serving/requirements.txt, copied
// from the build context its header names.
func TestDockerfileReferenceInstallsWhatTheProbesNeed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docker", "Dockerfile.reference"))
	require.NoError(t, err)
	df := string(b)

	m := regexp.MustCompile(`python -c "import ([^;"]+);`).FindStringSubmatch(df)
	require.NotNil(t, m, "the Dockerfile ends with an import check")
	imported := strings.Split(strings.ReplaceAll(m[1], " ", ""), ",")
	need := slices.Clone(hfModules)
	for _, mod := range serverImportModules[ServingPerfServe] {
		if !strings.HasPrefix(mod, "trtmc_perf_serving") { // the checkout's own, on PYTHONPATH
			need = append(need, mod)
		}
	}
	for _, mod := range need {
		assert.Contains(t, imported, mod, "a module the probes require that the image recipe neither installs nor checks")
	}

	// torchvision 0.27.0's wheel requires torch==2.12.0 (its METADATA); both from one index.
	torchvisionFor := map[string]string{"2.12.0": "0.27.0"}
	torch := regexp.MustCompile(`"torch==([0-9.]+)\+(cu[0-9]+)"`).FindStringSubmatch(df)
	require.NotNil(t, torch, "a CUDA torch")
	assert.Contains(t, df, `"torchvision==`+torchvisionFor[torch[1]]+"+"+torch[2]+`"`, "torchvision built for torch %s", torch[1])

	// perf-serve's requirements, from the checkout's apps/perf_serving as the context.
	assert.Contains(t, df, "COPY requirements.txt /tmp/trtmc-perf-serving-requirements.txt")
	assert.Contains(t, df, "--requirement /tmp/trtmc-perf-serving-requirements.txt")
	// The header's recipe is the README example's one command, which builds it with the
	// checkout's apps/perf_serving as the context (scripts/recipes/qwen-example-*.txtar).
	assert.Contains(t, df, "#   make trtmc-image", "the header's recipe")
	assert.Contains(t, serverFix[ServingPerfServe], "`make trtmc-image`", "the probes' fix is the header's recipe")
	assert.Contains(t, imageFix, "`make trtmc-image`", "the probes' fix is the header's recipe")
	assert.NotRegexp(t, `(?m)^ENTRYPOINT`, df, "the NVIDIA base's entrypoint stays")
}
