package qual

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	qwenimage "qualkit/families/qwen_image"
	"qualkit/internal/harness"
)

// TestPartialSelectionsFailAtOnce runs this test binary again with -run selecting one
// stage of the reference row, and every prefix of its stages, and -skip leaving one
// out: each must fail at once (nothing built, served or benchmarked), without a panic,
// say how to select the row whole, and leave no run folder that could read qualified.
func TestPartialSelectionsFailAtOnce(t *testing.T) {
	const row = "^TestRefEdit$/^refedit-v1$/"
	stages := harness.StageNames()
	type selection struct{ run, skip string }
	var cases []selection
	for _, st := range stages {
		cases = append(cases, selection{run: row + "^" + st + "$"})
	}
	for i := 1; i < len(stages); i++ {
		cases = append(cases, selection{run: row + "^(" + strings.Join(stages[:i], "|") + ")$"})
	}
	cases = append(cases, selection{run: "^TestRefEdit$", skip: row + "^report$"},
		selection{run: row + "^no-such-stage$"})
	for _, c := range cases {
		t.Run(strings.TrimPrefix(c.run+" -skip "+c.skip, row), func(t *testing.T) {
			t.Parallel()
			evidence := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			args := []string{"-test.run", c.run, "-test.v", "-test.count=1", "-qualkit.evidence", evidence,
				"-qualkit.gpuread", baseConfig.GPURead, "-qualkit.runtime", baseConfig.Runtime}
			if c.skip != "" {
				args = append(args, "-test.skip", c.skip)
			}
			start := time.Now()
			out, err := exec.CommandContext(ctx, os.Args[0], args...).CombinedOutput()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "the partial selection must fail: %v\n%s", err, out)
			assert.Equal(t, 1, ee.ExitCode(), "%s", out)
			text := string(out)
			assert.Contains(t, text, "a row runs whole or proves nothing, so it did not start")
			assert.Contains(t, text, "Run it whole with: go test ./qual/ -count=1 -v -run '^TestRefEdit$/^refedit-v1$'")
			assert.NotContains(t, text, "panic")
			assert.NotContains(t, text, "qualified")
			entries, err := os.ReadDir(evidence)
			require.NoError(t, err)
			assert.Empty(t, entries, "no run folder: the row never started")
			assert.Less(t, time.Since(start), time.Minute, "fails at once")
		})
	}
}

// The headline `go test ./qual/... -run Qwen` runs the tables that qualify
// Qwen-Image-Edit-2511 itself, and nothing else: a contract-double, smoke or conformance
// test whose name said Qwen would be selected too, and on a GPU host (whose engine never
// built the double's image) fail or hold up the run the user asked for. The list comes
// from go test's own matcher (-test.list), the tables from their rows.
func TestHeadlineRunSelectsTheCheckpointTables(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), os.Args[0], "-test.list", "Qwen").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var listed, want []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") {
			listed = append(listed, line)
		}
	}
	for _, tb := range tables() {
		if slices.ContainsFunc(tb.rows, func(c harness.Checkpoint) bool { return c.Model == qwenimage.HFID && !c.Double && !c.Smoke }) {
			want = append(want, tb.name())
		}
	}
	require.NotEmpty(t, want, "no table qualifies %s", qwenimage.HFID)
	assert.Equal(t, want, listed, "-run Qwen must select exactly the tables that qualify %s: name other tests without \"Qwen\"", qwenimage.HFID)
}
