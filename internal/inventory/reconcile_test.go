package inventory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReconcile(t *testing.T) {
	profiles := []Profile{
		{Profile: "edit-a", HFID: "Acme/A", Class: Full},
		{Profile: "edit-b", HFID: "Acme/B", Class: Full},
		{Profile: "edit-a-l0", Class: Partial},
		{Profile: "edit-a-fp8", Class: Variant, VariantOf: "edit-a"},
		{Profile: "t2i", Class: OutOfGroup},
	}
	row := func(name, family, profile string) QualRow {
		return QualRow{Test: "TestX", Name: name, Family: family, Profile: profile}
	}
	tests := []struct {
		name string
		rows []QualRow
		want []string // substrings of the error; none means it reconciles
	}{
		{"one row per full profile", []QualRow{row("a", "trtmc", "edit-a"), row("b", "trtmc", "edit-b")}, nil},
		{"rows for partial and variant profiles are allowed",
			[]QualRow{row("a", "trtmc", "edit-a"), row("b", "trtmc", "edit-b"), row("a-smoke", "trtmc", "edit-a-l0"), row("a8", "trtmc", "edit-a-fp8")}, nil},
		{"the reference family needs no inventory entry",
			[]QualRow{row("a", "trtmc", "edit-a"), row("b", "trtmc", "edit-b"), row("ref", "refedit", "refedit-default")}, nil},
		{"a full profile without a row", []QualRow{row("a", "trtmc", "edit-a")},
			[]string{`full profile "edit-b" (Acme/B) has no qual row`, `Profile: "edit-b"`}},
		{"a full profile with two rows", []QualRow{row("a", "trtmc", "edit-a"), row("a2", "trtmc", "edit-a"), row("b", "trtmc", "edit-b")},
			[]string{`full profile "edit-a" has 2 qual rows, want 1: TestX/a, TestX/a2`}},
		{"a row for an unknown profile", []QualRow{row("a", "trtmc", "edit-a"), row("b", "trtmc", "edit-b"), row("x", "trtmc", "edit-x")},
			[]string{`names profile "edit-x", which is not in the inventory`, `family "trtmc" is not the reference family "refedit"`}},
		{"no rows at all: every problem at once", nil,
			[]string{`"edit-a" (Acme/A) has no qual row`, `"edit-b" (Acme/B) has no qual row`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Reconcile(profiles, tt.rows, ReferenceFamily)
			if len(tt.want) == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, s := range tt.want {
				assert.ErrorContains(t, err, s)
			}
		})
	}
}

// The shaped checkout against a qual table without the Qwen row: the check must say
// exactly which row is missing.
func TestReconcileWithoutAQwenRow(t *testing.T) {
	inv, err := Load(shapedCheckout)
	require.NoError(t, err)
	err = Reconcile(inv.Profiles, []QualRow{{Test: "TestRefEdit", Name: "refedit", Family: ReferenceFamily, Profile: "refedit-default"}}, ReferenceFamily)
	require.Error(t, err)
	assert.EqualError(t, err, `full profile "qwen-image-edit-2511" (Qwen/Qwen-Image-Edit-2511) has no qual row: add a row with Profile: "qwen-image-edit-2511"`)
	assert.NoError(t, Reconcile(inv.Profiles, []QualRow{{Name: "qwen", Family: "trtmc", Profile: "qwen-image-edit-2511"}}, ReferenceFamily))
}
