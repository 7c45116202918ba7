package qual

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file's name sorts after tables_test.go on purpose: go test runs a package's tests
// in file order, and TestTRTMCDoubleRanTheRealTools reads what TestTRTMCDouble's rows wrote.

// TestTRTMCDoubleRanTheRealTools holds the evidence TestTRTMCDouble's rows wrote (it runs
// after them, in the same go test run) to what the double claims to run for real: pytest
// at TRTMC's pin ran the correctness case; CMake from PyPI configured the native build;
// pytest's own --basetemp made the _qcurrent link beside _q0, so the bundle pattern
// matched twice and the row took the one real folder (D1); and TRTMC's own
// trtmc_perf_serving served the row named for it, through the recorder, while the
// double's replay of it served the other (the shim's start line is TRTMC's code's, never
// the replay's).
func TestTRTMCDoubleRanTheRealTools(t *testing.T) {
	rowDir := func(name string) string {
		dir := filepath.Join(suite.Evidence.Dir, name)
		if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
			t.Fatalf("no evidence of row %s in %s: this test reads what TestTRTMCDouble wrote, so run both (go test -run '^TestTRTMCDouble(RanTheRealTools)?$')", name, suite.Evidence.Dir)
		}
		return dir
	}
	read := func(dir, rel string) string {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		return string(b)
	}
	for _, c := range qwenDoubleRows {
		t.Run(c.Name, func(t *testing.T) {
			dir := rowDir(c.Name)
			assert.Contains(t, read(dir, "correctness/output.log"), "pytest-"+pytestPin+",", "the case ran under real pytest at TRTMC's pin")

			tools, err := filepath.Glob(filepath.Join(dir, "build", "tools-*.log"))
			require.NoError(t, err)
			var log strings.Builder
			for _, f := range tools {
				log.WriteString(read(dir, filepath.Join("build", filepath.Base(f))))
			}
			assert.Regexp(t, `configured by CMake \d+\.\d+\.\d+ \(\S*/cmake/data/bin/cmake\)`, log.String(), "PyPI's cmake configured the native build")

			var bundle struct {
				Path    string `json:"path"`
				Matched []struct{ Path, Resolved string }
			}
			require.NoError(t, json.Unmarshal([]byte(read(dir, "build/bundle.json")), &bundle))
			require.Len(t, bundle.Matched, 2, "pytest's basetemp holds _q0 and its _qcurrent link: the pattern matches both")
			for _, m := range bundle.Matched {
				assert.Equal(t, bundle.Path, m.Resolved, "both matches are the one real folder the row served")
			}
			assert.True(t, slices.ContainsFunc(bundle.Matched, func(m struct{ Path, Resolved string }) bool {
				return strings.Contains(m.Path, "test_official_checkpoint_e2e_qcurrent/")
			}), "one match is pytest's _qcurrent link")

			shim := "qualkit shim (not TRTMC code): running TRTMC's trtmc_perf_serving.cli.main from /src/apps/perf_serving/trtmc_perf_serving/cli.py"
			server := read(dir, "serve/server.log")
			switch c.Name {
			case "qwen-double-trtmc-perf-serve":
				assert.Contains(t, server, shim, "TRTMC's own perf-serve served this row")
				assert.Contains(t, server, "perf-serve recorder (qualkit): TRTMC's perf-serve on", "through the recorder")
				assert.NotContains(t, server, "qualkit contract double, replay")
			case "qwen-double-perf-serve":
				// Its /v1/serving/info is TRTMC's, as recorded: only its start line says which
				// server answered.
				assert.Contains(t, server, "trtmc-perf-serve (qualkit contract double, replay of TRTMC's perf-serve", "the replay served this row")
				assert.NotContains(t, server, "trtmc_perf_serving.cli.main")
			}
		})
	}
}
