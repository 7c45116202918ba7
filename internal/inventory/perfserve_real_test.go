//go:build trtmcperfserve

package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/trtmc"
)

// TRTMC's perf-serve snapshot (built only with -tags trtmcperfserve: make test
// TRTMC_PERF_SERVE=DIR) is a families-layout checkout with TRTMC's own task table: its
// edit profile is the group's one full checkpoint, its Task read from that table.
func TestPerfServeSnapshotInventory(t *testing.T) {
	snap := os.Getenv("QUALKIT_TRTMC_PERF_SERVE")
	require.NotEmpty(t, snap, "built with -tags trtmcperfserve: set QUALKIT_TRTMC_PERF_SERVE (make test TRTMC_PERF_SERVE=DIR)")
	inv, err := Load(filepath.Join(snap, "snapshot"))
	require.NoError(t, err)
	require.Len(t, inv.Group(), 1)
	p := inv.Group()[0]
	assert.Equal(t, "qwen-image-edit-2511", p.Profile)
	assert.Equal(t, Full, p.Class, p.Reason)
	assert.Contains(t, p.Reason, `task "image_edit" (manifest), an edit Task of `+trtmc.TaskTable)
	assert.Equal(t, trtmc.TaskImageEdit, p.NativeTask)
	assert.Equal(t, trtmc.OperationGenerateImage, p.Operation)
	assert.Equal(t, "data/test_img.jpeg", p.ReferenceImage)
}
