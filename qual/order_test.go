package qual

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// The reference row in both orders (issue 28): -qualkit.serial starts AIPerf once the
// server is ready and the native batch at identity; the default overlapped order starts
// both with the serve stage. The gates and the PNGs are the same; the time budget states
// the order, and each run's evidence checks (Finish, at cleanup).
func TestSerialAndOverlappedOrders(t *testing.T) {
	t.Parallel() // its own suite, run folder and marker (main_test.go: parallel tests)
	pngs := map[string][]string{}
	for _, serial := range []bool{true, false} {
		name := map[bool]string{true: "serial", false: "overlapped"}[serial]
		t.Run(name, func(t *testing.T) {
			row := controlRow("refedit-v1", "the reference row, "+name, func(*harness.Checkpoint, *refedit.Faulty) {})
			s := isolatedSuite(t, "order-"+name, false, func(c *harness.SuiteConfig) { c.Serial = serial })
			res, _ := s.Run(t.Context(), row, t.TempDir())
			require.NotNil(t, res)
			for _, st := range res.Stages {
				require.Equal(t, schema.Pass, st.Status, "stage %s: %s", st.Name, st.Error)
			}
			tb := res.TimeBudget
			require.NotNil(t, tb)
			during := commandsDuring(t, filepath.Join(s.Evidence.Dir, row.Name, "commands.jsonl"))
			if serial {
				assert.Equal(t, schema.OrderSerial, tb.Order)
				assert.Nil(t, tb.Overlap)
				assert.Empty(t, during, "no command starts early in the serial order")
				assert.Equal(t, tb.ModelWorkS, tb.CriticalPathS)
			} else {
				assert.Equal(t, schema.OrderOverlapped, tb.Order)
				require.NotNil(t, tb.Overlap)
				assert.True(t, tb.Overlap.AIPerfEarly, tb.Overlap.AIPerfWhy)
				assert.True(t, tb.Overlap.NativePreload, tb.Overlap.NativeWhy)
				assert.Positive(t, tb.Overlap.NativeAheadS)
				assert.Equal(t, map[string]string{"aiperf/aiperf.log": schema.StageServe, "identity/native-batch.log": schema.StageServe}, during)
				assert.Less(t, tb.CriticalPathS, tb.ModelWorkS, "the preloaded native load is off the critical path")
			}
			assert.GreaterOrEqual(t, tb.WallS+0.01, tb.CriticalPathS)
			// Keyed by what was asked: AIPerf's export lists the records in the order its
			// record processor got them, which may differ between runs.
			for _, q := range res.Identity.Requests {
				pngs[name] = append(pngs[name], strings.Join([]string{q.Phase, q.Prompt, q.InputSHA256, q.HTTPSHA256, q.NativeSHA256}, " "))
			}
			slices.Sort(pngs[name])
			assertEvidence(t, s, row.Name, res)
		})
	}
	require.Len(t, pngs["serial"], 6)
	assert.Equal(t, pngs["serial"], pngs["overlapped"], "the same requests give the same PNGs in either order")
}

// commandsDuring maps the log of each command that started early to the stage it started in.
func commandsDuring(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec schema.CommandRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec.During != "" {
			out[rec.Log] = rec.During
		}
	}
	require.NoError(t, sc.Err())
	return out
}
