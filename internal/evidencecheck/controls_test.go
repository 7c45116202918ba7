package evidencecheck

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"qualkit/internal/schema"
)

// The committed run *-controls (testdata/runs.tar.zst, the only one with the stage)
// checks as it is; its controls stage is re-derived with the harness's own judge: a figure planted in
// controls.json and results.json alike (every derived file and checksum then forged to
// agree), a refusal turned into an acceptance, or a records line that states other work
// than its request asked, each fails the check naming what moved.
func TestControlsAreDerived(t *testing.T) {
	q := qualifiedRow
	require.NoError(t, Check(testRun(t, "controls"), ""))
	both := func(t *testing.T, dir string, edit func(c map[string]any)) {
		editJSON(t, filepath.Join(dir, q, schema.ControlsFile), edit)
		editJSON(t, filepath.Join(dir, q, schema.ResultsFile), func(d map[string]any) { edit(d["controls"].(map[string]any)) })
	}
	control := func(c map[string]any, field string) map[string]any {
		for _, v := range c["controls"].([]any) {
			if v := v.(map[string]any); v["field"] == field {
				return v
			}
		}
		t.Fatalf("no control %s", field)
		return nil
	}
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want []string
	}{
		{"the steps ratio planted", func(t *testing.T, dir string) {
			both(t, dir, func(c map[string]any) { control(c, "num_inference_steps")["ratio"] = 2.0 })
		}, []string{q + "/controls/controls.json: controls.controls[num_inference_steps]: evidence says", "Ratio:"}},
		{"the steps figure planted", func(t *testing.T, dir string) {
			both(t, dir, func(c map[string]any) {
				control(c, "num_inference_steps")["figure"] = "Task 100.0 ms at 50 steps, 200.0 ms at 100: ratio 2.00"
			})
		}, []string{q + "/controls/controls.json: controls.controls[num_inference_steps].figure: evidence says \"Task "}},
		{"a size the server did not serve claimed", func(t *testing.T, dir string) {
			both(t, dir, func(c map[string]any) {
				s := control(c, "size")
				s["figure"] = "asked 64x64, 48x32; got 64x64, 48x32 (planted)"
			})
		}, []string{q + "/controls/controls.json: controls.controls[size].figure"}},
		{"a refusal turned into a 200", func(t *testing.T, dir string) {
			both(t, dir, func(c map[string]any) {
				for _, p := range c["probes"].([]any) {
					if p := p.(map[string]any); p["name"] == "refused-mask" {
						p["status"] = 200.0
					}
				}
			})
		}, []string{q + "/serve/records.jsonl: request qualkit-controls-refused-mask status: evidence says 200", "controls.refused"}},
		{"a controls probe's records line states other steps", func(t *testing.T, dir string) {
			editJSONL(t, filepath.Join(dir, q, schema.RecordsFile), func(d map[string]any) {
				if d["request_id"] == "qualkit-controls-num_inference_steps-b-1" {
					d["settings"].(map[string]any)["num_inference_steps"] = 4.0
				}
			})
		}, []string{q + "/controls/controls.json: controls.work: evidence says", "asked num_inference_steps=100, the server's records say it ran 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, "controls")
			tc.edit(t, dir)
			forge(t, dir)
			failsWith(t, Check(dir, ""), tc.want...)
		})
	}
}

// A controls stage cut before its verdict lists the probes it sent (the server recorded
// them) and no verdict; a passed stage that says it was cut is a forgery.
func TestControlsCutOnAPassedStageFails(t *testing.T) {
	q := qualifiedRow
	dir := runCopy(t, "controls")
	cut := func(c map[string]any) {
		c["cut"], c["controls"], c["refused"] = true, []any{}, []any{}
	}
	editJSON(t, filepath.Join(dir, q, schema.ControlsFile), cut)
	editJSON(t, filepath.Join(dir, q, schema.ResultsFile), func(d map[string]any) { cut(d["controls"].(map[string]any)) })
	forge(t, dir)
	failsWith(t, Check(dir, ""), q+"/"+schema.ControlsFile+": cut: evidence says a controls stage that did not pass, file says a passed one")
}
