package inventory

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"qualkit/internal/schema"
)

// The evidence the inventory reads is qualkit's own (internal/schema):
//
//	<root>/<run-id>/SHA256SUMS             sha256sum lines, paths relative to <run-id>/
//	<root>/<run-id>/<row>/results.json     schema.Result
//
// A results.json proves a level only if SHA256SUMS of its run lists it with the matching
// sha256: a claim that could have been edited afterwards proves nothing. Status
// "qualified" proves aiperf-qualified; any result whose correctness stage passed proves
// family-validated (the family's unchanged case passed on the exact bundle), the rule
// the PR summary applies too. Without checkpoint.profile the row folder names the profile.

// Proof is one verified results.json.
type Proof struct {
	Profile string
	Level   Status
	RunID   string
	Path    string // the results.json, as found under the evidence root
	Claim   string // its status value, verbatim
}

// readEvidence walks <root>/<run-id>/<row>/results.json. A missing root is no evidence.
// Unreadable or unverifiable files do not stop the inventory: they prove nothing, and
// a note says why, so a reader can tell "no evidence" from "evidence rejected".
func readEvidence(root string) (proofs []Proof, notes []string, err error) {
	if root == "" {
		return nil, nil, nil
	}
	runs, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("evidence root %s: %w", root, err)
	}
	for _, run := range runs {
		if !run.IsDir() {
			continue
		}
		runDir := filepath.Join(root, run.Name())
		results, _ := filepath.Glob(filepath.Join(runDir, "*", schema.ResultsFile))
		if len(results) == 0 {
			continue
		}
		sort.Strings(results)
		sums, err := readChecksums(filepath.Join(runDir, schema.ChecksumFile))
		if err != nil {
			notes = append(notes, fmt.Sprintf("evidence run %s: %v: none of its results count", runDir, err))
			continue
		}
		for _, path := range results {
			p, note := readProof(runDir, path, sums)
			if note != "" {
				notes = append(notes, note)
			}
			if p != nil {
				p.RunID = run.Name()
				proofs = append(proofs, *p)
			}
		}
	}
	return proofs, notes, nil
}

func readProof(runDir, path string, sums map[string]string) (*Proof, string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Sprintf("evidence %s: %v", path, err)
	}
	rel, _ := filepath.Rel(runDir, path)
	sum := sha256.Sum256(raw)
	switch want, listed := sums[filepath.ToSlash(rel)]; {
	case !listed:
		return nil, fmt.Sprintf("evidence %s: not listed in %s: not counted", path, schema.ChecksumFile)
	case want != hex.EncodeToString(sum[:]):
		return nil, fmt.Sprintf("evidence %s: sha256 differs from %s: edited after the run, not counted", path, schema.ChecksumFile)
	}
	var res schema.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Sprintf("evidence %s: %v: not counted", path, err)
	}
	p := &Proof{Profile: res.Checkpoint.Profile, Path: path, Claim: res.Status}
	if p.Profile == "" {
		p.Profile = filepath.Base(filepath.Dir(path))
	}
	if res.Checkpoint.Double || res.Checkpoint.Smoke || res.Status == schema.StatusDouble {
		return nil, "" // a contract double or a smoke profile proves nothing of the checkpoint
	}
	if res.Status == schema.StatusQualified {
		p.Level = AIPerfQualified
		return p, ""
	}
	if st, ok := res.Stage(schema.StageCorrectness); ok && st.Status == schema.Pass {
		p.Level, p.Claim = FamilyValidated, fmt.Sprintf("%s, correctness %s", res.Status, st.Status)
		return p, ""
	}
	return nil, ""
}

// readChecksums parses sha256sum output ("<hex>  <path>", "*" marks binary mode).
func readChecksums(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("no readable %s (%w)", schema.ChecksumFile, err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, file, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		file = strings.TrimPrefix(strings.TrimLeft(file, " "), "*")
		sums[filepath.ToSlash(file)] = strings.ToLower(sum)
	}
	return sums, sc.Err()
}
