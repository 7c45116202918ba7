package evidencecheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The row's checks read only what the row loaded, so they find the same problems in
// any order: run backwards, a committed run still passes with as many claims, and each
// tampering below (a file one check reads and another's result once depended on) still
// raises the same problems.
func TestRowChecksRunInAnyOrder(t *testing.T) {
	verify := func(t *testing.T, tt tampering, order []func(*rowCheck)) ([]string, int) {
		saved := rowChecks
		rowChecks = order
		defer func() { rowChecks = saved }()
		dir := runCopy(t, tt.run)
		if tt.edit != nil {
			tt.edit(t, dir, "")
		}
		if tt.resum {
			resum(t, dir)
		}
		rep := Verify(dir, "")
		var lines []string
		for _, p := range rep.Problems {
			lines = append(lines, p.String())
		}
		slices.Sort(lines)
		return lines, rep.Claims
	}
	cases := []tampering{{name: "untouched", run: "qualified"}, {name: "untouched failed row", run: "drift"}}
	for _, tt := range tamperings {
		if !tt.junit && strings.Contains(tt.name, "checksums fixed") &&
			(strings.Contains(tt.name, "batch") || strings.Contains(tt.name, "quality") || strings.Contains(tt.name, "row.md")) {
			cases = append(cases, tt)
		}
	}
	require.Greater(t, len(cases), 5)
	backwards := slices.Clone(rowChecks)
	slices.Reverse(backwards)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			want, wantClaims := verify(t, tt, rowChecks)
			got, gotClaims := verify(t, tt, backwards)
			assert.Equal(t, want, got)
			assert.Equal(t, wantClaims, gotClaims)
		})
	}
}
