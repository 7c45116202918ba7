package evidencecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"qualkit/internal/schema"
)

// Problem is one claim the evidence does not support.
type Problem struct {
	File     string // relative to the run folder
	Claim    string // what is claimed ("HTTP p50 / p95 (s)", "sha256 (SHA256SUMS)")
	Evidence string // what the raw evidence says, and where from
	Got      string // what the file says
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: %s: evidence says %s, file says %s", p.File, p.Claim, p.Evidence, p.Got)
}

// Report is the outcome of one check.
type Report struct {
	Dir        string
	Rows       []string
	Files      int // files whose sha256 was verified
	Claims     int // claims compared with what the raw files give
	Problems   []Problem
	Signatures []Signed
	// Notes are what could not be verified: problems under Options.Strict.
	Notes []string
}

// Error lists every problem of a failed check.
type Error struct {
	Dir      string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "evidence %s: %d problem(s):", e.Dir, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - " + p.String())
	}
	return b.String()
}

// Anchor requires the run's SHA256SUMS to hash to want, kept outside the folder.
func (r *Report) Anchor(want string) {
	r.Claims++
	b, err := os.ReadFile(filepath.Join(r.Dir, schema.ChecksumFile))
	got := "unreadable: " + fmt.Sprint(err)
	if err == nil {
		got = bytesSHA256(b)
	}
	if got != want {
		r.Problems = append(r.Problems, Problem{File: schema.ChecksumFile, Claim: "sha256 of the checksum list",
			Evidence: quote(want) + " (printed when the run ended)", Got: got})
	}
}

// OK is the line the checker prints for a run that passed, naming it as dir.
func (r *Report) OK(dir string) string {
	return fmt.Sprintf("checkevidence: %s: ok: %d row(s), %d files checksummed, %d claims re-derived from the raw records", dir, len(r.Rows), r.Files, r.Claims)
}

// Err is nil when nothing was wrong, else an *Error with every problem.
func (r *Report) Err() error {
	if len(r.Problems) == 0 {
		return nil
	}
	return &Error{Dir: r.Dir, Problems: r.Problems}
}

// Check verifies runDir and, when junitPath is not empty, its JUnit file.
func Check(runDir, junitPath string) error {
	return Verify(runDir, junitPath).Err()
}

// Verify is Check with the counts of what was verified.
func Verify(runDir, junitPath string) *Report {
	return VerifyWith(runDir, Options{JUnit: junitPath})
}

// VerifyWith is Verify with Options.
func VerifyWith(runDir string, opts Options) *Report {
	c := &checker{dir: runDir, rep: &Report{Dir: runDir}, opts: opts}
	c.run(opts.JUnit)
	return c.rep
}

type checker struct {
	dir  string
	rep  *Report
	opts Options
	info *schema.RunInfo
	rows []*rowCheck
}

func (c *checker) fail(file, claim, evidence, got string) {
	c.rep.Problems = append(c.rep.Problems, Problem{File: file, Claim: claim, Evidence: evidence, Got: got})
}

// same: want is what the evidence gives, got what the file says.
func (c *checker) same(file, claim, want, got, source string) bool {
	c.rep.Claims++
	if want == got {
		return true
	}
	evidence := quote(want)
	if source != "" {
		evidence += " (" + source + ")"
	}
	c.fail(file, claim, evidence, quote(got))
	return false
}

func (c *checker) truth(ok bool, file, claim, evidence, got string) bool {
	c.rep.Claims++
	if !ok {
		c.fail(file, claim, evidence, got)
	}
	return ok
}

func quote(s string) string {
	if s == "" {
		return `""`
	}
	if strings.ContainsAny(s, " \t\n") || strings.HasPrefix(s, "-") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

func (c *checker) path(rel string) string { return filepath.Join(c.dir, filepath.FromSlash(rel)) }

func (c *checker) read(rel string) ([]byte, bool) {
	b, err := os.ReadFile(c.path(rel))
	return b, err == nil
}

func (c *checker) run(junitPath string) {
	if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
		c.fail(".", "run folder", "a folder holding run.json, SUMMARY.md and SHA256SUMS", fmt.Sprint(err))
		return
	}
	files := c.walk()
	c.checkSums(files)
	c.readRunInfo()
	c.checkLayout(files)
	var rf *repoFiles
	if c.checkCommit() {
		rf = c.loadRepo()
	}
	for _, r := range c.rows {
		r.check()
		if rf != nil && r.res != nil {
			r.checkAtCommit(rf)
		}
	}
	c.checkLeases()
	c.checkDistinctRows()
	c.checkRun()
	c.checkHost()
	if junitPath != "" {
		c.checkJUnit(junitPath)
	}
}

// checkDistinctRows: an AIPerf request id (a fresh uuid) in two rows means a copied folder.
func (c *checker) checkDistinctRows() {
	seen := map[string]string{}
	for _, r := range c.rows {
		for _, q := range r.reqs {
			if other, ok := seen[q.id]; ok && other != r.name {
				c.fail(r.name+"/"+schema.RawExportFile, "request "+q.id, "a request of this row alone (AIPerf draws a fresh id per request)", "also in "+other+"/"+schema.RawExportFile)
				continue
			}
			seen[q.id] = r.name
		}
	}
}
