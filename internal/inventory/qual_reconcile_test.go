package inventory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// shapedCheckout is a TRTMC-shaped tree of the e9132e79 layout that qualkit writes
// itself (schema facts only); the real data is read by the trtmcdata-tagged tests. The
// real tables reconcile with it in qual (TestTablesReconcileWithTheInventory).
const shapedCheckout = "../trtmc/testdata/e9132e79"

func TestReconcileExemptsSmokeRows(t *testing.T) {
	profiles := []Profile{{Profile: "edit-a", Class: Full}}
	rows := []QualRow{{Name: "a", Family: "f", Profile: "edit-a"}, {Name: "a-smoke", Family: "f", Profile: "edit-a-smoke", Smoke: true}}
	require.NoError(t, Reconcile(profiles, rows, ReferenceFamily))
	rows[1].Smoke = false
	require.ErrorContains(t, Reconcile(profiles, rows, ReferenceFamily), `names profile "edit-a-smoke", which is not in the inventory`)
}
