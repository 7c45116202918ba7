package harness

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/schema"
)

// caseFiles hashes a correctness case's test files and, for each, every conftest.py
// from its folder up to root (pytest's rootdir), as pytest would load them.
func caseFiles(tests []string, root string) ([]schema.FileHash, error) {
	var out []schema.FileHash
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] {
			return nil
		}
		seen[p] = true
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		out = append(out, schema.FileHash{Path: p, SHA256: sum})
		return nil
	}
	for _, t := range tests {
		if !filepath.IsAbs(t) && root != "" {
			t = filepath.Join(root, t)
		}
		if err := add(t); err != nil {
			return nil, err
		}
		for dir := filepath.Dir(t); ; dir = filepath.Dir(dir) {
			if c := filepath.Join(dir, "conftest.py"); isRegular(c) {
				if err := add(c); err != nil {
					return nil, err
				}
			}
			if dir == root || root == "" || filepath.Dir(dir) == dir || !strings.HasPrefix(dir, root) {
				break
			}
		}
	}
	return out, nil
}

// treeHashes lists every regular file under dir with its sha256, paths relative to base.
func treeHashes(base, dir string) ([]schema.FileHash, error) {
	out := []schema.FileHash{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file: the evidence keeps only files", p)
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, schema.FileHash{Path: filepath.ToSlash(rel), SHA256: sum})
		return nil
	})
	return out, err
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// caseScratch is the correctness case's scratch folder in the row's work folder (not
// evidence): CorrectnessSpec.Scratch.
const caseScratch = "correctness"

// correctness runs the family's own case, unchanged, on the exact bundle, and proves the
// bundle was not touched while it ran.
func (r *row) correctness(ctx context.Context) error {
	artifacts := filepath.Join(r.ev.Dir, filepath.FromSlash(schema.CorrectnessArtifacts))
	scratch := filepath.Join(r.env.Work, caseScratch)
	for _, d := range []string{artifacts, scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cc, err := r.c.Adapter.Correctness(r.env, CorrectnessSpec{Bundle: r.bundle, JUnit: r.ev.Path(schema.CorrectnessJUnit), Artifacts: artifacts, Scratch: scratch})
	if err != nil {
		return fmt.Errorf("correctness case: %w", err)
	}
	byCase := r.result.Bundle != nil && r.result.Bundle.ByCorrectness
	if byCase != (cc.Bundle != "") {
		return fmt.Errorf("the family's build and correctness case disagree on who builds the bundle (build command empty: %v, case names a bundle: %q)", byCase, cc.Bundle)
	}
	// results.json states the case's counts only once its JUnit gave them: a case cut
	// before it wrote one (interrupted, killed) has none to state.
	corr := &schema.Correctness{Declared: cc.Cases}
	if len(cc.Cases) == 0 {
		r.result.Correctness = corr
		return GateCases(schema.CaseCounts{}, nil)
	}
	if cc.Result != "" {
		rel, err := filepath.Rel(r.ev.Dir, cc.Result)
		if err != nil || !strings.HasPrefix(filepath.ToSlash(rel), schema.CorrectnessArtifacts+"/") {
			return fmt.Errorf("the family's correctness result file %s is not under the case's artifacts folder %s", cc.Result, artifacts)
		}
		corr.ResultFile = filepath.ToSlash(rel)
	}
	// The case's own code as it ran: its test files and the conftest.py files pytest
	// loads for them.
	if corr.CaseFiles, err = caseFiles(cc.TestFiles, cc.Command.Dir); err != nil {
		return fmt.Errorf("correctness case files: %w", err)
	}
	// The overlapped order loads the server beside the case when both fit; the case's
	// failure stops it (runStage stops what began early).
	if err := r.startServerEarly(ctx, byCase); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Correctness)
	defer cancel()
	mounts := at(false, r.ev.Path(schema.CorrectnessDir), scratch)
	if !byCase {
		mounts = append(mounts, at(true, filepath.Dir(r.bundle))...)
	}
	rec, runErr := r.job(ctx, schema.StageCorrectness, cc.Command, schema.CorrectnessLog, mounts...)
	r.caseS = rec.WallS
	if corr.Artifacts, err = treeHashes(r.ev.Dir, artifacts); err != nil {
		return fmt.Errorf("correctness artifacts: %w", err)
	}
	if !byCase {
		after, err := pathSHA256(r.bundle)
		if err != nil {
			return fmt.Errorf("bundle after correctness: %w", err)
		}
		if after != r.bundleSHA {
			return fmt.Errorf("bundle changed while the correctness case ran: sha256 %s before, %s after", r.bundleSHA, after)
		}
	}
	counts, err := ReadJUnit(cc.JUnit)
	if err != nil {
		if runErr != nil {
			return fmt.Errorf("%w (and the case wrote no readable JUnit: %v)", runErr, err)
		}
		return err
	}
	corr.CaseCounts = counts
	r.result.Correctness = corr
	if err := GateCases(counts, cc.Cases); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("every case passed but the command failed: %w", runErr)
	}
	if cc.Result != "" {
		if err := CheckResultFile(cc.Result); err != nil {
			return err
		}
	}
	if byCase {
		return r.caseBundle(cc.Bundle)
	}
	return nil
}

// caseBundle takes the bundle the passed case built as the row's: the one real path the
// family's pattern matches (FindCaseBundle), hashed now and again once the server stopped.
func (r *row) caseBundle(pattern string) error {
	path, matched, err := FindCaseBundle(pattern)
	if err != nil {
		return err
	}
	info := r.result.Bundle
	info.Matched = matched
	if info.SHA256, err = pathSHA256(path); err != nil {
		return fmt.Errorf("the bundle the case built: %w", err)
	}
	info.Path, info.Bytes = path, pathSize(path)
	r.bundle, r.bundleSHA = info.Path, info.SHA256
	r.prog.printf("the case built the bundle %s (sha256 %s)", info.Path, info.SHA256[:12])
	return r.ev.WriteJSON(schema.BundleFile, info)
}

// FindCaseBundle is the one bundle a passed case built, given the family's pattern: each
// match resolved to its real path, duplicates dropped (pytest 8.4.2, TRTMC's pin, links
// <test>_qcurrent to <test>_q0 under --basetemp, so one bundle matches twice), and
// exactly one real path must remain. It returns every match too, for the evidence.
func FindCaseBundle(pattern string) (string, []schema.MatchedPath, error) {
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return "", nil, fmt.Errorf("the family's bundle pattern %q: %w", pattern, err)
	}
	var real []string
	var matched []schema.MatchedPath
	for _, m := range matches {
		p, err := filepath.EvalSymlinks(m)
		if err != nil {
			return "", nil, fmt.Errorf("the bundle the case built: %w", err)
		}
		matched = append(matched, schema.MatchedPath{Path: m, Resolved: p})
		if !slices.Contains(real, p) {
			real = append(real, p)
		}
	}
	if len(real) != 1 {
		return "", nil, fmt.Errorf("the correctness case passed, but %d paths match the bundle it builds (%s), want exactly 1: %v", len(real), pattern, real)
	}
	return real[0], matched, nil
}
