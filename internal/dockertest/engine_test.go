package dockertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The engine's processes write their temp files into its folder, which its cleanup
// removes. Its containerd dumps its stacks into its temp folder on SIGUSR1, which dockerd
// sends before it kills a containerd that is slow to stop: a loaded pair left
// /tmp/containerd.PID.stacks.log.
func TestEngineKeepsItsTempFilesInItsFolder(t *testing.T) {
	e := Start(t)
	b, err := os.ReadFile(filepath.Join(e.dir, "exec", "containerd", "containerd.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGUSR1))
	dump := fmt.Sprintf("containerd.%d.stacks.log", pid)
	assert.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(e.dir, "tmp", dump))
		return err == nil
	}, time.Minute, 50*time.Millisecond, "containerd's stack dump in the engine's folder")
	assert.NoFileExists(t, filepath.Join(os.TempDir(), dump))
}
