// Package merged combines the run folders of CI shards (one matrix entry each, see
// scripts/matrix) into one merged run: every shard's folder kept verbatim with its own
// SHA256SUMS and JUnit, plus a SUMMARY.md, PR.md, junit.xml and SHA256SUMS over them all.
// The renderers here are deterministic, so the checker (internal/evidencecheck) re-derives
// the merged files from the shards and requires the same bytes.
//
// A merged run is refused, at merge time and by the checker alike, when the shards do
// not cover the matrix exactly once from one commit (Gaps) or a shard does not answer
// it (Answer): never a silent gap.
package merged

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"qualkit/internal/attest"
	"qualkit/internal/schema"
)

// The merged run's own files; every shard lies under ShardsDir/<name>/.
const (
	ManifestFile = "merged.json"
	MatrixFile   = "matrix.json"
	JUnitFile    = "junit.xml"
	SummaryFile  = "SUMMARY.md"
	PRFile       = "PR.md"
	IndexFile    = "index.html"
	SumsFile     = "SHA256SUMS"
	ShardsDir    = "shards"
)

// Version is the merged run's format Merge writes (Manifest.Version): 2 adds index.html
// (prsummary's version 3), PR.md's row sections and each shard's signature state; 3
// renders index.html as prsummary's version 4. A merged.json without one is version 1.
const Version = 3

// Manifest is merged.json: which shards the merged run holds and what each claims.
type Manifest struct {
	Version  int      `json:"version,omitempty"`
	MergedID string   `json:"merged_id"` // "merged-" + the first 12 hex of the sha256 over the shards' SHA256SUMS sums
	Commit   string   `json:"harness_commit"`
	Dirty    bool     `json:"harness_dirty"`
	Rows     []string `json:"rows"`
	Shards   []Shard  `json:"shards"`
}

// Shard is one shard as the merged run keeps it. Paths are relative to the merged folder.
type Shard struct {
	Name        string   `json:"name"`
	RunID       string   `json:"run_id"`
	Dir         string   `json:"dir"`   // shards/<name>/<run id>
	JUnit       string   `json:"junit"` // shards/<name>/junit.xml
	SumsSHA256  string   `json:"sha256sums_sha256"`
	JUnitSHA256 string   `json:"junit_sha256"`
	Commit      string   `json:"harness_commit"`
	Dirty       bool     `json:"harness_dirty"`
	Rows        []string `json:"rows"`
	// CorrectnessOnly: a correctness-only run (run.json correctness_only), kept beside the
	// shard whose row met a hardware limit as its local verification; it covers no row.
	CorrectnessOnly bool `json:"correctness_only,omitempty"`
	// Signed says whether the shard's folder holds an attestation (internal/attest), and
	// KeyID names the key its envelope names: a shard merged unsigned (make merge-evidence
	// UNSIGNED=1) reads so in merged.json and PR.md. Version 2 on.
	Signed bool   `json:"signed"`
	KeyID  string `json:"key_id,omitempty"`
}

// OwnFiles are the merged run's own files (beside the shards' folders) for its version.
func OwnFiles(m Manifest) []string {
	own := []string{ManifestFile, MatrixFile, SummaryFile, PRFile, JUnitFile, SumsFile}
	if m.Version >= 2 {
		own = append(own, IndexFile)
	}
	return own
}

func Unsigned(m Manifest) []string {
	var out []string
	for _, s := range m.Shards {
		if !s.Signed {
			out = append(out, s.Name)
		}
	}
	return out
}

// MatrixRows reads the row names of a matrix (scripts/matrix's {"matrix": {"include":
// [{"name": ...}]}}), in order.
func MatrixRows(b []byte) ([]string, error) {
	var m struct {
		Matrix struct {
			Include []struct {
				Name string `json:"name"`
			} `json:"include"`
		} `json:"matrix"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var rows []string
	for i, e := range m.Matrix.Include {
		if e.Name == "" {
			return nil, fmt.Errorf("matrix: include[%d] has no name", i)
		}
		rows = append(rows, e.Name)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("matrix: no include entry")
	}
	return rows, nil
}

// MatrixCreated reads when a matrix was made (scripts/matrix's "created"): without it no
// shard can be shown to answer this matrix rather than an earlier one.
func MatrixCreated(b []byte) (time.Time, error) {
	var m struct {
		Created time.Time `json:"created"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return time.Time{}, fmt.Errorf("matrix: %w", err)
	}
	if m.Created.IsZero() {
		return time.Time{}, fmt.Errorf("matrix: no created time (scripts/matrix writes one): no shard can be shown to answer it rather than an earlier matrix")
	}
	return m.Created, nil
}

// Answer lists every way the shard name, whose run folder is runDir, fails to answer the
// matrix of rows made at created: its run began before the matrix was made, or, signed,
// its attest.ShardClaim names another shard, an entry it did not run, or another matrix.
// The claim is read unverified; the signature check verifies the envelope.
func Answer(rows []string, created time.Time, name, runDir string) []string {
	var info schema.RunInfo
	if err := schema.ReadJSON(filepath.Join(runDir, schema.RunFile), &info); err != nil {
		return []string{fmt.Sprintf("shard %s: run.json: %v", name, err)}
	}
	var out []string
	if info.Started.Before(created) {
		out = append(out, fmt.Sprintf("shard %s: its run %s began %s, before its matrix was made (%s): a run of an earlier matrix",
			name, info.RunID, info.Started.UTC().Format(time.RFC3339), created.UTC().Format(time.RFC3339)))
	}
	claim, err := attest.Claimed(runDir)
	switch {
	case err != nil:
		out = append(out, fmt.Sprintf("shard %s: %s: %v", name, attest.File, err))
	case claim == nil:
		if attest.Inspect(runDir).Signed {
			out = append(out, fmt.Sprintf("shard %s: its run is signed, but its statement names no shard and matrix entry (make shard SIGN_KEY=... MATRIX_CREATED=... signs them)", name))
		}
	default:
		if claim.Name != name {
			out = append(out, fmt.Sprintf("shard %s holds a run signed as shard %s", name, claim.Name))
		}
		if !slices.Contains(rows, claim.MatrixEntry) || !slices.Contains(info.Rows, claim.MatrixEntry) {
			out = append(out, fmt.Sprintf("shard %s: its run was signed answering matrix entry %s, which the matrix does not list or the run did not run (%s)", name, claim.MatrixEntry, strings.Join(info.Rows, ", ")))
		}
		if !claim.MatrixCreated.Equal(created) {
			out = append(out, fmt.Sprintf("shard %s: its run was signed answering the matrix made %s, this one was made %s",
				name, claim.MatrixCreated.UTC().Format(time.RFC3339), created.UTC().Format(time.RFC3339)))
		}
	}
	return out
}

// Gaps lists every way the shards fail to cover the matrix exactly once, from one commit.
func Gaps(matrix []string, shards []Shard) []string {
	var out []string
	inMatrix := map[string]bool{}
	for _, r := range matrix {
		inMatrix[r] = true
	}
	ranIn := map[string][]string{}
	names := map[string]bool{}
	for _, s := range shards {
		if names[s.Name] {
			out = append(out, fmt.Sprintf("shard %s is given twice", s.Name))
		}
		names[s.Name] = true
		if len(s.Rows) == 0 {
			out = append(out, fmt.Sprintf("shard %s ran no row", s.Name))
		}
		for _, r := range s.Rows {
			if !s.CorrectnessOnly {
				ranIn[r] = append(ranIn[r], s.Name)
			}
			if !inMatrix[r] {
				out = append(out, fmt.Sprintf("shard %s ran row %s, which the matrix does not list", s.Name, r))
			}
		}
		if s.Commit != shards[0].Commit || s.Dirty != shards[0].Dirty {
			out = append(out, fmt.Sprintf("shard %s ran commit %s, shard %s ran %s: a merged run is of one commit",
				s.Name, commitText(s.Commit, s.Dirty), shards[0].Name, commitText(shards[0].Commit, shards[0].Dirty)))
		}
	}
	for _, r := range matrix {
		switch in := ranIn[r]; {
		case len(in) == 0:
			out = append(out, fmt.Sprintf("matrix row %s: no shard ran it (missing shard)", r))
		case len(in) > 1:
			out = append(out, fmt.Sprintf("matrix row %s: ran in %d shards (%s): duplicated", r, len(in), strings.Join(in, ", ")))
		}
	}
	return out
}

// RowResult is what the merge reads of a row's results.json.
type RowResult struct {
	Status      string `json:"status"`
	FailureKind string `json:"failure_kind"`
	Correctness *struct {
		Executed int `json:"executed"`
		Skipped  int `json:"skipped"`
	} `json:"correctness"`
}

func ReadRowResult(runDir, row string) (RowResult, error) {
	var res RowResult
	if err := schema.ReadJSON(filepath.Join(runDir, row, schema.ResultsFile), &res); err != nil {
		return res, fmt.Errorf("row %s: results.json: %v", row, err)
	}
	return res, nil
}

// Verifications lists every way a correctness-only shard fails to be a row's local
// verification: each of its rows correctness-verified, the matrix's shard of that row
// failed as a hardware limit, one verification per row. result reads a shard's row.
func Verifications(shards []Shard, result func(s Shard, row string) (RowResult, error)) []string {
	var out []string
	ranIn, verified := map[string]Shard{}, map[string]string{}
	for _, s := range shards {
		if !s.CorrectnessOnly {
			for _, r := range s.Rows {
				ranIn[r] = s
			}
		}
	}
	for _, s := range shards {
		if !s.CorrectnessOnly {
			continue
		}
		for _, r := range s.Rows {
			if other, ok := verified[r]; ok {
				out = append(out, fmt.Sprintf("row %s: correctness-only shards %s and %s both verify it: keep one", r, other, s.Name))
			}
			verified[r] = s.Name
			v, err := result(s, r)
			if err != nil {
				out = append(out, fmt.Sprintf("correctness-only shard %s: %v", s.Name, err))
				continue
			}
			if v.Status != schema.StatusCorrectnessOnly {
				out = append(out, fmt.Sprintf("correctness-only shard %s: row %s is %s, not %s", s.Name, r, v.Status, schema.StatusCorrectnessOnly))
			}
			pub, ok := ranIn[r]
			if !ok {
				continue // Gaps names the row no shard ran
			}
			p, err := result(pub, r)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("shard %s: %v", pub.Name, err))
			case p.Status != schema.StatusFailed || p.FailureKind != schema.KindHardware:
				out = append(out, fmt.Sprintf("correctness-only shard %s verifies row %s, but shard %s did not fail it as a hardware limit (%s %s): "+
					"a correctness-only run stands only beside a hardware-limit failure", s.Name, r, pub.Name, p.Status, p.FailureKind))
			}
		}
	}
	return out
}

func commitText(c string, dirty bool) string {
	if c == "" {
		c = "(unknown)"
	}
	if dirty {
		c += " with uncommitted changes"
	}
	return c
}

func sumHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// ID is the merged run's id, derived from its shards' checksum lists.
func ID(shards []Shard) string {
	sums := make([]string, len(shards))
	for i, s := range shards {
		sums[i] = s.SumsSHA256
	}
	sort.Strings(sums)
	h := sha256.Sum256([]byte(strings.Join(sums, "\n")))
	return "merged-" + hex.EncodeToString(h[:6])
}

// Summary is SUMMARY.md: the rows table's header (from row.md), then every row's line
// from its row.md, by row name.
func Summary(m Manifest, header string, rowLines map[string]string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# qualkit merged run %s\n\n", m.MergedID)
	fmt.Fprintf(&b, "%d shard(s) of commit %s; each shard's folder under %s/ is a whole run with its own SHA256SUMS and JUnit.\n\n",
		len(m.Shards), commitText(m.Commit, m.Dirty), ShardsDir)
	b.WriteString(header)
	for _, r := range m.Rows {
		b.WriteString(rowLines[r] + "\n")
	}
	for _, s := range m.Shards {
		if !s.CorrectnessOnly {
			continue
		}
		fmt.Fprintf(&b, "\n## Local verification: shard %s (correctness-only run %s)\n\n", s.Name, s.RunID)
		b.WriteString("The row's unchanged correctness case, run alone on a host that has the memory, beside the public run whose row met a hardware limit. It qualifies nothing.\n\n")
		b.WriteString(header)
		for _, r := range s.Rows {
			b.WriteString(rowLines[s.Name+"/"+r] + "\n")
		}
	}
	return []byte(b.String())
}

// PR is PR.md: per row, its status, the shard that ran it and the anchor of that shard.
func PR(m Manifest, status map[string]string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "## qualkit: merged run %s\n\n", m.MergedID)
	fmt.Fprintf(&b, "Commit %s, %d row(s) in %d shard(s). Check it: `make check-evidence DIR=<this folder>`.\n\n",
		commitText(m.Commit, m.Dirty), len(m.Rows), len(m.Shards))
	b.WriteString("| row | status | shard | shard run | shard SHA256SUMS sha256 |\n|---|---|---|---|---|\n")
	byRow := map[string]Shard{}
	for _, s := range m.Shards {
		for _, r := range s.Rows {
			if !s.CorrectnessOnly {
				byRow[r] = s
			}
		}
	}
	for _, r := range m.Rows {
		s := byRow[r]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` |\n", r, status[r], s.Name, s.RunID, s.SumsSHA256)
	}
	for _, s := range m.Shards {
		if s.CorrectnessOnly {
			fmt.Fprintf(&b, "\nLocal verification (the seed's rule for a hardware limit): shard %s, run %s, ran the unchanged correctness case of %s alone "+
				"(SHA256SUMS sha256 `%s`). The rows above stay failed.\n", s.Name, s.RunID, strings.Join(s.Rows, ", "), s.SumsSHA256)
		}
	}
	return []byte(b.String())
}

var (
	suitesOpen  = regexp.MustCompile(`(?s)^\s*(?:<\?xml[^>]*\?>\s*)?<testsuites([^>]*)>(.*)</testsuites>\s*$`)
	suitesEmpty = regexp.MustCompile(`(?s)^\s*(?:<\?xml[^>]*\?>\s*)?<testsuites([^>]*)/>\s*$`)
	attrRe      = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// JUnit is junit.xml: every shard's test suites, verbatim and in shard order, under one
// <testsuites> whose totals add the shards'.
func JUnit(shards [][]byte) ([]byte, error) {
	totals := map[string]float64{}
	var body strings.Builder
	for i, b := range shards {
		attrs, inner := "", ""
		if m := suitesOpen.FindSubmatch(b); m != nil {
			attrs, inner = string(m[1]), string(m[2])
		} else if m := suitesEmpty.FindSubmatch(b); m != nil {
			attrs = string(m[1])
		} else {
			return nil, fmt.Errorf("shard JUnit %d: not one <testsuites> document", i+1)
		}
		for _, a := range attrRe.FindAllStringSubmatch(attrs, -1) {
			if v, err := strconv.ParseFloat(a[2], 64); err == nil {
				totals[a[1]] += v
			}
		}
		body.WriteString(strings.Trim(inner, "\n"))
		body.WriteString("\n")
	}
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	fmt.Fprintf(&b, "<testsuites tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n",
		int(totals["tests"]), int(totals["failures"]), int(totals["errors"]), totals["time"])
	b.WriteString(body.String())
	b.WriteString("</testsuites>\n")
	return b.Bytes(), nil
}

// splitRowMD splits a row.md into the table header (two lines) and the row's line.
func splitRowMD(rowMD []byte) (header, line string, err error) {
	lines := strings.Split(strings.TrimSuffix(string(rowMD), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[2], "| ") {
		return "", "", fmt.Errorf("row.md: want a header, a separator and one table row")
	}
	return lines[0] + "\n" + lines[1] + "\n", lines[2], nil
}

// ShardPaths are a shard's folder and JUnit inside the merged run.
func ShardPaths(name, runID string) (dir, junit string) {
	return path.Join(ShardsDir, name, runID), path.Join(ShardsDir, name, JUnitFile)
}
