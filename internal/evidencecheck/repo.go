package evidencecheck

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"qualkit/internal/schema"
)

// The checks in this file hold a run to the commit it names. They need the repository
// (Options.Repo): evidencecheck runs no git itself.

// Repo is the repository a run's harness commit is read from.
type Repo interface {
	HasCommit(commit string) (bool, error)
	// Paths are slash-separated.
	Paths(commit string) ([]string, error)
	File(commit, path string) ([]byte, error)
	// Tables are the qual tables' rows as the commit's own code defines them.
	Tables(commit string) ([]schema.TableRow, error)
}

// Options are what a check may be given besides the run folder.
type Options struct {
	// JUnit is the run's JUnit file ("" when not given).
	JUnit string
	// Repo nil: the commit, gates and tables are not verifiable (a Note; a problem when Strict).
	Repo   Repo
	Strict bool
	// RequireRunAnchor requires qualkit.run_sha256sums (scripts/junitfix -run): what a run
	// must show to vouch for a bundle another run reuses.
	RequireRunAnchor bool
}

// NotVerifiable is the note of a check given no repository.
const NotVerifiable = "commit not verifiable: the check ran outside a repository (the harness commit, the gates and case files at it, and its qual tables are not compared)"

// note records what could not be verified: a problem under Options.Strict.
func (c *checker) note(file, claim, why string) {
	if c.opts.Strict {
		c.fail(file, claim, "verifiable (strict)", why)
		return
	}
	c.rep.Notes = append(c.rep.Notes, file+": "+claim+": "+why)
}

// checkCommit reports whether the files and tables at the run's commit can be read.
func (c *checker) checkCommit() bool {
	if c.info == nil {
		return false
	}
	if c.opts.Repo == nil {
		if c.opts.Strict {
			c.fail(schema.RunFile, "harness_commit", "a commit of the repository the check runs in (strict)", "not verifiable: no repository")
		} else {
			c.rep.Notes = append(c.rep.Notes, NotVerifiable)
		}
		return false
	}
	commit := c.info.HarnessCommit
	if !shaHex.MatchString(commit) {
		// "unknown (not a git checkout)": the row is dirty (checkProvenance holds it there).
		c.note(schema.RunFile, "harness_commit", fmt.Sprintf("%q names no commit", commit))
		return false
	}
	ok, err := c.opts.Repo.HasCommit(commit)
	switch {
	case err != nil:
		c.note(schema.RunFile, "harness_commit", "the repository could not be read: "+err.Error())
		return false
	case !c.truth(ok, schema.RunFile, "harness_commit", "a commit of this repository (git cat-file -e)", commit+": no such commit"):
		return false
	}
	return true
}

type repoFiles struct {
	commit string
	paths  map[string]bool
	tables []schema.TableRow
	// tablesErr is "" when the tables were read.
	tablesErr string
}

func (c *checker) loadRepo() *repoFiles {
	commit := c.info.HarnessCommit
	rf := &repoFiles{commit: commit, paths: map[string]bool{}}
	if ps, err := c.opts.Repo.Paths(commit); err == nil {
		for _, p := range ps {
			rf.paths[p] = true
		}
	} else {
		c.note(schema.RunFile, "harness_commit "+prefix(commit, 12)+" files", err.Error())
	}
	var err error
	if rf.tables, err = c.opts.Repo.Tables(commit); err != nil {
		rf.tablesErr = err.Error()
	}
	return rf
}

// checkAtCommit: the row's gates and case files are the commit's (unless the run's
// changes name them), and it is a row of the commit's tables.
func (r *rowCheck) checkAtCommit(rf *repoFiles) {
	short := prefix(rf.commit, 12)
	if q := r.res.Quality; q != nil {
		for _, f := range q.Files {
			got, ok := r.read(f.File)
			if !ok || !rf.paths[f.Source] {
				continue // missing (checkQuality says so), or another checkout's (TRTMC's), held by its sha256
			}
			want, err := r.c.opts.Repo.File(rf.commit, f.Source)
			if err != nil {
				r.c.note(r.rel(f.File), "the gates at commit "+short, err.Error())
				continue
			}
			r.truth(string(want) == string(got) || r.changedInRun(f.Source), f.File, "the family's thresholds file "+f.Source,
				"the file at commit "+short+" (sha256 "+prefix(bytesSHA256(want), 12)+")", "sha256 "+prefix(bytesSHA256(got), 12))
		}
	}
	if corr := r.res.Correctness; corr != nil {
		for _, f := range corr.CaseFiles {
			r.checkHashAtCommit(rf, schema.ResultsFile, "correctness.case_files "+f.Path, f.Path, f.SHA256)
		}
		if corr.ResultFile != "" {
			if b, ok := r.read(corr.ResultFile); ok {
				var doc any
				if json.Unmarshal(b, &doc) == nil {
					for _, fh := range hashedFiles(doc, "") {
						r.checkHashAtCommit(rf, corr.ResultFile, fh.at+".sha256", fh.path, fh.sha)
					}
				}
			}
		}
	}
	r.judgeCaseAtCommit(rf)
	r.checkTableRow(rf)
}

// judgeCaseAtCommit judges the case's kept metrics against the gates file at the commit
// (not the copy the case recorded), unless the dirty run changed it.
func (r *rowCheck) judgeCaseAtCommit(rf *repoFiles) {
	rl, ok := r.rules()
	corr := r.res.Correctness
	if !ok || rl.CaseGates == "" || corr == nil || corr.ResultFile == "" || !r.passed(schema.StageCorrectness) || r.changedInRun(rl.CaseGates) {
		return
	}
	result, ok := r.read(corr.ResultFile)
	if !ok {
		return // checkCaseResult says so
	}
	short := prefix(rf.commit, 12)
	gates, err := r.c.opts.Repo.File(rf.commit, rl.CaseGates)
	if err != nil {
		r.c.note(r.rel(corr.ResultFile), "the gates at commit "+short, err.Error())
		return
	}
	missed, err := rl.JudgeCase(result, gates)
	if err != nil {
		missed = []string{err.Error()}
	}
	r.truth(len(missed) == 0, corr.ResultFile, "the case's metrics against "+rl.CaseGates,
		"every gate met (the file at commit "+short+"; stage correctness passed)", strings.Join(missed, "; "))
}

// checkHashAtCommit: a tree file hashed at run time (abs) has that sha256 at the commit;
// a path of no commit file (a binary, a bundle) is not held.
func (r *rowCheck) checkHashAtCommit(rf *repoFiles, file, claim, abs, sha string) {
	rel := repoPath(rf.paths, abs)
	if rel == "" {
		return
	}
	b, err := r.c.opts.Repo.File(rf.commit, rel)
	if err != nil {
		r.c.note(r.rel(file), claim, err.Error())
		return
	}
	want := bytesSHA256(b)
	r.truth(want == sha || r.changedInRun(rel), file, claim, want+" ("+rel+" at commit "+prefix(rf.commit, 12)+")", sha)
}

// repoPath: abs's longest tail of >= 2 parts that is a tree path, or "".
func repoPath(paths map[string]bool, abs string) string {
	parts := strings.Split(strings.TrimPrefix(path.Clean(abs), "/"), "/")
	for i := 0; i+2 <= len(parts); i++ {
		if p := strings.Join(parts[i:], "/"); paths[p] {
			return p
		}
	}
	return ""
}

type hashedFile struct{ at, path, sha string }

// hashedFiles finds every {"path": ..., "sha256": ...} object in a decoded JSON document:
// what a case records of the files it read (its gates, its binary), at their JSON path.
func hashedFiles(v any, at string) []hashedFile {
	var out []hashedFile
	switch x := v.(type) {
	case map[string]any:
		p, ok1 := x["path"].(string)
		s, ok2 := x["sha256"].(string)
		if ok1 && ok2 && strings.HasPrefix(p, "/") {
			out = append(out, hashedFile{at, p, s})
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, hashedFiles(x[k], strings.TrimPrefix(at+"."+k, "."))...)
		}
	case []any:
		for i, e := range x {
			out = append(out, hashedFiles(e, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return out
}

// changedInRun: a dirty run's provenance lists rel among the changes, or the list was cut at
// schema.MaxChanges.
func (r *rowCheck) changedInRun(rel string) bool {
	p := r.res.Provenance
	return p.Dirty && (len(p.Changes) >= schema.MaxChanges || changesName(p.Changes, rel))
}

// changesName says whether `git status --porcelain` lines ("XY path", "XY old -> new")
// name rel: the file itself, a folder holding it (an untracked "?? families/x/"), or,
// for a rel ending in "/", any file under that folder.
func changesName(changes []string, rel string) bool {
	for _, ch := range changes {
		f := strings.TrimSpace(ch[min(3, len(ch)):])
		if i := strings.LastIndex(f, " -> "); i >= 0 {
			f = f[i+len(" -> "):]
		}
		if f == rel || strings.HasPrefix(rel, strings.TrimSuffix(f, "/")+"/") || strings.HasSuffix(rel, "/") && strings.HasPrefix(f, rel) {
			return true
		}
	}
	return false
}

// checkTableRow: the row, its flags and counts are in the commit's qual tables, unless
// the dirty run touched qual/.
func (r *rowCheck) checkTableRow(rf *repoFiles) {
	short := prefix(rf.commit, 12)
	if rf.tablesErr != "" {
		r.c.note(r.rel(schema.ResultsFile), "a row of the qual tables at commit "+short, rf.tablesErr)
		return
	}
	res := r.res
	got := schema.TableRow{Row: r.name, Family: res.Checkpoint.Family, Backend: res.Checkpoint.Backend, Model: res.Checkpoint.Model,
		Profile: res.Checkpoint.Profile, Smoke: res.Checkpoint.Smoke, Double: res.Checkpoint.Double, Measured: res.Measured, Warmup: res.Warmup}
	var named []schema.TableRow
	for _, t := range rf.tables {
		if t.Row != r.name {
			continue
		}
		named = append(named, t)
		declared := t.Controls
		t.Test, t.Controls = "", ""
		if t == got || res.Status == schema.StatusNotRun && sameButCounts(t, got) {
			r.checkDeclared(short, declared)
			return
		}
	}
	if r.changedInRun("qual/") {
		return
	}
	want := "a row " + r.name + " of the qual tables at commit " + short + " (exported in the checker's environment: a row a table adds only when a variable is set needs it set here too)"
	if len(named) > 0 {
		var s []string
		for _, t := range named {
			s = append(s, t.Test+": "+t.String())
		}
		want = "the row " + r.name + " of the qual tables at commit " + short + ": " + strings.Join(s, "; ")
	}
	r.fail(schema.ResultsFile, "checkpoint", want, got.String())
}

// checkDeclared: the controls controls.json says the row declared are its family's at
// the commit (sha256 want), unless the dirty run changed Go code: a declaration that
// drops a control, or widens its band, judges the probes to another verdict.
func (r *rowCheck) checkDeclared(short, want string) {
	b, ok := r.read(schema.ControlsFile)
	if !ok || want == "" || r.changedInRun("families/") || r.changedInRun("internal/") || r.changedInRun("qual/") {
		return
	}
	var doc struct{ Declared json.RawMessage }
	got, err := "", json.Unmarshal(b, &doc)
	if err == nil {
		got, err = schema.DeclaredSHA256(doc.Declared)
	}
	if err != nil {
		got = err.Error()
	}
	r.same(schema.ControlsFile, "declared", want, got, "the controls row "+r.name+"'s family declares at commit "+short)
}

// sameButCounts: a row that never ran has no request counts to compare.
func sameButCounts(a, b schema.TableRow) bool {
	a.Measured, a.Warmup, b.Measured, b.Warmup = 0, 0, 0, 0
	return a == b
}
