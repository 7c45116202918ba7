//go:build trtmcdata

package qwenimage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TRTMC main e9132e79's real data (QUALKIT_TRTMC_DATA, e.g. shared/trtmc-main-e9132e79,
// a data-only copy) meets the adapter's checks as the shaped tree does. Built only with
// -tags trtmcdata (`make test TRTMC=DIR`); then the data is required, never skipped.
func TestRequirementsOnTheRealDataOnlyCheckout(t *testing.T) {
	data := os.Getenv("QUALKIT_TRTMC_DATA")
	require.NotEmpty(t, data, "built with -tags trtmcdata: set QUALKIT_TRTMC_DATA (make test TRTMC=DIR)")
	dir, err := filepath.Abs(data)
	require.NoError(t, err)
	_, err = os.Stat(dir)
	require.NoError(t, err)
	requireDataOnly(t, dir)
}
