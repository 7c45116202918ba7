package evidencecheck

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"qualkit/internal/evidencerepo"
	"qualkit/internal/harness"
	"qualkit/internal/prsummary"
	"qualkit/internal/schema"
)

// forge regenerates every file of a run that qualkit derives, from its results.json and
// raw files, with qualkit's own code: each row's row.md and pictures, the run's
// SUMMARY.md, checkpoints.json, PR.md and index.html, then every SHA256SUMS. It is what a
// forger who holds our code does after an edit: only a check across two sources that
// different programs wrote can catch what is left.
func forge(t *testing.T, dir string) {
	t.Helper()
	var info schema.RunInfo
	readJSONFile(t, filepath.Join(dir, schema.RunFile), &info)
	var results []*schema.Result
	for _, row := range info.Rows {
		res := &schema.Result{}
		readJSONFile(t, filepath.Join(dir, row, schema.ResultsFile), res)
		results = append(results, res)
		writeFile(t, filepath.Join(dir, row, "row.md"), schema.RowMarkdownHeader()+harness.MarkdownRow(res))
		if err := WritePictures(filepath.Join(dir, row)); err != nil && !errors.Is(err, ErrNoRawExport) {
			require.NoError(t, err)
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Row < results[j].Row })
	writeFile(t, filepath.Join(dir, schema.SummaryFile), harness.RunSummary(info, results))
	root, err := harness.FindRoot(".")
	require.NoError(t, err)
	require.NoError(t, prsummary.Write(dir, prsummary.Options{Root: root, HTML: true}))
	resum(t, dir)
}

func readJSONFile(t *testing.T, p string, v any) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, v))
}

// Forgeries of each class the issue found, each finished by forge: every derived file
// agrees with the edit, every checksum list is recomputed. Each is caught by two raw
// sources that disagree, and the problem names both.
func TestForgeriesWithOurOwnCode(t *testing.T) {
	q := qualifiedRow
	// forge alone is faithful: the run it regenerates untouched still checks, so what
	// catches an edit below is the edit.
	untouched := runCopy(t, "qualified")
	forge(t, untouched)
	require.NoError(t, Check(untouched, ""))

	for _, tc := range []struct {
		name string
		edit func(t *testing.T, dir string)
		want []string
	}{
		{"the row relabelled as another checkpoint", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				c := d["checkpoint"].(map[string]any)
				c["model"], c["profile"] = "Qwen/Qwen-Image-Edit-2511", "qwen-image-edit-2511"
			})
		}, []string{q + "/commands.jsonl: aiperf --model: evidence says Qwen/Qwen-Image-Edit-2511 (results.json checkpoint.model), file says qualkit/refedit-v1"}},
		{"every measured request moved to start at once (images/s up)", func(t *testing.T, dir string) {
			var first float64
			editJSONL(t, filepath.Join(dir, q, schema.RawExportFile), func(d map[string]any) {
				m := d["metadata"].(map[string]any)
				if m["benchmark_phase"] != "profiling" {
					return
				}
				if first == 0 {
					first = m["request_start_ns"].(float64)
				}
				m["request_start_ns"] = first
			})
		}, []string{"after request ", "ended (concurrency 1)"}},
		{"the benchmark stage shortened, its budget recomputed", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { shortenStage(d, "benchmark", 3) })
		}, []string{q + "/results.json: stages[benchmark].wall_s: evidence says at least the span of its commands in commands.jsonl"}},
		{"the server's records say another output", func(t *testing.T, dir string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"output_sha256":"[0-9a-f]{64}"`, `"output_sha256":"`+strings.Repeat("ab", 32)+`"`)
		}, []string{q + "/serve/records.jsonl: request ", "output_sha256: evidence says ", "file says " + strings.Repeat("ab", 32)}},
		{"the correctness result names another bundle", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "correctness/artifacts/result.json"), func(d map[string]any) {
				d["bundle"].(map[string]any)["sha256_before"] = strings.Repeat("ef", 32)
			})
			fixArtifactHash(t, dir, q, "correctness/artifacts/result.json")
		}, []string{q + "/correctness/artifacts/result.json: bundle.sha256_before: evidence says 8be1439b9a1d"}},
		{"the run's dirty flag cleared in run.json alone", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["provenance"].(map[string]any)["harness_dirty"] = true })
		}, []string{q + "/results.json: provenance.harness_dirty: evidence says false (run.json), file says true"}},
		{"a row copied as a second row of the run", func(t *testing.T, dir string) {
			require.NoError(t, os.CopyFS(filepath.Join(dir, "refedit-v2"), os.DirFS(filepath.Join(dir, q))))
			editJSON(t, filepath.Join(dir, "refedit-v2", "results.json"), func(d map[string]any) {
				d["row"] = "refedit-v2"
				d["checkpoint"].(map[string]any)["name"] = "refedit-v2"
			})
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["rows"] = append(d["rows"].([]any), "refedit-v2") })
		}, []string{"a request of this row alone (AIPerf draws a fresh id per request), file says also in " + q + "/" + schema.RawExportFile}},
		{"50 steps claimed, the AIPerf command and payloads edited to match", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["settings"].(map[string]any)["num_inference_steps"] = "50"
			})
			replaceIn(t, filepath.Join(dir, q, "commands.jsonl"), `\"num_inference_steps\":4`, `\"num_inference_steps\":50`)
			replaceAllRe(t, filepath.Join(dir, q, schema.RawExportFile), `\\"num_inference_steps\\":4`, `\"num_inference_steps\":50`)
		}, []string{q + "/serve/records.jsonl: request ", "settings.num_inference_steps: evidence says 50 (results.json settings.num_inference_steps), file says 4"}},
		{"the Task times halved in the records and the results", func(t *testing.T, dir string) {
			editJSONL(t, filepath.Join(dir, q, "serve/records.jsonl"), func(d map[string]any) {
				tm := d["timing"].(map[string]any)
				tm["task_ms"] = tm["task_ms"].(float64) / 2
			})
		}, []string{q + "/serve/records.jsonl: request ", "timing.task_ms: evidence says", "(response body timing.task_ms in " + schema.RawExportFile + ")"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, "qualified")
			tc.edit(t, dir)
			forge(t, dir)
			failsWith(t, Check(dir, ""), tc.want...)
		})
	}
	for _, tc := range forgeries {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dir string
			if tc.src == "" {
				dir = runCopy(t, "qualified")
			} else {
				dir = committedCopy(t, tc.src)
			}
			tc.edit(t, dir)
			forge(t, dir)
			opts := Options{}
			if tc.repo {
				opts.Repo = thisRepo(t)
			}
			failsWith(t, VerifyWith(dir, opts).Err(), tc.want...)
		})
	}
}

// forgery is one forgery of TestForgeriesWithOurOwnCode: edit makes it in a copy of the
// run src, forge finishes it, and the check fails with each of want.
type forgery struct {
	name string
	edit func(t *testing.T, dir string)
	want []string
	// src is the run forged: "" the committed qualified run, else a run of
	// docs/evidence/runs.tar.zst.
	src string
	// repo checks the forgery inside this clone (the repository its commit is in).
	repo bool
}

// The forgeries of issue 38's classes, each caught by the disagreement want names.
var forgeries = []forgery{
	// Held to the commit (the check run inside the repository, evidencerepo).
	{name: "a harness commit that does not exist", repo: true, edit: func(t *testing.T, dir string) {
		setCommit(t, dir, strings.Repeat("0123456789", 4))
	}, want: []string{"run.json: harness_commit: evidence says a commit of this repository (git cat-file -e), file says 0123456789012345678901234567890123456789: no such commit"}},
	{name: "the correctness gate loosened (psnr min 55 -> 5), the dirty run flipped to qualified", repo: true, edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, "correctness/artifacts/result.json"), func(d map[string]any) {
			th := d["thresholds"].(map[string]any)
			th["gates"].(map[string]any)["gates"].(map[string]any)["psnr_db"].(map[string]any)["min"] = 5.0
			b, err := json.MarshalIndent(th["gates"], "", "  ") // the loosened file, as the case hashed it
			require.NoError(t, err)
			th["sha256"] = bytesSHA256(b)
		})
		fixArtifactHash(t, dir, qualifiedRow, "correctness/artifacts/result.json")
		setDirty(t, dir, false)
	}, want: []string{qualifiedRow + "/correctness/artifacts/result.json: thresholds.sha256: evidence says 6059006deb4d89cd2f1b5e468ac6fdae9dea5d9a62270d108fd243a0fa77e3e0 (families/refedit/correctness/thresholds.json at commit ce54dca7c5fd)"}},
	// The case's kept metrics judged again against the gates at the run's commit (issue 45):
	// a metric rewritten to what a failing program measures, its verdict left passing.
	{name: "a correctness metric rewritten below its gate (psnr identical -> 40 dB), the verdict kept", repo: true, edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, "correctness/artifacts/result.json"), func(d map[string]any) {
			caseMetrics(t, d, "sepia")["psnr_db"] = 40.0
		})
		fixArtifactHash(t, dir, qualifiedRow, "correctness/artifacts/result.json")
	}, want: []string{qualifiedRow + "/correctness/artifacts/result.json: the case's metrics against families/refedit/correctness/thresholds.json: evidence says every gate met (the file at commit ce54dca7c5fd; stage correctness passed), file says case sepia (sepia): psnr_db=40 < min 55"}},
	// ... or judged with a loosened gate that records the committed gate file's sha256.
	{name: "the correctness gate loosened (psnr min 55 -> 30), the committed sha256 recorded", repo: true, edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, "correctness/artifacts/result.json"), func(d map[string]any) {
			th := d["thresholds"].(map[string]any)
			th["gates"].(map[string]any)["gates"].(map[string]any)["psnr_db"].(map[string]any)["min"] = 30.0
			caseMetrics(t, d, "sepia")["psnr_db"] = 40.0
		})
		fixArtifactHash(t, dir, qualifiedRow, "correctness/artifacts/result.json")
	}, want: []string{"file says case sepia (sepia): psnr_db=40 < min 55"}},
	{name: "the quality gates loosened in the copy the row keeps", repo: true, edit: func(t *testing.T, dir string) {
		f := filepath.Join(dir, qualifiedRow, "quality/thresholds/1-quality.json")
		replaceIn(t, f, `"min": 0.03,`, `"min": 0.003,`)
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		editJSON(t, filepath.Join(dir, qualifiedRow, "results.json"), func(d map[string]any) {
			qu := d["quality"].(map[string]any)
			qu["files"].([]any)[0].(map[string]any)["sha256"] = bytesSHA256(b)
			qu["criteria"].(map[string]any)["pixel_std_min"] = 0.003
		})
		require.NoError(t, os.WriteFile(filepath.Join(dir, qualifiedRow, "quality/quality.json"), mustJSON(t, filepath.Join(dir, qualifiedRow, "results.json"), "quality"), 0o644))
	}, want: []string{qualifiedRow + "/quality/thresholds/1-quality.json: the family's thresholds file families/refedit/quality.json: evidence says the file at commit ce54dca7c5fd (sha256 06c6a369808d)"}},
	{name: "the committed H200 smoke run relabelled as qwen-image-edit-2511 and qualified", repo: true, src: "h200-orders/serial/20261205T180948Z-2707", edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, "reference-smoke", "results.json"), func(d map[string]any) {
			c := d["checkpoint"].(map[string]any)
			c["profile"], c["smoke"] = "qwen-image-edit-2511", false
			d["status"] = "qualified"
		})
		setDirty(t, dir, false)
	}, want: []string{"reference-smoke/results.json: checkpoint: evidence says the row reference-smoke of the qual tables at commit 877a7baa101f: TestReferenceSmoke: family qwen_image, backend diffusers, model Qwen/Qwen-Image-Edit-2511, profile qwen-image-edit-2511-reference-smoke, smoke true, double false, 5 measured + 1 warmup, file says family qwen_image, backend diffusers, model Qwen/Qwen-Image-Edit-2511, profile qwen-image-edit-2511, smoke false"}},
	// The declaration the controls are judged by is the family's at the commit: here the
	// steps band widened to take a server that ignores the steps (ratio 1.0), the figure
	// rewritten to the judge's.
	{name: "the steps band widened in the declaration, the verdict re-derived", repo: true, src: "reference-run/20261206T050821Z-13114-e7321e", edit: func(t *testing.T, dir string) {
		widen := func(c map[string]any) {
			c["declared"].(map[string]any)["step_ratio"] = []any{1.0, 2.4}
			v := c["controls"].([]any)[1].(map[string]any)
			v["figure"] = strings.Replace(v["figure"].(string), "band 1.60-2.40", "band 1.00-2.40", 1)
		}
		editJSON(t, filepath.Join(dir, "refedit-v1", schema.ControlsFile), widen)
		editJSON(t, filepath.Join(dir, "refedit-v1", "results.json"), func(d map[string]any) { widen(d["controls"].(map[string]any)) })
	}, want: []string{"refedit-v1/controls/controls.json: declared: evidence says ", "(the controls row refedit-v1's family declares at commit "}},

	// The server's account: its records and log.
	{name: "the slowest request moved first and relabelled warmup", edit: func(t *testing.T, dir string) {
		slow := slowest(t, dir)
		swapRequests(t, dir, 0, slow.index)
	}, want: []string{qualifiedRow + "/serve/records.jsonl: request " + slowestID + " time: evidence says inside AIPerf's span of the request, 2026-12-03T15:18:42.399505185Z to 2026-12-03T15:18:42.406990316Z (aiperf/artifacts/profile_export_raw.jsonl request_start_ns, request_end_ns, 1ms either side), file says 2026-12-03T15:18:42.425721222Z"}},
	{name: "the slowest request removed", edit: func(t *testing.T, dir string) {
		removeRequest(t, dir, slowest(t, dir))
	}, want: []string{qualifiedRow + "/serve/records.jsonl: line 3: request " + slowestID + ": evidence says a request of aiperf/artifacts/profile_export_raw.jsonl, an influence probe or a controls probe"}},
	{name: "the slowest request removed, from the server's records too", edit: func(t *testing.T, dir string) {
		slow := slowest(t, dir)
		removeRequest(t, dir, slow)
		dropLines(t, filepath.Join(dir, qualifiedRow, schema.RecordsFile), slow.id)
	}, want: []string{qualifiedRow + "/serve/server.log: line 5: request " + slowestID + ": evidence says a request the server's records hold (serve/records.jsonl), file says none there"}},
	{name: "an influence image replaced by another request's output", edit: func(t *testing.T, dir string) {
		b, err := os.ReadFile(filepath.Join(dir, qualifiedRow, "identity/01-profiling-http.png"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, qualifiedRow, "influence/b.png"), b, 0o644))
	}, want: []string{qualifiedRow + "/serve/records.jsonl: request qualkit-influence-b output_sha256: evidence says c38f7fed1e525d797f1d8e5f34a06d09c528f0a44bcb136d43d31551098356c5 (influence/b.png)"}},

	// The native Task's log against its report and PNGs.
	{name: "an output replaced, the records' and the batch report's sha256 rewritten to match", edit: func(t *testing.T, dir string) {
		row := filepath.Join(dir, qualifiedRow)
		editPNG(t, filepath.Join(row, "identity/01-profiling-http.png"))
		b, err := os.ReadFile(filepath.Join(row, "identity/01-profiling-http.png"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(row, "identity/01-profiling-native.png"), b, 0o644))
		setResponseImage(t, dir, 1, b)
		sha := bytesSHA256(b)
		const was = "c38f7fed1e525d797f1d8e5f34a06d09c528f0a44bcb136d43d31551098356c5"
		replaceIn(t, filepath.Join(row, schema.RecordsFile), was, sha)
		replaceIn(t, filepath.Join(row, schema.NativeBatchFile), was, sha)
	}, want: []string{
		qualifiedRow + "/identity/native-batch.log: line 2: replay 18f8bcd0-b6e9-40f4-9e0f-419320ab2010 sha256: evidence says ",
		"(the start of identity/01-profiling-native.png's sha256), file says c38f7fed1e52",
		qualifiedRow + "/identity/native-batch.jsonl: replay 18f8bcd0-b6e9-40f4-9e0f-419320ab2010 output_sha256: evidence says a sha256 starting c38f7fed1e52 (identity/native-batch.log line 2)",
	}},
	{name: "native PNGs copied from the HTTP outputs after the batch crashed", edit: func(t *testing.T, dir string) {
		row := filepath.Join(dir, qualifiedRow)
		log := filepath.Join(row, schema.NativeBatchLog)
		b, err := os.ReadFile(log)
		require.NoError(t, err)
		lines := strings.SplitAfter(string(b), "\n")
		crashed := strings.Join(lines[:3], "") + "panic: runtime error: invalid memory address or nil pointer dereference\n" +
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a2b1c]\n\ngoroutine 1 [running]:\nmain.batch(...)\n"
		require.NoError(t, os.WriteFile(log, []byte(crashed), 0o644))
		for i := 3; i < 6; i++ { // what the batch never wrote, taken from the HTTP outputs
			png, err := os.ReadFile(filepath.Join(row, fmt.Sprintf("identity/%02d-profiling-http.png", i)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(row, fmt.Sprintf("identity/%02d-profiling-native.png", i)), png, 0o644))
		}
	}, want: []string{
		qualifiedRow + "/identity/native-batch.log: the native Task ran to its end: evidence says no crash (stage identity passed), file says line 4: panic: runtime error: invalid memory address or nil pointer dereference",
		qualifiedRow + "/identity/native-batch.log: replays: evidence says 6 (one line per request in aiperf/artifacts/profile_export_raw.jsonl (stage identity passed)), file says 3",
		qualifiedRow + "/identity/native-batch.jsonl: replay 24eff3c0-e594-4ca7-be03-d9bd1a7e60bf: evidence says a replay the batch logged (identity/native-batch.log), file says no line there",
	}},

	// AIPerf's summaries against its raw export and the run.
	{name: "every benchmark timing x0.5, the fields the checker read before edited to match", edit: func(t *testing.T, dir string) {
		halveLatencies(t, dir)
	}, want: []string{
		qualifiedRow + "/aiperf/artifacts/profile_export_aiperf.csv: Request Latency (ms) p50: evidence says 3.03 (the profiling request_latency values of aiperf/artifacts/profile_export.jsonl, NumPy's linear percentile), file says 6.06",
		qualifiedRow + "/aiperf/artifacts/phases/profiling/profile_export_aiperf.csv: Request Latency (ms) max: evidence says 3.85",
		qualifiedRow + "/aiperf/artifacts/profile_export_console.txt: Request Latency (ms) p90: evidence says 3.72",
	}},
	{name: "AIPerf's exports transplanted from another run", edit: func(t *testing.T, dir string) {
		arts := filepath.Join(dir, qualifiedRow, "aiperf", "artifacts")
		require.NoError(t, os.RemoveAll(arts))
		require.NoError(t, os.CopyFS(arts, os.DirFS(filepath.Join(testRun(t, "second"), "refedit-v1-second", "aiperf", "artifacts"))))
	}, want: []string{
		qualifiedRow + "/aiperf/artifacts/profile_export_aiperf.json: input_config.artifacts.dir: evidence says a folder ending /20261203T151833Z-3754-qualified/refedit-v1/aiperf/artifacts (this run and row), file says /tmp/mk/20261203T151857Z-5216-second/refedit-v1-second/aiperf/artifacts",
		qualifiedRow + "/aiperf/artifacts/phase_manifest.json: profiling start_ns / end_ns: evidence says inside the AIPerf command's run",
	}},
	{name: "AIPerf's summary says CUDA ran out of memory, the row qualified", edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, schema.SummaryExportFile), func(d map[string]any) {
			d["is_complete"] = false
			d["error_summary"] = []any{map[string]any{"count": 3, "error_details": map[string]any{"code": 500, "type": "OutOfMemoryError",
				"message": "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total capacity)"}}}
		})
	}, want: []string{
		qualifiedRow + "/aiperf/artifacts/profile_export_aiperf.json: is_complete: evidence says true (stage benchmark passed), file says false",
		qualifiedRow + `/aiperf/artifacts/profile_export_aiperf.json: error_summary: evidence says none (stage benchmark passed), file says [{"count":3,"error_details":{"code":500,"message":"CUDA out of memory.`,
	}},
	{name: "the warmup request counted as measured", edit: func(t *testing.T, dir string) {
		row := filepath.Join(dir, qualifiedRow)
		for _, f := range []string{schema.RawExportFile, schema.ProfileExportFile} {
			lines := jsonLines(t, filepath.Join(row, f))
			m := lines[0]["metadata"].(map[string]any)
			m["benchmark_phase"], m["phase_name"], m["phase_kind"], m["phase_index"] = "profiling", "profiling", "profiling", json.Number("1")
			writeJSONLines(t, filepath.Join(row, f), lines)
		}
		for _, kind := range []string{"http", "native"} {
			require.NoError(t, os.Rename(filepath.Join(row, "identity/00-warmup-"+kind+".png"), filepath.Join(row, "identity/00-profiling-"+kind+".png")))
		}
		editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) { d["measured"], d["warmup"] = 6, 0 })
		replaceIn(t, filepath.Join(row, "commands.jsonl"), `"--request-count","5","--warmup-request-count","1"`, `"--request-count","6","--warmup-request-count","0"`)
	}, want: []string{
		qualifiedRow + "/aiperf/artifacts/profile_export_aiperf.json: input_config.phases[profiling].requests: evidence says 6 (the profiling records of aiperf/artifacts/profile_export_raw.jsonl), file says 5",
		qualifiedRow + "/aiperf/aiperf.log: phase profiling complete: evidence says \"completed=6, cancelled=0, errors=0\"",
	}},

	// The Task time's source pinned by the family's rules; its two sources held together.
	{name: "the Task time taken from the response body and quartered, the records keeping the true time", edit: func(t *testing.T, dir string) {
		row := filepath.Join(dir, qualifiedRow)
		editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) {
			d["task_time_source"] = map[string]any{"body": "timing.task_ms"}
			tt := d["task_time"].(map[string]any)
			tt["p50_ms"], tt["p95_ms"] = tt["p50_ms"].(float64)/4, tt["p95_ms"].(float64)/4
		})
		raw := jsonLines(t, filepath.Join(row, schema.RawExportFile))
		for _, l := range raw {
			resp := l["responses"].([]any)[0].(map[string]any)
			var body map[string]any
			require.NoError(t, json.Unmarshal([]byte(resp["text"].(string)), &body))
			tm := body["timing"].(map[string]any)
			tm["task_ms"] = tm["task_ms"].(float64) / 4
			text, err := json.Marshal(body)
			require.NoError(t, err)
			resp["text"] = string(text)
		}
		writeJSONLines(t, filepath.Join(row, schema.RawExportFile), raw)
	}, want: []string{
		qualifiedRow + "/results.json: task_time_source: evidence says one the refedit family's code gives a row: {body timing.task_ms, records timing.task_ms, record_id request_id} or {records timing.task_ms, record_id request_id}, file says {body timing.task_ms}",
		qualifiedRow + "/serve/records.jsonl: request 71e34701-3c3f-415f-b0cd-3a18012f5d96 timing.task_ms: evidence says 0.337 ms (response body timing.task_ms in aiperf/artifacts/profile_export_raw.jsonl: the server states the Task time in both), file says 1.348 ms",
	}},
	{name: "the Task time taken from the records alone and quartered, the bodies keeping the true time", edit: func(t *testing.T, dir string) {
		row := filepath.Join(dir, qualifiedRow)
		editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) {
			d["task_time_source"] = map[string]any{"records": "timing.task_ms", "record_id": "request_id"}
		})
		editJSONL(t, filepath.Join(row, schema.RecordsFile), func(d map[string]any) {
			tm := d["timing"].(map[string]any)
			tm["task_ms"] = tm["task_ms"].(float64) / 4
		})
	}, want: []string{qualifiedRow + "/serve/records.jsonl: request 18f8bcd0-b6e9-40f4-9e0f-419320ab2010 timing.task_ms: evidence says 2.081 ms (response body timing.task_ms in aiperf/artifacts/profile_export_raw.jsonl: the server states the Task time in both), file says 0.52025 ms"}},

	// The files no claim was read from before, rewritten to contradict the claims.
	{name: "preflight.json rewritten", edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, schema.PreflightFile), func(d map[string]any) {
			d["qualification_run"] = false
			d["wall_s"] = 40.0
			d["readiness"].(map[string]any)["requirements"] = []any{map[string]any{"what": "the row needs 1 GPU with 75 GiB; none found", "fix": "run on an H100", "absent": true}}
		})
	}, want: []string{
		qualifiedRow + "/preflight.json: qualification_run: evidence says true (run.json), file says false",
		qualifiedRow + "/preflight.json: wall_s: evidence says at most the stage's wall, 0.545 s (results.json stages[preflight]), file says 40.000",
		qualifiedRow + "/preflight.json: readiness.requirements: evidence says none missing (stage preflight passed), file says the row needs 1 GPU with 75 GiB; none found",
	}},
	{name: "quality/quality.json rewritten", edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, qualifiedRow, "quality/quality.json"), func(d map[string]any) { d["failures"] = 3 })
	}, want: []string{qualifiedRow + "/quality/quality.json: quality.failures: evidence says 0 (results.json quality, as re-derived from the PNGs), file says 3"}},
	{name: "server.log rewritten", edit: func(t *testing.T, dir string) {
		replaceIn(t, filepath.Join(dir, qualifiedRow, schema.ServerLog), "POST /v1/images/edits 200 5.7ms", "POST /v1/images/edits 500 5.7ms")
	}, want: []string{qualifiedRow + "/serve/server.log: request 18f8bcd0-b6e9-40f4-9e0f-419320ab2010 status: evidence says 200 (serve/records.jsonl), file says 500"}},
	{name: "aiperf.log rewritten", edit: func(t *testing.T, dir string) {
		replaceIn(t, filepath.Join(dir, qualifiedRow, "aiperf/aiperf.log"), "complete | completed=5, cancelled=0, errors=0", "complete | completed=3, cancelled=2, errors=0")
	}, want: []string{qualifiedRow + "/aiperf/aiperf.log: phase profiling complete: evidence says \"completed=5, cancelled=0, errors=0\" (the profiling records of aiperf/artifacts/profile_export_raw.jsonl (stage benchmark passed)), file says \"completed=3, cancelled=2, errors=0\""}},
	{name: "AIPerf's input file rewritten", edit: func(t *testing.T, dir string) {
		replaceIn(t, filepath.Join(dir, qualifiedRow, "aiperf/inputs.jsonl"), `"text":"Blur the whole image"`, `"text":"Sharpen the whole image"`)
	}, want: []string{qualifiedRow + "/aiperf/inputs.jsonl: AIPerf's input: evidence says the fixtures' pairs as the openai-images-edits protocol writes them (fixtures/manifest.json), file says differs from line 3"}},
}

// halveLatencies halves every request's latency in AIPerf's raw and per-request exports,
// and what the checker compared with them before issue 38's checks: the summary's
// request_latency, the run CSV's and console's avg / min / max.
func halveLatencies(t *testing.T, dir string) {
	t.Helper()
	row := filepath.Join(dir, qualifiedRow)
	half := func(m map[string]any) {
		start, err := m["request_start_ns"].(json.Number).Int64()
		require.NoError(t, err)
		for _, k := range []string{"request_ack_ns", "request_end_ns"} {
			v, err := m[k].(json.Number).Int64()
			require.NoError(t, err)
			m[k] = json.Number(fmt.Sprint(start + (v-start)/2))
		}
	}
	raw := jsonLines(t, filepath.Join(row, schema.RawExportFile))
	for _, l := range raw {
		half(l["metadata"].(map[string]any))
	}
	writeJSONLines(t, filepath.Join(row, schema.RawExportFile), raw)
	prof := jsonLines(t, filepath.Join(row, schema.ProfileExportFile))
	for _, l := range prof {
		m := l["metadata"].(map[string]any)
		half(m)
		start, _ := m["request_start_ns"].(json.Number).Int64()
		end, _ := m["request_end_ns"].(json.Number).Int64()
		l["metrics"].(map[string]any)["request_latency"].(map[string]any)["value"] = json.Number(strconv.FormatFloat(float64(end-start)/1e6, 'f', -1, 64))
	}
	writeJSONLines(t, filepath.Join(row, schema.ProfileExportFile), prof)
	editJSON(t, filepath.Join(row, schema.SummaryExportFile), func(d map[string]any) {
		for k, v := range d["request_latency"].(map[string]any) {
			if f, ok := v.(float64); ok && k != "count" {
				d["request_latency"].(map[string]any)[k] = f / 2
			}
		}
	})
	halveCells := func(file string, re *regexp.Regexp) {
		b, err := os.ReadFile(filepath.Join(row, file))
		require.NoError(t, err)
		out := re.ReplaceAllStringFunc(string(b), func(m string) string {
			sub := re.FindStringSubmatchIndex(m)
			var parts []string
			last := 0
			for g := 2; g < len(sub); g += 2 {
				v, err := strconv.ParseFloat(m[sub[g]:sub[g+1]], 64)
				require.NoError(t, err)
				parts = append(parts, m[last:sub[g]], fmt.Sprintf("%.2f", v/2))
				last = sub[g+1]
			}
			return strings.Join(parts, "") + m[last:]
		})
		require.NoError(t, os.WriteFile(filepath.Join(row, file), []byte(out), 0o644))
	}
	halveCells(schema.CSVExportFile, regexp.MustCompile(`Request Latency \(ms\),([0-9.]+),([0-9.]+),([0-9.]+),([0-9.]+),`))
	halveCells(schema.ConsoleExportFile, regexp.MustCompile(`Request Latency \(ms\) │ +([0-9.]+) │ +([0-9.]+) │ +([0-9.]+) │`))
}

// setResponseImage makes the response AIPerf recorded for request i of the qualified row
// carry png (data[0].b64_json of its body).
func setResponseImage(t *testing.T, dir string, i int, png []byte) {
	t.Helper()
	path := filepath.Join(dir, qualifiedRow, schema.RawExportFile)
	raw := jsonLines(t, path)
	resp := raw[i]["responses"].([]any)[0].(map[string]any)
	var body map[string]any
	require.NoError(t, json.Unmarshal([]byte(resp["text"].(string)), &body))
	body["data"].([]any)[0].(map[string]any)["b64_json"] = base64.StdEncoding.EncodeToString(png)
	text, err := json.Marshal(body)
	require.NoError(t, err)
	resp["text"] = string(text)
	writeJSONLines(t, path, raw)
}

// slowestID is the qualified row's slowest measured request (slowest).
const slowestID = "fa23c3d0-6710-41b8-854f-eb4f3bdecca3"

// rawRequest is one request of a row's raw export.
type rawRequest struct {
	index int
	id    string
	stem  string
}

// slowest is the measured request of the qualified row that took longest.
func slowest(t *testing.T, dir string) rawRequest {
	t.Helper()
	raw, err := schema.ReadRaw(filepath.Join(dir, qualifiedRow, schema.RawExportFile))
	require.NoError(t, err)
	best, span := rawRequest{index: -1}, int64(0)
	for i, r := range raw {
		m := r.Metadata
		if m.BenchmarkPhase == phaseProfiling && m.RequestEndNs-m.RequestStartNs > span {
			best, span = rawRequest{i, m.XRequestID, fmt.Sprintf("%02d-%s", i, m.BenchmarkPhase)}, m.RequestEndNs-m.RequestStartNs
		}
	}
	require.GreaterOrEqual(t, best.index, 0)
	return best
}

// jsonLines reads a JSON lines file with its numbers exact (nanosecond stamps).
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		var m map[string]any
		require.NoError(t, d.Decode(&m))
		out = append(out, m)
	}
	return out
}

func writeJSONLines(t *testing.T, path string, lines []map[string]any) {
	t.Helper()
	var out []byte
	for _, l := range lines {
		b, err := json.Marshal(l)
		require.NoError(t, err)
		out = append(append(out, b...), '\n')
	}
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// requestTiming are the metadata fields of a raw export line that say when and in which
// phase a request ran: what stays in place when two requests trade places.
var requestTiming = []string{"credit_issued_ns", "request_start_ns", "request_ack_ns", "request_end_ns", "benchmark_phase", "phase_index", "phase_name", "phase_kind"}

// swapRequests makes requests i and j of the qualified row trade places in AIPerf's
// exports: each takes the other's times and phase (in the raw export; in the per-request
// export, whose metrics follow the times, only the ids move), and the identity PNGs
// follow the requests.
func swapRequests(t *testing.T, dir string, i, j int) {
	t.Helper()
	row := filepath.Join(dir, qualifiedRow)
	raw := jsonLines(t, filepath.Join(row, schema.RawExportFile))
	raw[i], raw[j] = raw[j], raw[i]
	mi, mj := raw[i]["metadata"].(map[string]any), raw[j]["metadata"].(map[string]any)
	for _, k := range requestTiming {
		mi[k], mj[k] = mj[k], mi[k]
	}
	writeJSONLines(t, filepath.Join(row, schema.RawExportFile), raw)
	prof := jsonLines(t, filepath.Join(row, schema.ProfileExportFile))
	pi, pj := prof[i]["metadata"].(map[string]any), prof[j]["metadata"].(map[string]any)
	pi["x_request_id"], pj["x_request_id"] = pj["x_request_id"], pi["x_request_id"]
	writeJSONLines(t, filepath.Join(row, schema.ProfileExportFile), prof)
	stemI, stemJ := fmt.Sprintf("%02d-%s", i, mi["benchmark_phase"]), fmt.Sprintf("%02d-%s", j, mj["benchmark_phase"])
	for _, kind := range []string{"http", "native"} {
		a, b := filepath.Join(row, "identity", stemI+"-"+kind+".png"), filepath.Join(row, "identity", stemJ+"-"+kind+".png")
		ba, err := os.ReadFile(a)
		require.NoError(t, err)
		bb, err := os.ReadFile(b)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(a, bb, 0o644))
		require.NoError(t, os.WriteFile(b, ba, 0o644))
	}
}

// removeRequest takes a request out of AIPerf's exports and the identity stage, and the
// measured count down by one where results.json and the AIPerf command state it.
func removeRequest(t *testing.T, dir string, q rawRequest) {
	t.Helper()
	row := filepath.Join(dir, qualifiedRow)
	dropLines(t, filepath.Join(row, schema.RawExportFile), q.id)
	dropLines(t, filepath.Join(row, schema.ProfileExportFile), q.id)
	for _, kind := range []string{"http", "native"} {
		require.NoError(t, os.Remove(filepath.Join(row, "identity", q.stem+"-"+kind+".png")))
	}
	editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) { d["measured"] = d["measured"].(float64) - 1 })
	replaceIn(t, filepath.Join(row, "commands.jsonl"), `"--request-count","5"`, `"--request-count","4"`)
}

// dropLines removes the lines of a file that name id.
func dropLines(t *testing.T, path, id string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var keep [][]byte
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if !bytes.Contains(l, []byte(id)) {
			keep = append(keep, l)
		}
	}
	require.Less(t, len(keep), bytes.Count(b, []byte("\n"))+1, "%s names %s", path, id)
	require.NoError(t, os.WriteFile(path, bytes.Join(keep, nil), 0o644))
}

// thisRepo is the clone the tests run in: the commits the committed runs name are its.
func thisRepo(t *testing.T) Repo {
	t.Helper()
	g, err := evidencerepo.Open(".")
	require.NoError(t, err, "the checker's tests run inside the clone")
	return g
}

// The committed runs name commits of this repository, whose gates, case files and
// tables they match: checked inside it, every one passes.
func TestCommittedRunsMatchTheirCommits(t *testing.T) {
	repo := thisRepo(t)
	for _, run := range []string{"reference-run/20261206T050821Z-13114-e7321e", "h200-orders/serial/20261205T180948Z-2707",
		"h200-orders/overlapped/20261205T181148Z-3952", "h200-perf-serve-reference/20261205T182255Z-1368"} {
		rep := VerifyWith(committed(t, run), Options{Repo: repo, Strict: true})
		require.NoError(t, rep.Err(), run)
		assert.Empty(t, rep.Notes, run)
	}
	rep := VerifyWith(testRun(t, "qualified"), Options{Repo: repo, Strict: true, JUnit: junitCopy(t)})
	require.NoError(t, rep.Err())
	// Outside a repository the commit is not verifiable: said, and a problem when strict.
	rep = Verify(testRun(t, "qualified"), "")
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{NotVerifiable}, rep.Notes)
	failsWith(t, VerifyWith(testRun(t, "qualified"), Options{Strict: true}).Err(),
		"run.json: harness_commit: evidence says a commit of the repository the check runs in (strict), file says not verifiable: no repository")
}

// setCommit names another harness commit in run.json and every row's provenance.
func setCommit(t *testing.T, dir, commit string) {
	t.Helper()
	editJSON(t, filepath.Join(dir, schema.RunFile), func(d map[string]any) { d["harness_commit"] = commit })
	eachResult(t, dir, func(d map[string]any) { d["provenance"].(map[string]any)["harness_commit"] = commit })
}

// setDirty sets the tree's dirty flag in run.json and every row, its changes gone.
func setDirty(t *testing.T, dir string, dirty bool) {
	t.Helper()
	editJSON(t, filepath.Join(dir, schema.RunFile), func(d map[string]any) { d["harness_dirty"] = dirty; delete(d, "changes") })
	eachResult(t, dir, func(d map[string]any) {
		p := d["provenance"].(map[string]any)
		p["harness_dirty"] = dirty
		delete(p, "changes")
	})
}

func eachResult(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	var info schema.RunInfo
	readJSONFile(t, filepath.Join(dir, schema.RunFile), &info)
	for _, row := range info.Rows {
		editJSON(t, filepath.Join(dir, row, schema.ResultsFile), edit)
	}
}

// mustJSON is the value at key of a JSON file, indented as the harness writes it.
func mustJSON(t *testing.T, file, key string) []byte {
	t.Helper()
	var doc map[string]json.RawMessage
	readJSONFile(t, file, &doc)
	var v any
	require.NoError(t, json.Unmarshal(doc[key], &v))
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return append(b, '\n')
}

// Every forgery of TestTamperingFails that edits a raw file, finished by forge instead of
// by recomputing the checksums alone: with every derived file regenerated by our own code
// it is still caught. (The tamperings that edit only a derived file, which forge
// regenerates from the raw files and so undoes, are the ones listed in derivedOnly.)
func TestTamperingsSurviveForge(t *testing.T) {
	derivedOnly := map[string]bool{
		"edited latency in row.md, checksums fixed":  true,
		"edited images/s in row.md, checksums fixed": true,
		"edited picture, checksums fixed":            true,
		"edited SUMMARY.md status, checksums fixed":  true,
		"edited index.html status, checksums fixed":  true,
		"PR.md prose changed, checksums fixed":       true,
		"index.html text changed, checksums fixed":   true,
	}
	n := 0
	for _, tt := range tamperings {
		if !tt.resum || tt.junit {
			continue
		}
		n++
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, tt.run)
			tt.edit(t, dir, "")
			forge(t, dir)
			err := Check(dir, "")
			if derivedOnly[tt.name] {
				require.NoError(t, err, "forge regenerates what this edit changed")
				return
			}
			require.Error(t, err, "forged with our own code, the edit passes")
		})
	}
	require.Greater(t, n, 40)
}

// caseMetrics is the metrics of the case id in a decoded refedit correctness result.
func caseMetrics(t *testing.T, result map[string]any, id string) map[string]any {
	t.Helper()
	for _, c := range result["cases"].([]any) {
		if c := c.(map[string]any); c["id"] == id {
			return c["metrics"].(map[string]any)
		}
	}
	require.FailNow(t, "no case "+id)
	return nil
}

// AIPerf stamps a record's times in its worker's clock and a phase's in its timing
// manager's: under load a phase's last record ended after the phase did (9 ms at load 30
// on 2 cores, in a fresh clone's make test). That passes; a phase 3 s off its requests,
// its summary's end_time moved with it, does not.
func TestPhaseSpanAllowsAIPerfsTwoClocks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shift int64
		fails bool
	}{{"9 ms", 9e6, false}, {"3 s", 3e9, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, "qualified")
			raw, err := schema.ReadRaw(filepath.Join(dir, qualifiedRow, schema.RawExportFile))
			require.NoError(t, err)
			var last int64
			for _, r := range raw {
				if r.Metadata.BenchmarkPhase == phaseWarmup {
					last = max(last, r.Metadata.RequestEndNs)
				}
			}
			var oldEnd int64
			editExact(t, filepath.Join(dir, qualifiedRow, schema.PhaseManifestFile), func(m map[string]any) {
				for _, p := range m["phases"].([]any) {
					if p := p.(map[string]any); p["phase_kind"] == phaseWarmup {
						oldEnd, _ = p["end_ns"].(json.Number).Int64()
						p["end_ns"] = json.Number(strconv.FormatInt(last-tc.shift, 10))
					}
				}
			})
			editExact(t, filepath.Join(dir, qualifiedRow, schema.PhaseSummary(phaseWarmup)), func(m map[string]any) {
				const layout = "2006-01-02T15:04:05.999999"
				end, err := time.Parse(layout, m["end_time"].(string))
				require.NoError(t, err)
				m["end_time"] = end.Add(time.Duration(last - tc.shift - oldEnd)).Format(layout)
			})
			forge(t, dir)
			err = VerifyWith(dir, Options{}).Err()
			if !tc.fails {
				require.NoError(t, err)
				return
			}
			failsWith(t, err, qualifiedRow+"/"+schema.PhaseManifestFile+": warmup start_ns / end_ns: evidence says around the warmup requests")
		})
	}
}

// TestRequestOrderOnPerfCounter: a worker that read time_ns a delay after its
// perf_counter (aiohttp_client.py § send_request) has its request's wall times, and the
// server's receipt, that much later, and the wall end past the next request's start (CI,
// 2026-12-06: 3.2 ms); that passes. The same moved 3 s on the wall clock alone fails.
func TestRequestOrderOnPerfCounter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		past  int64
		fails bool
	}{{"3.2 ms", 3_200_000, false}, {"3 s", 3e9, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, "qualified")
			raw, err := schema.ReadRaw(filepath.Join(dir, qualifiedRow, schema.RawExportFile))
			require.NoError(t, err)
			var prof []schema.RecordMeta
			for _, r := range raw {
				if r.Metadata.BenchmarkPhase == phaseProfiling {
					prof = append(prof, r.Metadata)
				}
			}
			slices.SortFunc(prof, func(a, b schema.RecordMeta) int { return cmp.Compare(a.RequestStartNs, b.RequestStartNs) })
			require.GreaterOrEqual(t, len(prof), 4)
			late, next := prof[1], prof[2] // neither the first nor the last
			by := next.RequestStartNs - late.RequestEndNs + tc.past
			for _, f := range []string{schema.RawExportFile, schema.ProfileExportFile} {
				editJSONLExact(t, filepath.Join(dir, qualifiedRow, f), func(d map[string]any) {
					m := d["metadata"].(map[string]any)
					if m["x_request_id"] != late.XRequestID {
						return
					}
					for _, k := range []string{"request_start_ns", "request_end_ns"} {
						n, err := m[k].(json.Number).Int64()
						require.NoError(t, err)
						m[k] = json.Number(strconv.FormatInt(n+by, 10))
					}
				})
			}
			editJSONLExact(t, filepath.Join(dir, qualifiedRow, schema.RecordsFile), func(d map[string]any) {
				if d["request_id"] == late.XRequestID {
					at, err := time.Parse(time.RFC3339Nano, d["time"].(string))
					require.NoError(t, err)
					d["time"] = at.Add(time.Duration(by)).Format(time.RFC3339Nano)
				}
			})
			forge(t, dir)
			err = VerifyWith(dir, Options{}).Err()
			if !tc.fails {
				require.NoError(t, err)
				return
			}
			failsWith(t, err, qualifiedRow+"/"+schema.RawExportFile+": request "+late.XRequestID+" request_start_ns - start_perf_ns: evidence says within 2s of the lowest")
		})
	}
}

// editJSONLExact is editJSONL with numbers kept exact.
func editJSONLExact(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []byte
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		m := decodeExact(t, line)
		edit(m)
		nl, err := json.Marshal(m)
		require.NoError(t, err)
		out = append(append(out, nl...), '\n')
	}
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// decodeExact decodes one JSON object with its numbers as json.Number.
func decodeExact(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	require.NoError(t, d.Decode(&m))
	return m
}

// editExact edits a JSON file with its numbers kept exact (nanosecond stamps).
func editExact(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	m := decodeExact(t, b)
	edit(m)
	b, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}
