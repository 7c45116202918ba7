package evidencecheck

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

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
		writeFile(t, filepath.Join(dir, row, "row.md"), harness.MarkdownHeader+harness.MarkdownRow(res))
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
			editJSONL(t, filepath.Join(dir, q, rawExport), func(d map[string]any) {
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
		}, []string{"a request of this row alone (AIPerf draws a fresh id per request), file says also in " + q + "/" + rawExport}},
		{"50 steps claimed, the AIPerf command and payloads edited to match", func(t *testing.T, dir string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["settings"].(map[string]any)["num_inference_steps"] = "50"
			})
			replaceIn(t, filepath.Join(dir, q, "commands.jsonl"), `\"num_inference_steps\":4`, `\"num_inference_steps\":50`)
			replaceAllRe(t, filepath.Join(dir, q, rawExport), `\\"num_inference_steps\\":4`, `\"num_inference_steps\":50`)
		}, []string{q + "/serve/records.jsonl: request ", "settings.num_inference_steps: evidence says 50 (results.json settings.num_inference_steps), file says 4"}},
		{"the Task times halved in the records and the results", func(t *testing.T, dir string) {
			editJSONL(t, filepath.Join(dir, q, "serve/records.jsonl"), func(d map[string]any) {
				tm := d["timing"].(map[string]any)
				tm["task_ms"] = tm["task_ms"].(float64) / 2
			})
		}, []string{q + "/serve/records.jsonl: request ", "timing.task_ms: evidence says", "(response body timing.task_ms in " + rawExport + ")"}},
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
		loosened := "" // the thresholds file as the loosened tree held it, which the case hashed
		editJSON(t, filepath.Join(dir, qualifiedRow, "correctness/artifacts/result.json"), func(d map[string]any) {
			th := d["thresholds"].(map[string]any)
			th["gates"].(map[string]any)["gates"].(map[string]any)["psnr_db"].(map[string]any)["min"] = 5.0
			b, err := json.MarshalIndent(th["gates"], "", "  ")
			require.NoError(t, err)
			loosened = bytesSHA256(b)
			th["sha256"] = loosened
		})
		fixArtifactHash(t, dir, qualifiedRow, "correctness/artifacts/result.json")
		setDirty(t, dir, false)
	}, want: []string{qualifiedRow + "/correctness/artifacts/result.json: thresholds.sha256: evidence says 6059006deb4d89cd2f1b5e468ac6fdae9dea5d9a62270d108fd243a0fa77e3e0 (families/refedit/correctness/thresholds.json at commit ce54dca7c5fd)"}},
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
	{name: "the committed H200 smoke run relabelled as qwen-image-edit-2511 and qualified", repo: true, src: "h200-orders/serial/20261204T135927Z-3913", edit: func(t *testing.T, dir string) {
		editJSON(t, filepath.Join(dir, "reference-smoke", "results.json"), func(d map[string]any) {
			c := d["checkpoint"].(map[string]any)
			c["profile"], c["smoke"] = "qwen-image-edit-2511", false
			d["status"] = "qualified"
		})
		setDirty(t, dir, false)
	}, want: []string{"reference-smoke/results.json: checkpoint: evidence says the row reference-smoke of the qual tables at commit 748b2645dc69: TestReferenceSmoke: family qwen_image, backend diffusers, model Qwen/Qwen-Image-Edit-2511, profile qwen-image-edit-2511-reference-smoke, smoke true, double false, 5 measured + 1 warmup, file says family qwen_image, backend diffusers, model Qwen/Qwen-Image-Edit-2511, profile qwen-image-edit-2511, smoke false"}},
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
	for _, run := range []string{"reference-run/20261204T105656Z-12956", "h200-orders/serial/20261204T135927Z-3913",
		"h200-orders/overlapped/20261204T140109Z-5185", "h200-reference-smoke-batch/20261203T150553Z-547",
		"h200-container-reference-smoke/20261204T001055Z-2617"} {
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
	for _, tt := range tamperings() {
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
