package evidencecheck

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"qualkit/internal/schema"
)

// The checks in this file hold a run to the commit it names: the commit exists, the
// gates and case files the run copied or hashed are that commit's, and each row is a row
// of that commit's qual tables. They need the repository, which the evidence cannot
// carry; evidencecheck runs no git itself (Repo is given in Options: scripts/checkevidence
// passes internal/evidencerepo's when it runs inside a clone).

// Repo is the repository a run's harness commit is read from.
type Repo interface {
	// HasCommit says whether commit is a commit of the repository.
	HasCommit(commit string) (bool, error)
	// Paths lists every file of the commit's tree, slash-separated.
	Paths(commit string) ([]string, error)
	// File is the content of path at commit.
	File(commit, path string) ([]byte, error)
	// Tables are the qual tables' rows as the commit's own code defines them.
	Tables(commit string) ([]schema.TableRow, error)
}

// Options are what a check may be given besides the run folder.
type Options struct {
	// JUnit is the run's JUnit file ("" when not given): its qualkit.* properties are
	// checked, the run anchor among them.
	JUnit string
	// Repo is the repository the check runs in. nil: the run's commit, its gates and its
	// tables are not verifiable, which the Report notes (a problem when Strict).
	Repo Repo
	// Strict makes what could not be verified a problem.
	Strict bool
	// RequireRunAnchor requires the JUnit file to anchor the run as a whole (its
	// qualkit.run_sha256sums, scripts/junitfix -run): what a run must show to vouch for
	// a bundle another run reuses.
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

// checkCommit: the run's harness commit is a commit of the repository. It returns
// whether the files and tables at it can be read.
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

// repoFiles is what the rows read of the commit, once per check.
type repoFiles struct {
	commit string
	paths  map[string]bool
	tables []schema.TableRow
	// tablesErr says why the tables could not be read, "" when they were.
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

// checkAtCommit holds one row to the commit: its gates and case files are the commit's,
// and it is a row of the commit's tables. A file a dirty run changed may differ, when
// the run's changes name it.
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

// judgeCaseAtCommit judges the correctness case's kept metrics again against the
// family's gates file as committed at the run's commit (not the copy the case recorded,
// nor its sha256): a passed stage holds only when they meet every gate. A dirty run that
// changed the gates file is not held to the commit's.
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

// checkHashAtCommit: a file of the tree a program hashed at run time (abs, its absolute
// path then) is the commit's: the file at the commit has that sha256. A path that names
// no file of the commit (a built binary, a bundle, another checkout's file) is not held.
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

// repoPath is the file of the tree an absolute path names: its longest tail of at least
// two parts that is a path of the tree ("/work/main/families/x/conftest.py" ->
// "families/x/conftest.py"); "" when none is.
func repoPath(paths map[string]bool, abs string) string {
	parts := strings.Split(strings.TrimPrefix(path.Clean(abs), "/"), "/")
	for i := 0; i+2 <= len(parts); i++ {
		if p := strings.Join(parts[i:], "/"); paths[p] {
			return p
		}
	}
	return ""
}

// hashedFile is an object of a correctness case's result that names a file and its sha256.
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

// changedInRun says whether the run's provenance names rel among the tree's changes: a
// dirty run's file may differ from the commit, when its changes say so. A list cut at
// schema.MaxChanges cannot say a file is not in it.
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

// checkTableRow: the row is a row of the commit's qual tables (the -qualkit.tables
// export of that commit's code), and names its profile, backend, model, smoke and double
// flags and request counts. A dirty run whose changes touch qual/ may run rows no commit
// holds.
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
		t.Test = ""
		if t == got || res.Status == schema.StatusNotRun && sameButCounts(t, got) {
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

// sameButCounts: a row that never ran has no request counts to compare.
func sameButCounts(a, b schema.TableRow) bool {
	a.Measured, a.Warmup, b.Measured, b.Warmup = 0, 0, 0, 0
	return a == b
}
