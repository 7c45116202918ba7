package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"qualkit/internal/schema"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// evidenceFile is one file of a fake evidence run. Checksummed files are listed in the
// run's SHA256SUMS with the sha256 of sumOf (the content itself when sumOf is empty),
// so a test can fake a file edited after the run.
type evidenceFile struct {
	run, rel, content string
	unlisted          bool
	sumOf             string
}

func writeEvidence(t *testing.T, files []evidenceFile, withSums map[string]bool) string {
	t.Helper()
	root := t.TempDir()
	sums := map[string][]string{}
	for _, f := range files {
		path := filepath.Join(root, f.run, filepath.FromSlash(f.rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(f.content), 0o644))
		if f.unlisted {
			continue
		}
		src := f.content
		if f.sumOf != "" {
			src = f.sumOf
		}
		h := sha256.Sum256([]byte(src))
		sums[f.run] = append(sums[f.run], hex.EncodeToString(h[:])+"  "+f.rel)
	}
	for run, lines := range sums {
		if !withSums[run] {
			continue
		}
		sort.Strings(lines)
		require.NoError(t, os.WriteFile(filepath.Join(root, run, schema.ChecksumFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	return root
}

// results is a results.json of that profile and status; "family-validated" is a failed
// row whose correctness stage passed, as the harness writes one.
func results(profile, status string) string {
	stages := `[]`
	if status == "family-validated" {
		status, stages = "failed", `[{"name": "correctness", "status": "pass"}, {"name": "serve", "status": "fail"}]`
	}
	return fmt.Sprintf(`{"checkpoint": {"profile": %q, "model": "Acme/Edit-1"}, "status": %q, "stages": %s, "extra": [1, 2]}`, profile, status, stages)
}

func TestStatusFromQualRowsAndEvidence(t *testing.T) {
	both := map[string]bool{"20260101T000000Z-1": true, "20260102T000000Z-2": true}
	const run1, run2 = "20260101T000000Z-1", "20260102T000000Z-2"
	tests := []struct {
		name        string
		implemented []string
		files       []evidenceFile
		sums        map[string]bool
		want        Status
		reason      string // substring of status_reason
		evidence    string // the results.json that proves it, relative to the evidence root
		notes       []string
	}{
		{name: "no row, no evidence", want: Planned, reason: "no qual row names this profile"},
		{name: "a row, no evidence", implemented: []string{"edit-full"}, want: Implemented, reason: "no verified evidence yet"},
		{name: "family-validated", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: results("edit-full", "family-validated")}},
			sums:  both, want: FamilyValidated, reason: `says "failed, correctness pass", verified against SHA256SUMS`, evidence: run1 + "/edit-full/results.json"},
		{name: "qualified", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "row-a/results.json", content: results("edit-full", "qualified")}},
			sums:  both, want: AIPerfQualified, evidence: run1 + "/row-a/results.json"},
		{name: "the strongest run wins over a later weaker one", implemented: []string{"edit-full"},
			files: []evidenceFile{
				{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified")},
				{run: run2, rel: "edit-full/results.json", content: results("edit-full", "family-validated")},
			},
			sums: both, want: AIPerfQualified, evidence: run1 + "/edit-full/results.json"},
		{name: "between equal levels the later run wins", implemented: []string{"edit-full"},
			files: []evidenceFile{
				{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified")},
				{run: run2, rel: "edit-full/results.json", content: results("edit-full", "qualified")},
			},
			sums: both, want: AIPerfQualified, evidence: run2 + "/edit-full/results.json"},
		{name: "evidence without a qual row stays planned",
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified")}},
			sums:  both, want: Planned, reason: `claims "qualified", but without a row it stays planned`},
		{name: "a status that proves nothing", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: results("edit-full", "failed")}},
			sums:  both, want: Implemented},
		{name: "without checkpoint.profile the row folder names the profile", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: `{"status": "qualified"}`}},
			sums:  both, want: AIPerfQualified, evidence: run1 + "/edit-full/results.json"},
		{name: "edited after the run", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified"), sumOf: results("edit-full", "failed")}},
			sums:  both, want: Implemented, notes: []string{"sha256 differs from SHA256SUMS"}},
		{name: "not listed in the checksums", implemented: []string{"edit-full"},
			files: []evidenceFile{
				{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified"), unlisted: true},
				{run: run1, rel: "other/log.txt", content: "x"},
			},
			sums: both, want: Implemented, notes: []string{"not listed in SHA256SUMS"}},
		{name: "a run without SHA256SUMS", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: results("edit-full", "qualified")}},
			want:  Implemented, notes: []string{"no readable SHA256SUMS", "none of its results count"}},
		{name: "unparsable results", implemented: []string{"edit-full"},
			files: []evidenceFile{{run: run1, rel: "edit-full/results.json", content: `{"status": `}},
			sums:  both, want: Implemented, notes: []string{"edit-full/results.json", "not counted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := ""
			if tt.files != nil {
				root = writeEvidence(t, tt.files, tt.sums)
			}
			p, err := LoadProgress(tt.implemented, root)
			require.NoError(t, err)
			inv := loadSynthetic(t)
			inv.ApplyProgress(p)
			got := byProfile(inv)["edit-full"]
			assert.Equal(t, tt.want, got.Status, got.StatusReason)
			assert.Contains(t, got.StatusReason, tt.reason)
			if tt.evidence != "" {
				assert.Equal(t, filepath.Join(root, filepath.FromSlash(tt.evidence)), got.Evidence)
			} else {
				assert.Empty(t, got.Evidence)
			}
			require.Len(t, p.Notes, min(len(tt.notes), 1), "notes: %v", p.Notes)
			for _, n := range tt.notes {
				assert.Contains(t, p.Notes[0], n)
			}
			assert.Equal(t, Planned, byProfile(inv)["edit-full-fp8"].Status, "other profiles are untouched")
		})
	}
}

func TestLoadProgressWithoutEvidenceRoot(t *testing.T) {
	p, err := LoadProgress([]string{"edit-full"}, filepath.Join(t.TempDir(), "evidence"))
	require.NoError(t, err)
	assert.Empty(t, p.Notes)
	s, _, _ := p.status("edit-full")
	assert.Equal(t, Implemented, s)
}
