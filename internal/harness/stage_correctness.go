package harness

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/schema"
)

// caseFiles hashes a correctness case's test files and, for each, every conftest.py
// from its folder up to root (pytest's rootdir), as pytest would load them.
func caseFiles(tests []string, root string) ([]schema.FileHash, error) {
	var paths []string
	add := func(p string) {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	for _, t := range tests {
		if !filepath.IsAbs(t) && root != "" {
			t = filepath.Join(root, t)
		}
		add(t)
		for dir := filepath.Dir(t); ; dir = filepath.Dir(dir) {
			c := filepath.Join(dir, "conftest.py")
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				add(c)
			}
			if dir == root || root == "" || filepath.Dir(dir) == dir || !strings.HasPrefix(dir, root) {
				break
			}
		}
	}
	var out []schema.FileHash
	for _, p := range paths {
		sum, err := schema.FileSHA256(p)
		if err != nil {
			return nil, err
		}
		out = append(out, schema.FileHash{Path: p, SHA256: sum})
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
		sum, err := schema.FileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, schema.FileHash{Path: filepath.ToSlash(rel), SHA256: sum})
		return nil
	})
	return out, err
}

// caseScratch is the case's scratch folder in the row's work folder (CorrectnessSpec.Scratch).
const caseScratch = "correctness"

// caseRun is what the correctness stage made; its case is nil before its JUnit gave counts.
type caseRun struct {
	corr    *schema.Correctness
	bundle  bundle
	scratch string
	wallS   float64
}

// correctness runs the family's own case, unchanged, on the exact bundle, and proves the
// bundle was not touched while it ran.
func (r *row) correctness(ctx context.Context, b bundle) (out caseRun, err error) {
	out.bundle = b
	artifacts := filepath.Join(r.ev.Dir, filepath.FromSlash(schema.CorrectnessArtifacts))
	out.scratch = filepath.Join(r.env.Work, caseScratch)
	if r.spec.Build == nil && r.spec.BundleDir != "" {
		// The case builds the bundle in the family's BundleDir: its scratch goes there.
		if err := os.MkdirAll(r.spec.BundleDir, 0o755); err != nil {
			return out, err
		}
		if out.scratch, err = os.MkdirTemp(r.spec.BundleDir, "case-"); err != nil {
			return out, err
		}
		dir := out.scratch
		r.stops.add(func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintf(os.Stderr, "qualkit: %s: could not remove the case's folder: %v\n", r.c.Name, err)
			}
		})
	}
	for _, d := range []string{artifacts, out.scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return out, err
		}
	}
	cc, err := r.c.Adapter.Correctness(r.env, family.CorrectnessSpec{Bundle: b.path, JUnit: r.ev.Path(schema.CorrectnessJUnit), Artifacts: artifacts, Scratch: out.scratch})
	if err != nil {
		return out, fmt.Errorf("correctness case: %w", err)
	}
	byCase := b.info != nil && b.info.ByCorrectness
	corr := &schema.Correctness{Declared: cc.Cases}
	d := judgeCaseDeclaration(caseDeclaration{BuildByCase: byCase, Bundle: cc.Bundle, Cases: cc.Cases, Result: cc.Result, RowDir: r.ev.Dir, Artifacts: artifacts})
	if d.Record {
		out.corr = corr
	}
	if d.Err != nil {
		return out, d.Err
	}
	corr.ResultFile = d.ResultFile
	if d.ResultFile != "" {
		corr.ResultPass = cc.ResultPass
	}
	if corr.CaseFiles, err = caseFiles(cc.TestFiles, cc.Command.Dir); err != nil {
		return out, fmt.Errorf("correctness case files: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Correctness)
	defer cancel()
	mounts := at(false, r.ev.Path(schema.CorrectnessDir), out.scratch)
	if !byCase {
		mounts = append(mounts, at(true, filepath.Dir(b.path))...)
	}
	rec, runErr := r.job(ctx, r.prog, cc.Command, schema.CorrectnessLog, r.env.GPUs, mounts...)
	out.wallS = rec.WallS
	if corr.Artifacts, err = treeHashes(r.ev.Dir, artifacts); err != nil {
		return out, fmt.Errorf("correctness artifacts: %w", err)
	}
	o := caseOutcome{Declared: cc.Cases, BuildByCase: byCase, BundleBefore: b.sha, RunErr: runErr, ResultFile: cc.Result, ResultPass: cc.ResultPass}
	if !byCase {
		o.BundleAfter, o.BundleErr = pathSHA256(b.path)
	}
	o.Counts, o.JUnitErr = ReadJUnit(cc.JUnit)
	if cc.Result != "" {
		o.Result, o.ResultErr = os.ReadFile(cc.Result)
	}
	o.Artifacts = corr.Artifacts
	v := judgeCase(o)
	if v.Counts != nil {
		corr.CaseCounts = *v.Counts
		out.corr = corr
	}
	if v.Err != nil {
		return out, v.Err
	}
	if byCase {
		out.bundle, err = r.caseBundle(b, cc.Bundle)
	}
	return out, err
}

// caseDeclaration is what the family's correctness case says of itself before it runs.
type caseDeclaration struct {
	BuildByCase bool     // the build stage left the bundle to the case (BundleInfo.ByCorrectness)
	Bundle      string   // the bundle pattern the case names; "" when it builds none
	Cases       []string // the JUnit ids it must execute
	Result      string   // its own result file, absolute; "" when it writes none
	RowDir      string   // the row's evidence folder
	Artifacts   string   // the case's artifacts folder in it
}

// caseDeclarationVerdict is whether the case may run (Err says why not); ResultFile is
// relative to the row folder.
type caseDeclarationVerdict struct {
	ResultFile string
	Record     bool
	Err        error
}

// judgeCaseDeclaration requires the build and the case to agree on who builds the
// bundle, the case to declare the ids it must execute, and its result file to lie in its
// artifacts folder.
func judgeCaseDeclaration(d caseDeclaration) caseDeclarationVerdict {
	if d.BuildByCase != (d.Bundle != "") {
		return caseDeclarationVerdict{Err: fmt.Errorf("the family's build and correctness case disagree on who builds the bundle (build command empty: %v, case names a bundle: %q)", d.BuildByCase, d.Bundle)}
	}
	if len(d.Cases) == 0 {
		return caseDeclarationVerdict{Record: true, Err: GateCases(schema.CaseCounts{}, nil)}
	}
	if d.Result == "" {
		return caseDeclarationVerdict{}
	}
	rel, err := filepath.Rel(d.RowDir, d.Result)
	if err != nil || !strings.HasPrefix(filepath.ToSlash(rel), schema.CorrectnessArtifacts+"/") {
		return caseDeclarationVerdict{Err: fmt.Errorf("the family's correctness result file %s is not under the case's artifacts folder %s", d.Result, d.Artifacts)}
	}
	return caseDeclarationVerdict{ResultFile: filepath.ToSlash(rel)}
}

// caseOutcome is what the correctness case's run left, each with the error of reading it.
type caseOutcome struct {
	Declared                  []string
	BuildByCase               bool
	BundleBefore, BundleAfter string
	BundleErr                 error
	RunErr                    error
	Counts                    schema.CaseCounts
	JUnitErr                  error
	ResultFile                string // "" when the family names none
	ResultPass                string // the status it states of a passed case ("" is "pass")
	Result                    []byte
	ResultErr                 error
	Artifacts                 []schema.FileHash // every file the case wrote in its artifacts folder
}

// caseVerdict is the correctness stage's; its counts are nil when the case left no
// readable JUnit, or changed the bundle.
type caseVerdict struct {
	Counts *schema.CaseCounts
	Err    error
}

// judgeCase passes a case that left the bundle as it was, executed exactly its declared
// ids, each passing (GateCases), whose command succeeded and whose own result file says
// "pass" (or that wrote none its family does not name).
func judgeCase(o caseOutcome) caseVerdict {
	if !o.BuildByCase {
		if o.BundleErr != nil {
			return caseVerdict{Err: fmt.Errorf("bundle after correctness: %w", o.BundleErr)}
		}
		if o.BundleAfter != o.BundleBefore {
			return caseVerdict{Err: fmt.Errorf("bundle changed while the correctness case ran: sha256 %s before, %s after", o.BundleBefore, o.BundleAfter)}
		}
	}
	if o.JUnitErr != nil {
		if o.RunErr != nil {
			return caseVerdict{Err: fmt.Errorf("%w (and the case wrote no readable JUnit: %v)", o.RunErr, o.JUnitErr)}
		}
		return caseVerdict{Err: o.JUnitErr}
	}
	v := caseVerdict{Counts: &o.Counts}
	if v.Err = GateCases(o.Counts, o.Declared); v.Err != nil {
		return v
	}
	switch {
	case o.RunErr != nil:
		v.Err = fmt.Errorf("every case passed but the command failed: %w", o.RunErr)
	case o.ResultFile != "":
		v.Err = judgeResultFile(o.ResultFile, o.Result, o.ResultErr, o.ResultPass)
	default:
		v.Err = undeclaredResult(o.Artifacts)
	}
	return v
}

// caseBundle takes the bundle the passed case built as the row's (FindCaseBundle).
func (r *row) caseBundle(b bundle, pattern string) (bundle, error) {
	path, matched, err := FindCaseBundle(pattern)
	if err != nil {
		return b, err
	}
	info := b.info
	info.Matched = matched
	if info.SHA256, err = pathSHA256(path); err != nil {
		return b, fmt.Errorf("the bundle the case built: %w", err)
	}
	info.Path, info.Bytes = path, pathSize(path)
	b.path, b.sha = info.Path, info.SHA256
	r.prog.printf("the case built the bundle %s (sha256 %s)", info.Path, info.SHA256[:12])
	return b, r.ev.WriteJSON(schema.BundleFile, info)
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

// undeclaredResult refuses a case that wrote a result.json its family does not name
// (CorrectnessCase.Result): its verdict would go unread. The checker holds a run to the
// same rule; here the row fails at the stage that can say how to fix it.
func undeclaredResult(artifacts []schema.FileHash) error {
	for _, a := range artifacts {
		if path.Base(a.Path) == "result.json" {
			return fmt.Errorf("the correctness case wrote %s, but the family names no result file (CorrectnessCase.Result): "+
				"set it so the case's own verdict is read", a.Path)
		}
	}
	return nil
}
