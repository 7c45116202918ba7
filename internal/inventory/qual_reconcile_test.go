package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// shapedCheckout is a TRTMC-shaped tree of the e9132e79 layout that qualkit writes
// itself (schema facts only); the real data is read by the trtmcdata-tagged tests.
const shapedCheckout = "../trtmc/testdata/e9132e79"

// The real tables in qual/ against the shaped checkout: every full image-edit profile
// has exactly one row, and every row is in the inventory, the reference family, or smoke.
func TestQualTablesReconcileWithTRTMC(t *testing.T) {
	inv, err := Load(shapedCheckout)
	require.NoError(t, err)
	rows, err := ReadQualRows("../../qual")
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	require.NoError(t, Reconcile(inv.Profiles, rows, ReferenceFamily))
}

func TestReconcileExemptsSmokeRows(t *testing.T) {
	profiles := []Profile{{Profile: "edit-a", Class: Full}}
	rows := []QualRow{{Name: "a", Family: "f", Profile: "edit-a"}, {Name: "a-smoke", Family: "f", Profile: "edit-a-smoke", Smoke: true}}
	require.NoError(t, Reconcile(profiles, rows, ReferenceFamily))
	rows[1].Smoke = false
	require.ErrorContains(t, Reconcile(profiles, rows, ReferenceFamily), `names profile "edit-a-smoke", which is not in the inventory`)
}
