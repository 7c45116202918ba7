package qual

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"qualkit/families/refedit"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// BenchmarkRefEditRow runs the reference row through every stage on this machine (the
// real server and the real AIPerf, in the run's runtime), once with the native replays
// in one batch process and once with one process each, and reports its time budget
// (results.json time_budget) as metrics: the row's wall, the model's own work, their
// ratio, the identity stage and AIPerf's own overhead. Run it with
// `make bench` (-benchtime 1x: one row is one iteration).
func BenchmarkRefEditRow(b *testing.B) {
	for _, mode := range []struct {
		name    string
		oneShot bool
	}{{"batch", false}, {"one-shot", true}} {
		b.Run(mode.name, func(b *testing.B) {
			var tb schema.TimeBudget
			for range b.N {
				c := controlRow("refedit-v1-bench-"+mode.name, "the CPU path's benchmark",
					func(_ *harness.Checkpoint, f *refedit.Faulty) { f.OneShot = mode.oneShot })
				res, err := isolatedSuite(b, c.Name, false).Run(context.Background(), c, b.TempDir(), harness.Reproduce(b.Name()))
				require.NoError(b, err)
				require.NotNil(b, res.TimeBudget)
				tb = *res.TimeBudget
			}
			b.ReportMetric(tb.WallS, "wall-s")
			b.ReportMetric(tb.ModelWorkS, "model-work-s")
			b.ReportMetric(tb.Ratio, "wall/model-work")
			b.ReportMetric(tb.Stages[schema.StageIdentity], "identity-s")
			b.ReportMetric(tb.AIPerfS, "aiperf-overhead-s")
			b.ReportMetric(float64(tb.NativeLoads), "native-loads")
		})
	}
}
