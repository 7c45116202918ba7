//go:build trtmcperfserve

package trtmc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TRTMC's own task table, from its perf-serve snapshot (built only with -tags
// trtmcperfserve: make test TRTMC_PERF_SERVE=DIR): both edit Tasks it maps to
// generate_image are read from it, and a Task of another operation is no edit.
func TestTasksOfTRTMCsOwnTable(t *testing.T) {
	snap := os.Getenv("QUALKIT_TRTMC_PERF_SERVE")
	require.NotEmpty(t, snap, "built with -tags trtmcperfserve: set QUALKIT_TRTMC_PERF_SERVE (make test TRTMC_PERF_SERVE=DIR)")
	dir := filepath.Join(snap, "snapshot")
	_, err := os.Stat(filepath.Join(dir, TaskTable))
	require.NoError(t, err, "the named snapshot has TRTMC's task table")
	tasks := ReadTasks(dir)
	assert.Equal(t, TaskTable, tasks.Source)
	assert.ElementsMatch(t, []string{TaskImagesTextToImageEdit, TaskImageEdit}, tasks.Edits())
	op, ok := tasks.Operation("text_generation")
	assert.True(t, ok)
	assert.Equal(t, "generate", op)
	assert.False(t, tasks.IsEdit("text_to_image"), "generate_image, but no edit")
}
