package qual

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/families/refedit"
	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
	"qualkit/internal/merged"
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
			var s *harness.Suite
			if !serial {
				// After the suite's own cleanup (Finish): the forgeries need the whole run,
				// and before the temp folders' removal (registered first, so run last).
				t.TempDir()
				t.Cleanup(func() { orderForgeriesFail(t, s.Evidence.Dir, row.Name) })
			}
			s = isolatedSuite(t, "order-"+name, false, func(c *harness.SuiteConfig) { c.Serial = serial })
			res, _ := s.Run(t.Context(), row, t.TempDir(), harness.Reproduce(t.Name()))
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
				assert.True(t, tb.Overlap.ServerEarly, tb.Overlap.ServerWhy)
				assert.Positive(t, tb.Overlap.ServerAheadS)
				assert.True(t, tb.Overlap.AIPerfEarly, tb.Overlap.AIPerfWhy)
				assert.True(t, tb.Overlap.NativePreload, tb.Overlap.NativeWhy)
				assert.Positive(t, tb.Overlap.NativeAheadS)
				// The build begins during preflight; which of its commands start before the
				// build stage depends on how long preflight's checks take.
				var buildEarly bool
				for log, stage := range during {
					if strings.HasPrefix(log, "build/") {
						assert.Equal(t, schema.StagePreflight, stage, log)
						buildEarly = true
						delete(during, log)
					}
				}
				assert.Equal(t, buildEarly, tb.Overlap.BuildEarly, tb.Overlap.BuildWhy)
				assert.Contains(t, tb.Overlap.BuildWhy, "the build started beside preflight's slow checks")
				assert.Equal(t, map[string]string{"serve/server.log": schema.StageCorrectness, "aiperf/aiperf.log": schema.StageServe, "identity/native-batch.log": schema.StageServe}, during)
				assert.Less(t, tb.CriticalPathS, tb.ModelWorkS, "the server's load beside the case and the preloaded native load are off the critical path")
				assert.InDelta(t, schema.CriticalPath(tb.Model, true, true), tb.CriticalPathS, 0.002)
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

// orderForgeriesFail: each forgery of the overlapped order in a copy of the run, its
// checksums recomputed, fails the checker on the claim it touched.
func orderForgeriesFail(t *testing.T, run, row string) {
	if t.Failed() {
		return // the honest run failed: nothing to forge
	}
	if err := evidencecheck.Check(run, ""); err != nil {
		t.Errorf("the honest run does not check out: %v", err)
		return
	}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, row string)
		want string
	}{
		{"the build's early start dropped from its records", func(t *testing.T, row string) {
			editCommands(t, row, func(rec *schema.CommandRecord) {
				if rec.Stage == schema.StageBuild {
					rec.During = schema.StagePreflight
				}
			})
			editResult(t, row, func(res *schema.Result) { res.TimeBudget.Overlap.BuildEarly = false })
		}, "time_budget.overlap.build_early: evidence says true"},
		{"the early server hidden", func(t *testing.T, row string) {
			editResult(t, row, func(res *schema.Result) { res.TimeBudget.Overlap.ServerEarly = false })
		}, "time_budget.overlap.server_early: evidence says true"},
		{"the server's head start stretched", func(t *testing.T, row string) {
			editResult(t, row, func(res *schema.Result) { res.TimeBudget.Overlap.ServerAheadS += 5 })
		}, "time_budget.overlap.server_ahead_s: evidence says"},
		{"the critical path cut below the longer of case and load", func(t *testing.T, row string) {
			editResult(t, row, func(res *schema.Result) {
				m := res.TimeBudget.Model
				res.TimeBudget.CriticalPathS -= min(m.CorrectnessS, m.ServerLoadS) + 0.5
			})
		}, "time_budget.critical_path_s: evidence says"},
		{"the server said to have started before the case", func(t *testing.T, row string) {
			var corr time.Time
			editResult(t, row, func(res *schema.Result) {
				st, _ := res.Stage(schema.StageCorrectness)
				corr = st.Start
			})
			editCommands(t, row, func(rec *schema.CommandRecord) {
				if rec.Log == "serve/server.log" {
					rec.Start = corr.Add(-2 * time.Second)
				}
			})
		}, "start: evidence says within stage correctness"},
		{"the server's early start dropped from its record", func(t *testing.T, row string) {
			editCommands(t, row, func(rec *schema.CommandRecord) {
				if rec.Log == "serve/server.log" {
					rec.During = ""
				}
			})
		}, "time_budget.overlap.server_early: evidence says false"},
	} {
		func() { // in a cleanup: no subtests
			dir := filepath.Join(t.TempDir(), filepath.Base(run))
			require.NoError(t, os.CopyFS(dir, os.DirFS(run)))
			require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil {
					err = os.Chmod(p, 0o755)
				}
				return err
			}))
			tc.edit(t, filepath.Join(dir, row))
			require.NoError(t, merged.WriteSums(filepath.Join(dir, row)))
			require.NoError(t, merged.WriteSums(dir))
			err := evidencecheck.Check(dir, "")
			if assert.Error(t, err, "forged: %s", tc.name) {
				assert.Contains(t, err.Error(), tc.want, "forged: %s", tc.name)
			}
			require.NoError(t, os.RemoveAll(dir))
		}()
	}
}

// editResult rewrites a row's results.json through edit.
func editResult(t *testing.T, row string, edit func(*schema.Result)) {
	t.Helper()
	p := filepath.Join(row, "results.json")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var res schema.Result
	require.NoError(t, json.Unmarshal(b, &res))
	edit(&res)
	b, err = json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, b, 0o644))
}

// editCommands rewrites each record of a row's commands.jsonl through edit.
func editCommands(t *testing.T, row string, edit func(*schema.CommandRecord)) {
	t.Helper()
	p := filepath.Join(row, "commands.jsonl")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var out []byte
	for line := range strings.Lines(string(b)) {
		var rec schema.CommandRecord
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		edit(&rec)
		l, err := json.Marshal(rec)
		require.NoError(t, err)
		out = append(append(out, l...), '\n')
	}
	require.NoError(t, os.WriteFile(p, out, 0o644))
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
