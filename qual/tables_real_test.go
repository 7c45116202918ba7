//go:build trtmcdata

package qual

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"qualkit/internal/inventory"
)

// The tables against TRTMC's real data (QUALKIT_TRTMC_DATA, make test TRTMC=DIR): every
// full image-edit profile of main e9132e79 has exactly one row that counts.
func TestTablesReconcileWithRealTRTMC(t *testing.T) {
	dir := os.Getenv("QUALKIT_TRTMC_DATA")
	require.NotEmpty(t, dir, "built with -tags trtmcdata: set QUALKIT_TRTMC_DATA to TRTMC main e9132e79's data (make test TRTMC=DIR)")
	inv, err := inventory.Load(dir)
	require.NoError(t, err)
	require.NoError(t, inventory.Reconcile(inv.Profiles, qualRows(), inventory.ReferenceFamily))
}
