package evidencecheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"qualkit/internal/attest"
	"qualkit/internal/junitfix"
	"qualkit/internal/runarchive/runstest"
	"qualkit/internal/schema"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The committed runs (testdata/README.md): one qualified row, one whose identity failed.
const (
	qualifiedRow = "refedit-v1"
	driftRow     = "refedit-v1-native-drift"
	// q is qualifiedRow, short for the tables of edits.
	q = qualifiedRow
)

// testRun is the committed run *-<kind> (testdata/runs.tar.zst), unpacked once per
// test binary: read it, never edit it (runCopy).
func testRun(t *testing.T, kind string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(runstest.Shared(t, runstest.TestdataArchive), "*-"+kind))
	require.NoError(t, err)
	require.Len(t, matches, 1, "%s: *-%s", runstest.TestdataArchive, kind)
	return matches[0]
}

// runCopy copies the committed run *-<kind> into a temporary folder of the same name.
func runCopy(t *testing.T, kind string) string {
	t.Helper()
	src := testRun(t, kind)
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}

// committedCopy copies the committed run rel of docs/evidence/runs.tar.zst into a
// temporary folder of the same name, writable.
func committedCopy(t *testing.T, rel string) string {
	t.Helper()
	src := filepath.Join(runstest.Shared(t, runstest.DocsArchive), filepath.FromSlash(rel))
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			err = os.Chmod(p, 0o755)
		}
		return err
	}))
	return dir
}

// committed is the committed run rel of docs/evidence/runs.tar.zst, unpacked once per
// test binary: read it, never edit it (committedCopy).
func committed(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join(runstest.Shared(t, runstest.DocsArchive), filepath.FromSlash(rel))
}

func junitCopy(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "junit-qualified.xml"))
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// resum rewrites every SHA256SUMS the way the harness does, each row's first, then the
// run's: the attacker who edits a file and fixes the checksum lists, so only the semantic
// checks (and the JUnit anchor) can catch the edit.
func resum(t *testing.T, dir string) {
	t.Helper()
	rows, err := filepath.Glob(filepath.Join(dir, "*", schema.ChecksumFile))
	require.NoError(t, err)
	for _, list := range rows {
		writeSums(t, filepath.Dir(list))
	}
	writeSums(t, dir)
}

func writeSums(t *testing.T, dir string) {
	t.Helper()
	var lines []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == schema.ChecksumFile || rel == attest.File {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		lines = append(lines, hex.EncodeToString(s[:])+"  "+filepath.ToSlash(rel))
		return nil
	}))
	sort.Slice(lines, func(i, j int) bool { return lines[i][66:] < lines[j][66:] })
	require.NoError(t, os.WriteFile(filepath.Join(dir, schema.ChecksumFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func replaceFirstRe(t *testing.T, path, re, repl string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	loc := regexp.MustCompile(re).FindIndex(b)
	require.NotNil(t, loc, "%s has no match for %s", path, re)
	out := append(append(append([]byte{}, b[:loc[0]]...), repl...), b[loc[1]:]...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), old, path)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// replaceAllRe replaces every match of re in path and returns the first match.
func replaceAllRe(t *testing.T, path, re, new string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	rx := regexp.MustCompile(re)
	m := rx.Find(b)
	require.NotNil(t, m, "%s in %s", re, path)
	require.NoError(t, os.WriteFile(path, rx.ReplaceAll(b, []byte(new)), 0o644))
	return string(m)
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	edit(doc)
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(out, '\n'), 0o644))
}

// editPNG changes one channel of one pixel by one level and re-encodes the image.
func editPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	img, err := decodePNG(b)
	require.NoError(t, err)
	img.Pix[4*7+1] ^= 1
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// rowLine is the result row of a row.md.
func rowLine(t *testing.T, dir, row string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, row, "row.md"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// setCell rewrites cell i of the row's line everywhere it is quoted: row.md,
// SUMMARY.md, PR.md. It returns the old cell.
func setCell(t *testing.T, dir, row string, col int, value string) string {
	t.Helper()
	line := rowLine(t, dir, row)
	cells, ok := splitRow(line)
	require.True(t, ok)
	old := cells[col]
	cells[col] = value
	next := "| " + strings.Join(cells, " | ") + " |"
	for _, f := range []string{filepath.Join(row, "row.md"), "SUMMARY.md", "PR.md"} {
		replaceIn(t, filepath.Join(dir, f), line, next)
	}
	return old
}

var problemShape = regexp.MustCompile(`^[^:]+: [^:].*: evidence says .+, file says .*$`)

// failsWith requires the check to fail with a problem line containing each of want.
func failsWith(t *testing.T, err error, want ...string) {
	t.Helper()
	var e *Error
	require.True(t, errors.As(err, &e), "the check passed; want problems %q", want)
	var lines []string
	for _, p := range e.Problems {
		lines = append(lines, p.String())
		assert.Regexp(t, problemShape, p.String(), "problem shape: <file>: <claim>: evidence says X, file says Y")
	}
	all := strings.Join(lines, "\n")
	for _, w := range want {
		assert.Contains(t, all, w, "problems:\n%s", all)
	}
}

func TestCommittedRunsPass(t *testing.T) {
	dir := runCopy(t, "qualified")
	rep := Verify(dir, junitCopy(t))
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{qualifiedRow}, rep.Rows)
	assert.Greater(t, rep.Files, 100, "files checksummed")
	assert.Greater(t, rep.Claims, 250, "claims compared")

	// An honest failed row passes: it claims nothing it has not shown.
	rep = Verify(runCopy(t, "drift"), "")
	require.NoError(t, rep.Err())
	assert.Equal(t, []string{driftRow}, rep.Rows)
}

func TestMissingFolder(t *testing.T) {
	failsWith(t, Check(filepath.Join(t.TempDir(), "nope"), ""), ".: run folder")
}

// Each tamper is an edit of a committed run. With resum the checksum list is fixed too,
// so what catches it is the claim the edit breaks.
func TestTamperingFails(t *testing.T) {
	for _, tt := range tamperings {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := runCopy(t, tt.run) // untouched, it passes: TestCommittedRunsPass
			junit := ""
			if tt.junit {
				junit = junitCopy(t)
			}
			tt.edit(t, dir, junit)
			if tt.resum {
				resum(t, dir)
			}
			failsWith(t, Check(dir, junit), tt.want...)
		})
	}
}

// tampering is one edit of a committed run and the problems it must raise.
type tampering struct {
	name  string
	run   string // "qualified" or "drift"
	junit bool
	edit  func(t *testing.T, dir, junit string)
	resum bool
	want  []string
}

// tamperings are the forgeries TestTamperingFails catches from the folder alone, and
// TestSignedForgeriesFail again through the signature (q is the qualified row).
var tamperings = []tampering{
	{name: "edited native PNG", run: "qualified",
		edit: func(t *testing.T, dir, _ string) {
			editPNG(t, filepath.Join(dir, q, "identity/03-profiling-native.png"))
		},
		want: []string{q + "/identity/03-profiling-native.png: sha256 (SHA256SUMS): evidence says "}},
	{name: "edited native PNG, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editPNG(t, filepath.Join(dir, q, "identity/03-profiling-native.png"))
		},
		want: []string{
			q + `/row.md: native/HTTP pixel matches: evidence says 5/6 (decoded PNG pairs in identity/), file says 6/6`,
			q + "/results.json: identity.pixel_matches: evidence says 5",
			q + "/results.json: identity.requests[3].native_sha256",
			q + "/results.json: status qualified: evidence says 6/6 native/HTTP pixel matches",
			q + "/pictures/contact-sheet.png: picture of the raw records",
		}},
	{name: "edited HTTP PNG, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { editPNG(t, filepath.Join(dir, q, "identity/02-profiling-http.png")) },
		want: []string{q + "/identity/02-profiling-http.png: the HTTP response's PNG: evidence says the image of the response in"}},
	{name: "a contract double's server, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, q, "serve/identity.json"), `{"backend": "trtmc", "qualkit_contract_double": true}`)
		},
		want: []string{q + "/results.json: status qualified: evidence says passed-contract-double"}},
	{name: "edited fixture image, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { editPNG(t, filepath.Join(dir, q, "fixtures/house-640x382.png")) },
		want: []string{q + "/fixtures/house-640x382.png: sha256 (fixtures/manifest.json)"}},
	{name: "edited influence PNG, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { editPNG(t, filepath.Join(dir, q, "influence/a-repeat.png")) },
		want: []string{q + "/influence/a-repeat.png: stage influence passed: evidence says pixel-identical to influence/a.png",
			q + "/results.json: influence.repeat.differing_pixels: evidence says 1"}},
	{name: "edited picture, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { editPNG(t, filepath.Join(dir, q, "pictures/latency.png")) },
		want: []string{q + "/pictures/latency.png: picture of the raw records: evidence says the latency chart drawn from"}},

	{name: "edited latency in row.md", run: "qualified",
		edit: func(t *testing.T, dir, _ string) { setCell(t, dir, q, 10, "0.0001 / 0.0002") },
		want: []string{q + "/row.md: sha256 (SHA256SUMS)"}},
	{name: "edited latency in row.md, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { setCell(t, dir, q, 10, "0.0001 / 0.0002") },
		want: []string{q + `/row.md: HTTP p50 / p95 (s): evidence says "`, `(nearest-rank p50 / p95 over 5 request_latency values in aiperf/artifacts/profile_export.jsonl), file says "0.0001 / 0.0002"`,
			"SUMMARY.md: line 5", "PR.md: result row"}},
	{name: "edited Task time in results.json, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["task_time"].(map[string]any)["p95_ms"] = 0.5 })
		},
		want: []string{q + "/results.json: task_time.p95_ms: evidence says", "(nearest-rank over response bodies in aiperf/artifacts/profile_export_raw.jsonl, field timing.task_ms), file says 0.5"}},
	{name: "edited images/s in row.md, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { setCell(t, dir, q, 12, "999.9") },
		want: []string{q + "/row.md: images/s: evidence says"}},
	{name: "edited raw latency, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, schema.ProfileExportFile), `"request_latency":\{"value":[0-9.]+`, `"request_latency":{"value":1.5`)
		},
		want: []string{q + "/aiperf/artifacts/profile_export_aiperf.json: request_latency min / max: evidence says 1.5 ms / 1.5 ms",
			q + "/results.json: http_latency.p50_ms: evidence says 1.5"}},
	{name: "AIPerf's summary and phase manifest torn in a passed benchmark, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			for _, f := range []string{schema.SummaryExportFile, schema.PhaseManifestFile} {
				p := filepath.Join(dir, q, f)
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, b[:len(b)/2], 0o644))
			}
		},
		want: []string{q + "/" + schema.SummaryExportFile + ": valid JSON: evidence says AIPerf's summary, file says unexpected end of JSON input",
			q + "/" + schema.PhaseManifestFile + ": valid JSON: evidence says AIPerf's phase manifest"}},
	{name: "Task time source pointed at another field, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["task_time_source"].(map[string]any)["body"] = "timing.handler_ms"
			})
		},
		want: []string{q + "/results.json: task_time.p50_ms: evidence says",
			q + "/serve/records.jsonl: request ", "timing.task_ms: evidence says"}},

	{name: "deleted file", run: "qualified",
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(dir, q, "identity/native-batch.jsonl")))
		},
		want: []string{q + "/identity/native-batch.jsonl: listed in SHA256SUMS: evidence says listed with sha256"}},
	{name: "deleted file, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(dir, q, "identity/native-batch.jsonl")))
		},
		want: []string{q + "/identity/native-batch.jsonl: exact file set: evidence says the batch native Task's report (native mode batch), file says missing"}},
	{name: "deleted AIPerf export, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(dir, q, "aiperf/artifacts/profile_export_console.txt")))
		},
		want: []string{q + "/aiperf/artifacts/profile_export_console.txt: exact file set: evidence says required once stage benchmark passed"}},
	{name: "extra file", run: "qualified",
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, q, "notes.txt"), []byte("trust me\n"), 0o644))
		},
		want: []string{q + "/notes.txt: listed in SHA256SUMS: evidence says every file of the run folder listed, file says not listed (added after the run)"}},
	{name: "extra file, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, q, "notes.txt"), []byte("trust me\n"), 0o644))
		},
		want: []string{q + "/notes.txt: exact file set: evidence says no entry of schema.RowLayout admits it in this row, file says present"}},
	{name: "extra identity output, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			b, err := os.ReadFile(filepath.Join(dir, q, "identity/05-profiling-http.png"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, q, "identity/06-profiling-http.png"), b, 0o644))
		},
		want: []string{q + "/identity/06-profiling-http.png: exact file set"}},
	{name: "extra run file, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("all good\n"), 0o644))
		},
		want: []string{"notes.md: exact file set: evidence says no such file in a run folder"}},
	{name: "a symlink", run: "qualified",
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Symlink("row.md", filepath.Join(dir, q, "link.md")))
		},
		want: []string{q + "/link.md: regular file"}},

	{name: "skip recorded in run.json, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["skips"] = []any{q + ": no GPU on this host"} })
		},
		want: []string{q + "/results.json: status qualified: evidence says a run without skips; run.json records 1: " + q + ": no GPU on this host, file says qualified",
			"SUMMARY.md: line"}},
	{name: "stage not-run with status qualified, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { setStage(t, dir, q, "influence", "not-run") },
		want: []string{q + "/results.json: status qualified: evidence says every stage pass (a qualified row passed all of them), file says stages influence=not-run"}},
	{name: "stage status skip with status qualified, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) { setStage(t, dir, q, "identity", "skip") },
		want: []string{q + `/results.json: stage identity status: evidence says pass, fail or not-run, file says skip`,
			q + "/results.json: status qualified: evidence says every stage pass"}},
	{name: "stage dropped from the list, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				st := d["stages"].([]any)
				d["stages"] = st[:len(st)-1]
			})
		},
		want: []string{q + `/results.json: stages: evidence says "preflight build correctness serve benchmark quality influence identity" (the pipeline, in order)`}},
	{name: "skipped correctness case, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "correctness/junit.xml"), `name="test_refedit_e2e" time="[0-9.]+" */>`, `name="test_refedit_e2e" time="0"><skipped message="no GPU"/></testcase>`)
		},
		want: []string{q + "/results.json: correctness.skipped: evidence says 1 (test cases in correctness/junit.xml), file says 0",
			q + "/results.json: status qualified: evidence says correctness executed > 0, 0 skipped",
			q + "/row.md: correctness executed / skipped"}},
	{name: "warmup count changed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["warmup"] = 2 })
			setCell(t, dir, q, 6, "5 + 2")
		},
		want: []string{q + "/results.json: warmup: evidence says 1 (commands.jsonl aiperf --warmup-request-count), file says 2",
			q + "/results.json: warmup: evidence says 1 (warmup records in aiperf/artifacts/profile_export_raw.jsonl), file says 2"}},
	{name: "measured count in the AIPerf command changed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, q, "commands.jsonl"), `"--request-count","5"`, `"--request-count","6"`)
		},
		want: []string{q + "/results.json: measured: evidence says 6 (commands.jsonl aiperf --request-count), file says 5"}},
	{name: "edited SUMMARY.md status, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, "SUMMARY.md"), "| failed: stage identity failed |", "| qualified |")
		},
		want: []string{"SUMMARY.md: line 5: evidence says"}},
	{name: "edited index.html status, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, "index.html"), `data-status="failed"`, `data-status="qualified"`)
		},
		want: []string{"index.html: status of " + driftRow + ": evidence says failed"}},
	{name: "failed row relabelled qualified, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, driftRow, "results.json"), func(d map[string]any) { d["status"], d["reason"] = "qualified", "" })
			setCell(t, dir, driftRow, 13, "qualified")
		},
		want: []string{driftRow + "/results.json: status qualified: evidence says every stage pass",
			driftRow + "/results.json: status qualified: evidence says 6/6 native/HTTP pixel matches (every request, warmup included), file says 0/6 from the PNGs in identity/"}},
	{name: "edited server records, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, driftRow, "serve/records.jsonl"), `"task_ms":[0-9.]+`, `"task_ms":0.25`)
		},
		want: []string{driftRow + "/results.json: task_time.p50_ms: evidence says 0.25 (nearest-rank over serve/records.jsonl, field timing.task_ms joined on request_id)"}},

	{name: "server records name another output, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"output_sha256":"[0-9a-f]{64}"`, `"output_sha256":"`+strings.Repeat("ab", 32)+`"`)
		},
		want: []string{q + "/serve/records.jsonl: request ", "output_sha256: evidence says ", "(the PNG the response carried (aiperf/artifacts/profile_export_raw.jsonl, identity/", "file says " + strings.Repeat("ab", 32)}},
	{name: "server records name another input, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"input_sha256":"[0-9a-f]{64}"`, `"input_sha256":"`+strings.Repeat("cd", 32)+`"`)
		},
		want: []string{q + "/serve/records.jsonl: request ", "input_sha256: evidence says ", "(the reference image AIPerf sent (aiperf/artifacts/profile_export_raw.jsonl))", "file says " + strings.Repeat("cd", 32)}},

	{name: "the row's checkpoint renamed in results.json, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["checkpoint"].(map[string]any)["model"] = "Qwen/Qwen-Image-Edit-2511"
			})
		},
		want: []string{q + "/commands.jsonl: aiperf --model: evidence says Qwen/Qwen-Image-Edit-2511 (results.json checkpoint.model), file says qualkit/refedit-v1",
			q + "/serve/startup.json: spec.Model: evidence says Qwen/Qwen-Image-Edit-2511 (results.json checkpoint.model), file says qualkit/refedit-v1"}},
	{name: "a row folder copied as a second row, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.CopyFS(filepath.Join(dir, "refedit-v2"), os.DirFS(filepath.Join(dir, q))))
			editJSON(t, filepath.Join(dir, "refedit-v2", "results.json"), func(d map[string]any) {
				d["row"] = "refedit-v2"
				d["checkpoint"].(map[string]any)["name"] = "refedit-v2"
			})
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["rows"] = append(d["rows"].([]any), "refedit-v2") })
		},
		want: []string{"refedit-v2/aiperf/artifacts/profile_export_raw.jsonl: request ", "a request of this row alone (AIPerf draws a fresh id per request), file says also in refedit-v1/aiperf/artifacts/profile_export_raw.jsonl"}},

	{name: "every measured request moved to start together, both clocks, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			first := int64(0)
			editJSONL(t, filepath.Join(dir, q, schema.RawExportFile), func(d map[string]any) {
				m := d["metadata"].(map[string]any)
				if m["benchmark_phase"] != "profiling" {
					return
				}
				start := int64(m["request_start_ns"].(float64))
				if first == 0 {
					first = start
				}
				m["request_end_ns"] = m["request_end_ns"].(float64) - float64(start-first)
				m["request_start_ns"] = float64(first)
				d["start_perf_ns"] = d["start_perf_ns"].(float64) - float64(start-first)
			})
		},
		want: []string{q + "/aiperf/artifacts/profile_export_raw.jsonl: request ", " start: evidence says after request ", "ended (concurrency 1), file says "}},
	{name: "client latency below the server's handler time, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"handler_ms":[0-9.]+`, `"handler_ms":900000`)
		},
		want: []string{q + "/aiperf/artifacts/profile_export.jsonl: request ", "request_latency: evidence says at least the server's handler time, 900000 ms (serve/records.jsonl timing.handler_ms)"}},
	{name: "a handler shorter than its Task call, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"handler_ms":[0-9.]+`, `"handler_ms":0.001`)
		},
		want: []string{q + "/serve/records.jsonl: request ", "timing.handler_ms: evidence says at least the Task time"}},

	// The forgeries of issue 11, each with every SHA256SUMS recomputed.
	{name: "correctness result says fail, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "correctness/artifacts/result.json"), func(d map[string]any) { d["status"] = "fail" })
		},
		want: []string{q + `/correctness/artifacts/result.json: status: evidence says pass (stage correctness passed), file says fail`,
			q + "/correctness/artifacts/result.json: sha256 (results.json correctness.artifacts)"}},
	{name: "correctness result says pass where the family's word is passed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["correctness"].(map[string]any)["result_pass"] = "passed"
			})
		},
		want: []string{q + `/correctness/artifacts/result.json: status: evidence says passed (stage correctness passed), file says pass`}},
	{name: "correctness result says pass with 7 failed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "correctness/artifacts/result.json"), func(d map[string]any) {
				d["cases_passed"], d["failures"] = 30, []any{"blur", "sharpen", "invert", "grayscale", "sepia", "rotate", "mirror"}
			})
			fixArtifactHash(t, dir, q, "correctness/artifacts/result.json")
		},
		want: []string{q + "/correctness/artifacts/result.json: cases_passed: evidence says 37 (cases_total in the same file (status pass)), file says 30",
			q + `/correctness/artifacts/result.json: failures: evidence says none (status pass), file says ["blur"`}},
	{name: "correctness result names another bundle, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "correctness/artifacts/result.json"), func(d map[string]any) {
				d["bundle"].(map[string]any)["sha256_before"] = strings.Repeat("ef", 32)
			})
			fixArtifactHash(t, dir, q, "correctness/artifacts/result.json")
		},
		want: []string{q + "/correctness/artifacts/result.json: bundle.sha256_before: evidence says 8be1439b9a1d", "(the bundle the row built and served (results.json bundle.sha256)), file says " + strings.Repeat("ef", 32)}},
	{name: "correctness artifacts deleted, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, q, "correctness/artifacts")))
		},
		want: []string{q + "/correctness/artifacts/result.json: the correctness case's result: evidence says present (results.json names it, stage correctness passed), file says missing",
			q + "/correctness/artifacts/outputs/blur.png: a correctness artifact: evidence says present"}},
	{name: "a file added to the correctness artifacts, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, q, "correctness/artifacts/extra.json"), []byte(`{"status":"pass"}`), 0o644))
		},
		want: []string{q + "/correctness/artifacts/extra.json: a correctness artifact: evidence says only the files the case wrote (results.json correctness.artifacts), file says not listed there"}},
	{name: "JUnit in which another test passed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, q, "correctness/junit.xml"), `name="test_refedit_e2e"`, `name="test_something_easier"`)
		},
		want: []string{q + `/results.json: correctness.declared_cases: evidence says families.refedit.correctness.test_refedit_e2e.test_something_easier (the executed test cases in correctness/junit.xml), file says families.refedit.correctness.test_refedit_e2e.test_refedit_e2e`}},
	{name: "no declared correctness case, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["correctness"].(map[string]any)["declared_cases"] = []any{} })
		},
		want: []string{q + "/results.json: correctness.declared_cases: evidence says the test ids the family declared (stage correctness passed), file says none"}},
	{name: "server records deleted, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(dir, q, "serve/records.jsonl")))
		},
		want: []string{q + "/serve/records.jsonl: the server's records: evidence says present and readable (task_time_source joins on request_id, stage benchmark passed), file says missing"}},
	{name: "server records edited to agree with nothing, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, "serve/records.jsonl"), `"task_ms":[0-9.]+`, `"task_ms":0.25`)
		},
		want: []string{q + "/serve/records.jsonl: request ", "timing.task_ms: evidence says", "ms (response body timing.task_ms in aiperf/artifacts/profile_export_raw.jsonl), file says 0.25 ms"}},
	{name: "one-shot native log replaced, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, driftRow, "identity/02-native.log"), []byte("all good\n"), 0o644))
		},
		want: []string{driftRow + `/identity/02-native.log: the sha256 the native Task wrote: evidence says a line matching "output_sha256":\s*"([0-9a-f]{64})", file says none`}},
	{name: "native batch report replaced, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, q, "identity/native-batch.jsonl"), []byte(`{"load_ms": 1}`+"\nall good\n"), 0o644))
		},
		want: []string{q + `/identity/native-batch.jsonl: line 2: evidence says {"id", "output", "output_sha256", "task_ms"}, file says "all good"`}},
	{name: "one request latency changed consistently, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceFirstRe(t, filepath.Join(dir, q, schema.ProfileExportFile), `"request_latency":\{"value":[0-9.]+`, `"request_latency":{"value":0.5`)
		},
		want: []string{q + "/aiperf/artifacts/profile_export.jsonl: request ", " request_latency: evidence says", "(request_end_ns - request_start_ns), file says 0.5 ms"}},
	{name: "run.json says dirty under a qualified row, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["harness_dirty"] = true })
		},
		want: []string{q + "/results.json: provenance.harness_dirty: evidence says true (run.json), file says false",
			"run.json: harness_dirty: evidence says false with a known commit (row " + q + " claims qualified)"}},
	{name: "the benchmark stage shortened and the time budget recomputed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				shortenStage(d, "benchmark", 3)
			})
		},
		want: []string{q + "/results.json: stages[benchmark].wall_s: evidence says at least the span of its commands in commands.jsonl"}},
	{name: "the benchmark stage and the AIPerf command shortened together, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { shortenStage(d, "benchmark", 3) })
			editJSONL(t, filepath.Join(dir, q, "commands.jsonl"), func(d map[string]any) {
				if d["stage"] == "benchmark" {
					d["wall_s"] = d["wall_s"].(float64) - 3
				}
			})
		},
		want: []string{q + "/aiperf/artifacts/profile_export_raw.jsonl: request ", "time: evidence says inside the AIPerf command's run"}},
	{name: "the lease shortened to match a shorter row, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				l := d["lease"].(map[string]any)
				start, err := time.Parse(time.RFC3339Nano, l["start"].(string))
				require.NoError(t, err)
				l["start"] = start.Add(2 * time.Second).Format(time.RFC3339Nano)
			})
		},
		want: []string{q + "/commands.jsonl: build command go: evidence says inside the row's lease",
			q + "/results.json: time_budget.wall_s: evidence says at most the lease's span"}},
	{name: "AIPerf's CSV export edited, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, schema.CSVExportFile), `(?m)^Request Latency \(ms\),[0-9.]+,[0-9.]+,[0-9.]+,`, "Request Latency (ms),1.00,0.50,1.50,")
		},
		want: []string{q + "/" + schema.CSVExportFile + ": Request Latency (ms) avg / min / max: evidence says ", "file says 1.00 / 0.50 / 1.50"}},
	{name: "AIPerf's console export edited, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceAllRe(t, filepath.Join(dir, q, schema.ConsoleExportFile), `Request Latency \(ms\) │ +[0-9.]+ │ +[0-9.]+ │ +[0-9.]+ │`, "Request Latency (ms) │ 1.00 │ 0.50 │ 1.50 │")
		},
		want: []string{q + "/" + schema.ConsoleExportFile + ": Request Latency (ms) avg / min / max: evidence says ", "file says 1.00 / 0.50 / 1.50"}},
	{name: "the row names another venv than run.json, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["provenance"].(map[string]any)["venv_sha256"] = strings.Repeat("ab", 32)
			})
		},
		want: []string{q + `/results.json: provenance.venv_sha256: evidence says "" (run.json), file says ` + strings.Repeat("ab", 32)}},
	{name: "run.json's venv set edited, its sha256 kept, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) {
				d["venv_set"], d["venv_sha256"] = []any{"aiperf==0.13.0 " + strings.Repeat("cd", 32)}, strings.Repeat("ef", 32)
			})
		},
		want: []string{"run.json: venv_sha256: evidence says ", "(the sha256 of venv_set, one entry per line), file says " + strings.Repeat("ef", 32)}},
	{name: "dirty provenance on a qualified row, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["provenance"].(map[string]any)["harness_dirty"] = true })
			editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["harness_dirty"] = true })
		},
		want: []string{q + "/results.json: status qualified: evidence says a known commit of a clean tree (provenance)"}},
	{name: "PR.md prose changed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, "PR.md"), "## Checkpoint status", "## Checkpoint status (all reviewed and approved)")
		},
		want: []string{"PR.md: line ", `file says "## Checkpoint status (all reviewed and approved)"`}},
	{name: "index.html text changed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, "index.html"), "<h1>qualkit run", "<h1>Approved: qualkit run")
		},
		want: []string{"index.html: line ", "Approved: qualkit run"}},
	{name: "failed row made qualified by copying HTTP PNGs over native ones, checksums fixed", run: "drift", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			d := driftRow
			natives, err := filepath.Glob(filepath.Join(dir, d, "identity", "*-native.png"))
			require.NoError(t, err)
			for _, n := range natives {
				b, err := os.ReadFile(strings.Replace(n, "-native.png", "-http.png", 1))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(n, b, 0o644))
			}
		},
		want: []string{driftRow + "/identity/00-warmup-native.png: sha256: evidence says", "(what the native Task's log says it wrote (identity/00-native.log))"}},
	{name: "a batch report without its native log", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(dir, q, "identity/native-batch.log")))
		},
		want: []string{q + "/identity/native-batch.log: exact file set: evidence says the batch native Task's log (native mode batch), file says missing"}},
	{name: "a replay dropped from the batch report, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			path := filepath.Join(dir, q, "identity/native-batch.jsonl")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			writeFile(t, path, strings.Join(lines[:len(lines)-1], "\n")+"\n")
		},
		want: []string{q + "/identity/native-batch.jsonl: replays: evidence says 6 (one per request in aiperf/artifacts/profile_export_raw.jsonl), file says 5"}},
	{name: "a quality measure edited, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["quality"].(map[string]any)["requests"].([]any)[0].(map[string]any)["std"] = 0.9
			})
		},
		want: []string{q + "/results.json: quality.requests[", "].std: evidence says"}},
	{name: "quality criteria loosened in results.json, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["quality"].(map[string]any)["criteria"].(map[string]any)["pixel_std_min"] = 0.001
			})
		},
		want: []string{q + "/results.json: quality.criteria.pixel_std_min: evidence says a value the family's thresholds files state, file says 0.001"}},
	{name: "the family's thresholds copy edited, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			replaceIn(t, filepath.Join(dir, q, "quality/thresholds/1-quality.json"), `"psnr_min": 50.0`, `"psnr_min": 5.0`)
		},
		want: []string{q + "/results.json: quality.files quality/thresholds/1-quality.json sha256: evidence says"}},
	{name: "a time budget's ratio lowered, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) { d["time_budget"].(map[string]any)["ratio"] = 1.0 })
		},
		want: []string{q + "/results.json: time_budget.ratio: evidence says"}},
	{name: "model work inflated and the budget recomputed, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				tb := d["time_budget"].(map[string]any)
				m := tb["model_work"].(map[string]any)
				m["native_task_s"] = m["native_task_s"].(float64) + 5
				tb["model_work_s"] = tb["model_work_s"].(float64) + 5
				tb["harness_s"] = tb["harness_s"].(float64) - 5
				tb["ratio"] = tb["wall_s"].(float64) / tb["model_work_s"].(float64)
			})
		},
		want: []string{q + "/results.json: time_budget.model_work.native_task_s: evidence says", "the sum of task_ms in identity/native-batch.jsonl"}},
	{name: "served Task time shrunk, checksums fixed", run: "qualified", resum: true,
		edit: func(t *testing.T, dir, _ string) {
			editJSON(t, filepath.Join(dir, q, "results.json"), func(d map[string]any) {
				d["time_budget"].(map[string]any)["model_work"].(map[string]any)["served_task_s"] = 0.0
			})
		},
		want: []string{q + "/results.json: time_budget.model_work.served_task_s: evidence says at least"}},

	{name: "edited JUnit property", run: "qualified", junit: true,
		edit: func(t *testing.T, _, junit string) {
			replaceAllRe(t, junit, `name="qualkit.http_p50_ms" value="[0-9.]+"`, `name="qualkit.http_p50_ms" value="0.001"`)
		},
		want: []string{"/report qualkit.http_p50_ms: evidence says", `(nearest-rank over refedit-v1/aiperf/artifacts/profile_export.jsonl), file says 0.001`}},
	{name: "edited JUnit status", run: "qualified", junit: true,
		edit: func(t *testing.T, _, junit string) {
			replaceIn(t, junit, `name="qualkit.status" value="qualified"`, `name="qualkit.status" value="smoke-passed"`)
		},
		want: []string{"/report qualkit.status: evidence says qualified (refedit-v1/results.json), file says smoke-passed"}},
	{name: "a skipped test case in the JUnit", run: "qualified", junit: true,
		edit: func(t *testing.T, _, junit string) {
			replaceAllRe(t, junit, `name="TestMakeTestdata/refedit-v1/influence" time="[0-9.]+"></testcase>`,
				`name="TestMakeTestdata/refedit-v1/influence" time="0"><skipped message="skip"></skipped></testcase>`)
		},
		want: []string{"run.json: skips: evidence says 1 skipped test case(s)",
			q + "/results.json: status qualified: evidence says 1 skipped test case(s)",
			"TestMakeTestdata/refedit-v1/influence: evidence says stage influence passed", "file says skipped"}},
	{name: "a stage case missing from the JUnit", run: "qualified", junit: true,
		edit: func(t *testing.T, _, junit string) {
			replaceAllRe(t, junit, `<testcase [^>]*name="TestMakeTestdata/refedit-v1/serve"[^>]*></testcase>`, ``)
		},
		want: []string{"TestMakeTestdata/refedit-v1/serve: evidence says stage serve passed", "file says no such test case"}},
}

// The JUnit file is the anchor outside the folder: with every SHA256SUMS recomputed
// after an edit, the row's list no longer hashes to what the JUnit property says.
func TestJUnitAnchorsTheRowChecksums(t *testing.T) {
	dir := runCopy(t, "qualified")
	junit := junitCopy(t)
	require.NoError(t, Check(dir, junit), "untouched, the run and its JUnit agree")
	replaceIn(t, filepath.Join(dir, qualifiedRow, "serve/server.log"), "serving model", "SERVING model")
	resum(t, dir)
	require.NoError(t, Check(dir, ""), "a log line carries no claim: without the anchor the edit passes")
	failsWith(t, Check(dir, junit), "/report qualkit.sha256sums: evidence says", "(sha256 of refedit-v1/SHA256SUMS), file says")
}

// The sha256 the test log printed anchors the run's checksum list the same way.
func TestPrintedSumAnchorsTheRun(t *testing.T) {
	dir := runCopy(t, "qualified")
	b, err := os.ReadFile(filepath.Join(dir, schema.ChecksumFile))
	require.NoError(t, err)
	printed := bytesSHA256(b)
	rep := Verify(dir, "")
	rep.Anchor(printed)
	require.NoError(t, rep.Err())
	replaceIn(t, filepath.Join(dir, qualifiedRow, "serve/server.log"), "serving model", "SERVING model")
	resum(t, dir)
	require.NoError(t, Check(dir, ""), "a log line carries no claim: without the anchor the edit passes")
	rep = Verify(dir, "")
	rep.Anchor(printed)
	failsWith(t, rep.Err(), "SHA256SUMS: sha256 of the checksum list: evidence says "+printed+" (printed when the run ended)")
}

// A JUnit file of another run proves nothing about this one.
func TestJUnitOfAnotherRun(t *testing.T) {
	failsWith(t, Check(runCopy(t, "drift"), junitCopy(t)),
		"/report qualkit.evidence: evidence says a row of run ",
		"report case of row "+driftRow+": evidence says a test case whose qualkit.evidence is <evidence>/")
	failsWith(t, Check(runCopy(t, "qualified"), filepath.Join(t.TempDir(), "none.xml")), "none.xml: readable JUnit")
}

func setStage(t *testing.T, dir, row, stage, status string) {
	t.Helper()
	editJSON(t, filepath.Join(dir, row, "results.json"), func(d map[string]any) {
		for _, s := range d["stages"].([]any) {
			if m := s.(map[string]any); m["name"] == stage {
				m["status"] = status
			}
		}
	})
}

// Flipping the pictures to Required (once the harness writes them) makes a missing
// picture a missing file.
func TestPicturesRequiredOnceFlipped(t *testing.T) {
	saved := append([]schema.LayoutFile(nil), schema.RowLayout...)
	t.Cleanup(func() { schema.RowLayout = saved })
	for i, f := range schema.RowLayout {
		if strings.HasPrefix(f.Path, schema.PicturesDir+"/") {
			schema.RowLayout[i].Need, schema.RowLayout[i].Stage = schema.Required, schema.StageIdentity
		}
	}
	dir := runCopy(t, "qualified")
	require.NoError(t, Check(dir, ""))
	require.NoError(t, os.Remove(filepath.Join(dir, qualifiedRow, "pictures/latency.png")))
	resum(t, dir)
	failsWith(t, Check(dir, ""), qualifiedRow+"/pictures/latency.png: exact file set: evidence says required once stage identity passed")
}

// The pictures are re-rendered from the raw records: the committed ones are exactly
// what PictureInputs gives.
func TestPictureInputsFromRawRecords(t *testing.T) {
	dir := runCopy(t, "qualified")
	sheet, chart, err := PictureInputs(filepath.Join(dir, qualifiedRow))
	require.NoError(t, err)
	require.Len(t, sheet.Edits, 6)
	assert.Equal(t, "00 warmup", sheet.Edits[0].Label)
	assert.NotNil(t, sheet.Edits[5].Native)
	require.Len(t, chart.Requests, 6)
	assert.True(t, chart.Requests[0].Warmup)
	assert.False(t, chart.Requests[1].Warmup)
	assert.Equal(t, "response body timing.task_ms", chart.TaskSource)

	_, _, err = PictureInputs(filepath.Join(t.TempDir(), "run", "row"))
	assert.ErrorIs(t, err, ErrNoRawExport)
	assert.ErrorIs(t, WritePictures(filepath.Join(t.TempDir(), "run", "row")), ErrNoRawExport)
}

func TestNearestRank(t *testing.T) {
	for _, tt := range []struct {
		xs     []float64
		p50    float64
		p95    float64
		method string
	}{
		{[]float64{31.3, 33.0, 91.5, 52.4, 31.4}, 33.0, 91.5, "odd n"},
		{[]float64{4, 1, 3, 2}, 2, 4, "even n: the lower middle"},
		{[]float64{7}, 7, 7, "one value"},
	} {
		assert.Equal(t, tt.p50, nearestRank(tt.xs, 50), tt.method)
		assert.Equal(t, tt.p95, nearestRank(tt.xs, 95), tt.method)
	}
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	assert.Equal(t, 19.0, nearestRank(xs, 95), "ceil(0.95*20) = 19")
}

func TestSplitRow(t *testing.T) {
	cells, ok := splitRow(`| a | b \| c | d |`)
	require.True(t, ok)
	assert.Equal(t, []string{"a", "b | c", "d"}, cells)
	_, ok = splitRow("not a row")
	assert.False(t, ok)
}

func TestExtraInputs(t *testing.T) {
	got, err := extraInputs([]string{`{"guidance_scale":1.0,"seed":42,"size":"64x64"}`})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"guidance_scale": "1.0", "seed": "42", "size": "64x64"}, got)
	got, err = extraInputs([]string{"seed:42", "size:64x64"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"seed": "42", "size": "64x64"}, got)
	_, err = extraInputs([]string{"nonsense"})
	assert.Error(t, err)
}

// A run folder copied or renamed (evidence moved between machines, kept under another
// name) is the same run: its id is run.json's, never the folder's name.
func TestRenamedRunFolderStillChecks(t *testing.T) {
	dir := runCopy(t, "qualified")
	renamed := filepath.Join(t.TempDir(), "copied-from-ci")
	require.NoError(t, os.Rename(dir, renamed))
	require.NoError(t, Check(renamed, junitCopy(t)))
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The H200-pool runs committed under docs/evidence re-derive, each anchored by the sum
// its log printed (docs/evidence/h200-orders/h200-run.log's qual logs): the reference
// smoke row in both orders, and the row TRTMC's perf-serve reference backend served.
func TestCommittedH200RunPasses(t *testing.T) {
	for dir, c := range map[string]struct{ sums, row string }{
		"h200-orders/serial/20261205T180948Z-2707":        {"d7dc9d5089d3b969eb2475031284c2777a531674bdd989ef67dd84d170f11713", "reference-smoke"},
		"h200-orders/overlapped/20261205T181148Z-3952":    {"8844b7a96abba0ef532cc1c56f521589de86eb834c6f7577912ba6d75d1ee0c6", "reference-smoke"},
		"h200-perf-serve-reference/20261205T182255Z-1368": {"6dbac400ed8e05f34b1d483c618e57388c5913698b3da28a8e227a3a47567a5e", "perf-serve-reference-smoke"},
	} {
		t.Run(dir, func(t *testing.T) {
			rep := Verify(committed(t, dir), "")
			rep.Anchor(c.sums)
			require.NoError(t, rep.Err())
			assert.Equal(t, []string{c.row}, rep.Rows)
		})
	}
}

// The pair's measures are re-derived too: the H200 run is the committed run with a pair.
func TestQualityPairTamperingFails(t *testing.T) {
	const src = "h200-orders/serial/20261205T180948Z-2707"
	for name, tc := range map[string]struct {
		edit func(t *testing.T, row string)
		want string
	}{
		"the pair's deviation ratio edited": {func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) {
				d["quality"].(map[string]any)["pair"].(map[string]any)["std_ratio"] = 0.9
			})
		}, "reference-smoke/results.json: quality.pair.std_ratio: evidence says 1.000000"},
		"the case's reference image replaced": {func(t *testing.T, row string) {
			editPNG(t, filepath.Join(row, "correctness/artifacts/cpu.png"))
		}, "reference-smoke/results.json: quality.pair.psnr_db: evidence says"},
		"the pair judged against the case's GPU output instead of its CPU reference": {func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) {
				d["quality"].(map[string]any)["pair"].(map[string]any)["reference"] = "correctness/artifacts/gpu.png"
			})
		}, "reference-smoke/results.json: quality.pair.reference: evidence says correctness/artifacts/cpu.png (where the diffusers correctness case writes the pair's reference image), file says correctness/artifacts/gpu.png"},
		"a reference ratio bound the files do not state": {func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "results.json"), func(d map[string]any) {
				d["quality"].(map[string]any)["criteria"].(map[string]any)["reference_std_ratio_min"] = 0.01
			})
		}, "quality.criteria.reference_std_ratio_min: evidence says a value the family's thresholds files state, file says 0.01"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := committedCopy(t, src)
			tc.edit(t, filepath.Join(dir, "reference-smoke"))
			resum(t, dir)
			failsWith(t, Verify(dir, "").Err(), tc.want)
		})
	}
}

// fixArtifactHash rewrites results.json's record of a correctness artifact's sha256, as
// a forger who regenerates the row's files would.
func fixArtifactHash(t *testing.T, dir, row, rel string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, row, rel))
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	editJSON(t, filepath.Join(dir, row, "results.json"), func(d map[string]any) {
		for _, a := range d["correctness"].(map[string]any)["artifacts"].([]any) {
			if m := a.(map[string]any); m["path"] == rel {
				m["sha256"] = hex.EncodeToString(sum[:])
			}
		}
	})
}

// editJSONL rewrites each JSON line of a file through edit.
func editJSONL(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []byte
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		d := map[string]any{} // numbers as float64: nanosecond stamps lose their last digits, as a forger's would
		require.NoError(t, json.Unmarshal(line, &d))
		edit(d)
		nl, err := json.Marshal(d)
		require.NoError(t, err)
		out = append(append(out, nl...), '\n')
	}
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// shortenStage takes by seconds off a stage's wall in results.json and recomputes the
// time budget from it, as a forger who keeps the budget consistent would.
func shortenStage(d map[string]any, stage string, by float64) {
	for _, st := range d["stages"].([]any) {
		if m := st.(map[string]any); m["name"] == stage {
			m["wall_s"] = m["wall_s"].(float64) - by
		}
	}
	tb := d["time_budget"].(map[string]any)
	stages := tb["stages_s"].(map[string]any)
	stages[stage] = stages[stage].(float64) - by
	tb["wall_s"] = tb["wall_s"].(float64) - by
	tb["harness_s"] = tb["harness_s"].(float64) - by
	tb["ratio"] = tb["wall_s"].(float64) / tb["model_work_s"].(float64)
}

// The JUnit file after scripts/junitfix (properties on the suite) anchors the run as
// gotestsum's did, and an edited property there fails the same way.
func TestFixedJUnitAnchorsTheRun(t *testing.T) {
	dir := runCopy(t, "qualified")
	raw, err := os.ReadFile(junitCopy(t))
	require.NoError(t, err)
	fixed, err := junitfix.Fix(raw)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(p, fixed, 0o644))
	require.NoError(t, Check(dir, p))
	replaceAllRe(t, p, `name="TestMakeTestdata/refedit-v1/report qualkit.sha256sums" value="[0-9a-f]+"`,
		`name="TestMakeTestdata/refedit-v1/report qualkit.sha256sums" value="`+strings.Repeat("ab", 32)+`"`)
	failsWith(t, Check(dir, p), "/report qualkit.sha256sums: evidence says", "file says "+strings.Repeat("ab", 32))
}

// The JUnit file anchors the run as a whole (scripts/junitfix -run): an edit of a
// run-level file with every checksum list recomputed no longer matches it.
func TestJUnitAnchorsTheWholeRun(t *testing.T) {
	dir := runCopy(t, "qualified")
	raw, err := os.ReadFile(junitCopy(t))
	require.NoError(t, err)
	fixed, err := junitfix.Fix(raw)
	require.NoError(t, err)
	sums, err := os.ReadFile(filepath.Join(dir, schema.ChecksumFile))
	require.NoError(t, err)
	var info schema.RunInfo
	readJSONFile(t, filepath.Join(dir, schema.RunFile), &info)
	anchored, err := junitfix.AnchorRun(fixed, info.RunID, bytesSHA256(sums))
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(p, anchored, 0o644))
	require.NoError(t, Check(dir, p))

	editJSON(t, filepath.Join(dir, "run.json"), func(d map[string]any) { d["hostname"], d["cpus"] = "h200-node-7", 128 })
	forge(t, dir)
	require.NoError(t, Check(dir, ""), "PR.md regenerated, no raw file says the host: without the anchor the edit passes")
	failsWith(t, Check(dir, p), "SHA256SUMS: sha256 of the run's checksum list: evidence says ", "("+p+" qualkit.run_sha256sums)")

	_, err = junitfix.AnchorRun(fixed, "another-run", bytesSHA256(sums))
	require.ErrorContains(t, err, "no suite ran run another-run")
}

// The committed runs hold version-1 pictures (TestCommittedRunsPass); pictures drawn now
// are version 3 (the contact sheet in send order), and a run holding those checks too. A picture of neither version fails
// (the picture tamperings).
func TestPicturesOfEitherVersionCheck(t *testing.T) {
	dir := runCopy(t, "qualified")
	sheet := filepath.Join(dir, qualifiedRow, filepath.FromSlash(schema.ContactSheetFile))
	before, err := os.ReadFile(sheet)
	require.NoError(t, err)
	require.NoError(t, WritePictures(filepath.Join(dir, qualifiedRow)))
	after, err := os.ReadFile(sheet)
	require.NoError(t, err)
	require.NotEqual(t, before, after, "version 3 draws another legend and header")
	resum(t, dir)
	require.NoError(t, Check(dir, ""))
}

// A row of a family the checker knows no rules for fails the check: its quality pair
// could be held to nothing, so it is never waved through.
func TestUnknownFamilyFails(t *testing.T) {
	dir := runCopy(t, "qualified")
	editJSON(t, filepath.Join(dir, qualifiedRow, "results.json"), func(d map[string]any) {
		d["checkpoint"].(map[string]any)["backend"] = "acme"
	})
	resum(t, dir)
	failsWith(t, Verify(dir, "").Err(),
		qualifiedRow+`/results.json: checkpoint.backend: evidence says a backend whose evidence rules the checker knows (diffusers, refedit, trtmc, trtmc-perf-serve-reference; a family lists its own in families/all), file says "acme"`)
}

// Sources the checker did not read before, now cross-checked (issue 38): each edit, with
// every checksum recomputed, disagrees with another program's account of the same thing.
func TestRawSourcesDisagreeWithAForgery(t *testing.T) {
	q := qualifiedRow
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, row string)
		want string
	}{
		{"the case's console says a test failed, its JUnit says all passed", func(t *testing.T, row string) {
			replaceAllRe(t, filepath.Join(row, "correctness/output.log"), `=+ 1 passed, 1 warning in ([0-9.]+)s =+`, "======= 1 failed, 1 warning in ${1}s =======")
		}, q + `/correctness/output.log: passed / failed / skipped / errors: evidence says "1 / 0 / 0 / 0" (the test cases of correctness/junit.xml), file says "0 / 1 / 0 / 0"`},
		{"the case's console cut", func(t *testing.T, row string) {
			replaceAllRe(t, filepath.Join(row, "correctness/output.log"), `=+ 1 passed, 1 warning in [0-9.]+s =+`, "")
		}, q + "/correctness/output.log: pytest's summary line: evidence says the case's closing counts (stage correctness passed), file says none"},
		{"the profiling phase's slowest request gone from AIPerf's own phase summary", func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "aiperf/artifacts/phases/profiling/profile_export_aiperf.json"), func(d map[string]any) {
				d["request_latency"].(map[string]any)["max"] = d["request_latency"].(map[string]any)["max"].(float64) / 2
			})
		}, q + "/aiperf/artifacts/phases/profiling/profile_export_aiperf.json: request_latency min / max: evidence says"},
		{"a warmup request counted as measured in the phase summary", func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "aiperf/artifacts/phases/warmup/profile_export_aiperf.json"), func(d map[string]any) {
				d["request_latency"].(map[string]any)["count"] = 0.0
			})
		}, q + "/aiperf/artifacts/phases/warmup/profile_export_aiperf.json: request_latency.count: evidence says 1 (the warmup records of"},
		{"AIPerf's summary says cancelled while the row reads qualified", func(t *testing.T, row string) {
			editJSON(t, filepath.Join(row, "aiperf/artifacts/profile_export_aiperf.json"), func(d map[string]any) { d["was_cancelled"] = true })
		}, q + "/aiperf/artifacts/profile_export_aiperf.json: was_cancelled: evidence says false (stage benchmark passed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := runCopy(t, "qualified")
			tc.edit(t, filepath.Join(dir, q))
			resum(t, dir)
			failsWith(t, Verify(dir, "").Err(), tc.want)
		})
	}
}
