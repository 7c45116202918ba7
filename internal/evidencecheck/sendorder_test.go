package evidencecheck

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"qualkit/internal/pictures"
)

// The contact sheet's send order is AIPerf's own: each request's phase_index and
// session_num in the raw export (warmup first, then the profiling requests in turn).
func TestSheetTakesTheSendOrderFromTheRawExport(t *testing.T) {
	sheet, _, err := PictureInputs(filepath.Join(testRun(t, "qualified"), qualifiedRow))
	require.NoError(t, err)
	var got []pictures.SendOrder
	for _, e := range sheet.Edits {
		got = append(got, e.Sent)
	}
	want := []pictures.SendOrder{{Phase: 0, Index: 0}}
	for i := range 5 {
		want = append(want, pictures.SendOrder{Phase: 1, Index: i})
	}
	require.Equal(t, want, got)
}
