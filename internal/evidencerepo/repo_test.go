package evidencerepo

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/families/refedit"
	"qualkit/internal/schema"
)

func TestOpenOutsideAClone(t *testing.T) {
	_, err := Open(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is in no git clone")
}

func TestCommitsAndFiles(t *testing.T) {
	g, err := Open(".")
	require.NoError(t, err)
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	ok, err := g.HasCommit(strings.TrimSpace(string(head)))
	require.NoError(t, err)
	assert.True(t, ok)
	for _, c := range []string{strings.Repeat("0", 40), "HEAD", "not a commit"} {
		ok, err := g.HasCommit(c)
		require.NoError(t, err)
		assert.False(t, ok, "%q is no commit id of the clone", c)
	}
	// The committed reference run's commit: its tree and a file of it.
	const ref = "db3ecae375f4529e6c7020566ae5c2a06de8ec4c"
	paths, err := g.Paths(ref)
	require.NoError(t, err)
	assert.Contains(t, paths, "families/refedit/quality.json")
	b, err := g.File(ref, "families/refedit/quality.json")
	require.NoError(t, err)
	assert.Contains(t, string(b), `"psnr_min"`)
	_, err = g.File(ref, "no/such/file")
	assert.Error(t, err)
}

// The tables at a commit come from that commit's own qual package, built once and kept
// (here in a fresh cache, so it is built).
func TestTablesAtACommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a commit's qual package (about 20 s)")
	}
	g, err := Open(".")
	require.NoError(t, err)
	g.Cache = t.TempDir()
	const ref = "db3ecae375f4529e6c7020566ae5c2a06de8ec4c" // the committed reference run's
	rows, err := g.Tables(ref)
	require.NoError(t, err)
	assert.Contains(t, rows, schema.TableRow{Test: "TestRefEdit", Row: "refedit-v1", Family: "refedit", Backend: "refedit",
		Model: "qualkit/refedit-v1", Profile: "refedit-v1", Measured: 5, Warmup: 1})
	assert.Contains(t, rows, schema.TableRow{Test: "TestReferenceSmoke", Row: "reference-smoke", Family: "qwen_image", Backend: "diffusers",
		Model: "Qwen/Qwen-Image-Edit-2511", Profile: "qwen-image-edit-2511-reference-smoke", Smoke: true, Measured: 5, Warmup: 1})
	again, err := g.Tables(ref)
	require.NoError(t, err)
	assert.Equal(t, rows, again, "read back from the cache")

	_, err = g.Tables("HEAD")
	assert.ErrorContains(t, err, `"HEAD" is no commit id`)

	// The shim builds at the newest commit too: a change to how tables or families read
	// (the family contract) must keep it compiling, or every run's table check fails.
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	rows, err = g.Tables(strings.TrimSpace(string(head)))
	require.NoError(t, err, "the tables at HEAD")
	// Each row's controls hash as the checker hashes controls.json's "declared": the GPU
	// smoke row's too, whose declaration names the precision its run records (fp32).
	declared := func(c *schema.Controls) string {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		sum, err := schema.DeclaredSHA256(b)
		require.NoError(t, err)
		return sum
	}
	assert.Contains(t, rows, schema.TableRow{Test: "TestRefEdit", Row: "refedit-v1", Family: "refedit", Backend: "refedit",
		Model: "qualkit/refedit-v1", Profile: "refedit-v1", Measured: 5, Warmup: 1, Controls: declared(refedit.Controls())})
	assert.Contains(t, rows, schema.TableRow{Test: "TestReferenceSmoke", Row: "reference-smoke", Family: "qwen_image", Backend: "diffusers",
		Model: "Qwen/Qwen-Image-Edit-2511", Profile: "qwen-image-edit-2511-reference-smoke", Smoke: true, Measured: 5, Warmup: 1,
		Controls: declared(qwenimage.DiffusersControls("fp32"))})
	// The double's rows read their serving contract, and so their controls, from a
	// checkout the export does not see: not held.
	for _, r := range rows {
		if r.Test == "TestTRTMCDouble" {
			assert.Empty(t, r.Controls, r.Row)
		}
	}
}

// The tables are kept per commit and per the QUALKIT_* variables they were exported in:
// a table may add a row only when a variable is set.
func TestTablesAreKeptPerEnvironment(t *testing.T) {
	assert.Empty(t, envKey([]string{"HOME=/root", "PATH=/bin"}))
	a := envKey([]string{"PATH=/bin", "QUALKIT_TRTMC_PERF_SERVE=/x"})
	assert.Regexp(t, `^-[0-9a-f]{12}$`, a)
	assert.Equal(t, a, envKey([]string{"QUALKIT_TRTMC_PERF_SERVE=/x", "HOME=/y"}), "other variables do not count")
	assert.NotEqual(t, a, envKey([]string{"QUALKIT_TRTMC_PERF_SERVE=/z"}))
	assert.Empty(t, envKey([]string{exportEnv + "=/tmp/rows.json"}), "the export's own variable does not count")
}
