package evidencecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"qualkit/internal/merged"
	"qualkit/internal/schema"
)

// IsMerged says whether dir holds merged.json (internal/merged).
func IsMerged(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, merged.ManifestFile))
	return err == nil
}

// VerifyMerged checks a merged run as strictly as a single one: each shard whole, as
// merged.json recorded it and answering the kept matrix (merged.Answer), the shards
// covering the matrix once from one commit, and the merged files what the shards give.
func VerifyMerged(dir string) *Report {
	return VerifyMergedWith(dir, Options{})
}

// VerifyMergedWith is VerifyMerged with Options (JUnit unused: each shard has its own).
func VerifyMergedWith(dir string, opts Options) *Report {
	c := &checker{dir: dir, rep: &Report{Dir: dir}, opts: opts}
	files := c.walk()
	c.checkSumList("", files)
	var m merged.Manifest
	b, ok := c.read(merged.ManifestFile)
	if !ok || json.Unmarshal(b, &m) != nil {
		c.fail(merged.ManifestFile, "readable", "the merged run's manifest (JSON)", "missing or unreadable")
		return c.rep
	}
	matrix, ok := c.read(merged.MatrixFile)
	rows, err := merged.MatrixRows(matrix)
	if !ok || err != nil {
		c.fail(merged.MatrixFile, "readable", "the matrix the shards ran", fmt.Sprint("missing or unreadable: ", err))
		return c.rep
	}
	created, cerr := merged.MatrixCreated(matrix)
	if cerr != nil {
		c.fail(merged.MatrixFile, "created", "when the matrix was made (scripts/matrix)", cerr.Error())
	}
	// The exact file set: the merged run's own files and each recorded shard's folder and JUnit.
	own := map[string]bool{}
	for _, f := range merged.OwnFiles(m) {
		own[f] = true
	}
	for f := range files {
		in := own[f] || slices.ContainsFunc(m.Shards, func(s merged.Shard) bool {
			return f == s.JUnit || strings.HasPrefix(f, s.Dir+"/")
		})
		if !in {
			c.fail(f, "exact file set", "only the merged run's files and the shards merged.json lists", "an extra file")
		}
	}
	for _, s := range m.Shards {
		c.checkShard(s)
		if cerr == nil && cleanUnder(s.Dir, merged.ShardsDir) {
			for _, p := range merged.Answer(rows, created, s.Name, c.path(s.Dir)) {
				c.fail(path.Join(s.Dir, schema.RunFile), "shard answers the matrix", "a run begun after the matrix was made, signed (if signed) for this shard, entry and matrix", p)
			}
		}
	}
	c.checkMergedVersion(m)
	for _, g := range merged.Gaps(rows, m.Shards) {
		c.fail(merged.ManifestFile, "shards cover the matrix", "every matrix row in exactly one shard, one commit", g)
	}
	verifications := merged.Verifications(m.Shards, func(s merged.Shard, row string) (merged.RowResult, error) {
		return merged.ReadRowResult(c.path(s.Dir), row)
	})
	for _, v := range verifications {
		c.fail(merged.ManifestFile, "correctness-only shards", "each beside the shard that failed its row as a hardware limit", v)
	}
	var all []string
	for _, s := range m.Shards {
		if !s.CorrectnessOnly {
			all = append(all, s.Rows...)
		}
	}
	slices.Sort(all)
	c.same(merged.ManifestFile, "rows", strings.Join(all, " "), strings.Join(m.Rows, " "), "the shards' run.json rows")
	c.same(merged.ManifestFile, "merged_id", merged.ID(m.Shards), m.MergedID, "the shards' checksum lists")
	if len(m.Shards) > 0 {
		c.same(merged.ManifestFile, "harness_commit", m.Shards[0].Commit, m.Commit, "the shards' run.json")
		c.same(merged.ManifestFile, "harness_dirty", fmt.Sprint(m.Shards[0].Dirty), fmt.Sprint(m.Dirty), "the shards' run.json")
	}
	rendered, err := merged.Render(dir, m)
	if err != nil {
		c.fail(merged.ManifestFile, "shards readable", "every shard's SUMMARY.md, row.md, results.json and JUnit", err.Error())
		return c.rep
	}
	for _, f := range merged.OwnFiles(m) {
		if _, ok := rendered[f]; !ok {
			continue // merged.json, matrix.json, SHA256SUMS: checked above
		}
		got, _ := c.read(f)
		c.truth(bytes.Equal(got, rendered[f]), f, "derived from the shards", "the bytes the shards' files give", firstDiff(rendered[f], got))
	}
	c.rep.Rows = m.Rows
	return c.rep
}

func (c *checker) checkShard(s merged.Shard) {
	if !cleanUnder(s.Dir, merged.ShardsDir) || !cleanUnder(s.JUnit, merged.ShardsDir) {
		c.fail(merged.ManifestFile, "shard "+s.Name+" paths", "paths under "+merged.ShardsDir+"/", s.Dir+", "+s.JUnit)
		return
	}
	dir, junit := merged.ShardPaths(s.Name, s.RunID)
	c.same(merged.ManifestFile, "shard "+s.Name+" dir", dir, s.Dir, "shards/<name>/<run id>")
	c.same(merged.ManifestFile, "shard "+s.Name+" junit", junit, s.JUnit, "shards/<name>/junit.xml")
	opts := c.opts
	opts.JUnit = c.path(s.JUnit)
	sub := VerifyWith(c.path(s.Dir), opts)
	for _, p := range sub.Problems {
		p.File = path.Join(s.Dir, p.File)
		c.rep.Problems = append(c.rep.Problems, p)
	}
	for _, n := range sub.Notes {
		c.rep.Notes = append(c.rep.Notes, s.Dir+": "+n)
	}
	c.rep.Files += sub.Files
	c.rep.Claims += sub.Claims
	sums, _ := schema.FileSHA256(c.path(path.Join(s.Dir, schema.ChecksumFile)))
	c.same(merged.ManifestFile, "shard "+s.Name+" sha256sums_sha256", sums, s.SumsSHA256, path.Join(s.Dir, schema.ChecksumFile))
	j, _ := schema.FileSHA256(c.path(s.JUnit))
	c.same(merged.ManifestFile, "shard "+s.Name+" junit_sha256", j, s.JUnitSHA256, s.JUnit)
	var info schema.RunInfo
	b, _ := c.read(path.Join(s.Dir, schema.RunFile))
	if json.Unmarshal(b, &info) == nil {
		c.same(merged.ManifestFile, "shard "+s.Name+" run_id", info.RunID, s.RunID, "its run.json")
		c.same(merged.ManifestFile, "shard "+s.Name+" harness_commit", info.HarnessCommit, s.Commit, "its run.json")
		c.same(merged.ManifestFile, "shard "+s.Name+" harness_dirty", fmt.Sprint(info.HarnessDirty), fmt.Sprint(s.Dirty), "its run.json")
		c.same(merged.ManifestFile, "shard "+s.Name+" rows", strings.Join(info.Rows, " "), strings.Join(s.Rows, " "), "its run.json")
		c.same(merged.ManifestFile, "shard "+s.Name+" correctness_only", fmt.Sprint(info.CorrectnessOnly), fmt.Sprint(s.CorrectnessOnly), "its run.json")
	}
}

func cleanUnder(p, dir string) bool {
	return strings.HasPrefix(p, dir+"/") && path.Clean(p) == p
}

func firstDiff(want, got []byte) string {
	if got == nil {
		return "missing"
	}
	n := min(len(want), len(got))
	for i := 0; i < n; i++ {
		if want[i] != got[i] {
			line := bytes.Count(want[:i], []byte("\n")) + 1
			return fmt.Sprintf("differs from line %d", line)
		}
	}
	return fmt.Sprintf("%d bytes where %d are derived", len(got), len(want))
}

// FindRuns lists the run folders in dir itself, else among its subfolders.
func FindRuns(dir string) []string {
	isRun := func(d string) bool {
		_, err1 := os.Stat(filepath.Join(d, schema.RunFile))
		return err1 == nil || IsMerged(d)
	}
	if isRun(dir) {
		return []string{dir}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); e.IsDir() && isRun(p) {
			out = append(out, p)
		}
	}
	return out
}
