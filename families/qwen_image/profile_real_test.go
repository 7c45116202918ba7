//go:build trtmcperfserve

package qwenimage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/family"
)

// The perf-serve reference row passes only flags TRTMC's own cli.py @ 3878755c defines
// (its serve subcommand's add_argument lines, in the snapshot).
func TestPerfServeReferenceFlagsAreTRTMCs(t *testing.T) {
	snap := os.Getenv("QUALKIT_TRTMC_PERF_SERVE")
	require.NotEmpty(t, snap, "built with -tags trtmcperfserve: set QUALKIT_TRTMC_PERF_SERVE (make test TRTMC_PERF_SERVE=DIR)")
	a := PerfServeReference{Checkout: snap}
	cli, err := os.ReadFile(filepath.Join(a.root(), "apps/perf_serving/trtmc_perf_serving/cli.py"))
	require.NoError(t, err)
	for _, f := range serveFlags(PerfServeReferenceArgs(family.ServeSpec{}, "fp32")) {
		assert.Contains(t, string(cli), `add_argument("`+f+`"`, "cli.py defines %s", f)
	}
}
