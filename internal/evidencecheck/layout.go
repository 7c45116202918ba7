package evidencecheck

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"qualkit/internal/attest"
	"qualkit/internal/schema"
	"regexp"
	"strings"
)

type expansion struct {
	requests []string // "00-warmup", ... from the raw export; nil when it is unreadable
	fixtures []string // from fixtures/manifest.json; nil when it is unreadable
}

// expand returns a pattern when the data to expand the entry is missing.
func (e expansion) expand(path string) (paths []string, pattern *regexp.Regexp) {
	if strings.Contains(path, "{n}") || strings.Contains(path, "{name}") {
		return nil, placeholderPattern(path)
	}
	if strings.Contains(path, "{fixture}") {
		if e.fixtures == nil {
			return nil, placeholderPattern(path)
		}
		for _, f := range e.fixtures {
			paths = append(paths, strings.ReplaceAll(path, "{fixture}", f))
		}
		return paths, nil
	}
	if strings.Contains(path, "{i}") || strings.Contains(path, "{phase}") {
		if e.requests == nil {
			return nil, placeholderPattern(path)
		}
		seen := map[string]bool{}
		for _, req := range e.requests {
			i, phase, _ := strings.Cut(req, "-")
			p := strings.ReplaceAll(strings.ReplaceAll(path, "{i}", i), "{phase}", phase)
			if !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
		}
		return paths, nil
	}
	return []string{path}, nil
}

func placeholderPattern(path string) *regexp.Regexp {
	return schema.LayoutFile{Path: path}.Pattern()
}

// walk: anything but a regular file is a problem, the checksums could not cover it.
func (c *checker) walk() map[string]bool {
	files := map[string]bool{}
	filepath.WalkDir(c.dir, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(c.dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			c.fail(rel, "readable", "a readable file", err.Error())
			return nil
		case d.IsDir():
			return nil
		case rel == attest.File:
			// The signature over SHA256SUMS, written after it: VerifySignatures checks it.
			return nil
		case !d.Type().IsRegular():
			c.fail(rel, "regular file", "only regular files (SHA256SUMS covers nothing else)", d.Type().String())
			return nil
		}
		files[rel] = true
		return nil
	})
	return files
}

// checkLayout requires the exact file set, per schema.RowLayout in each row folder.
func (c *checker) checkLayout(files map[string]bool) {
	rowNames := map[string]bool{}
	if c.info != nil {
		for _, r := range c.info.Rows {
			rowNames[r] = true
		}
	}
	byRow := map[string][]string{}
	for f := range files {
		top, rest, nested := strings.Cut(f, "/")
		switch {
		case !nested:
			if !admitted(schema.RunLayout, f) {
				c.fail(f, "exact file set", "no such file in a run folder (schema.RunLayout)", "present")
			}
		case rowNames[top]:
			byRow[top] = append(byRow[top], rest)
		default:
			c.fail(f, "exact file set", fmt.Sprintf("no row %q in run.json rows", top), "present")
		}
	}
	for _, e := range schema.RunLayout {
		if e.Need == schema.Required && !files[e.Path] {
			c.fail(e.Path, "exact file set", "required in every run folder", "missing")
		}
	}
	if c.info == nil {
		return
	}
	for _, name := range c.info.Rows {
		r := newRowCheck(c, name, byRow[name])
		c.rows = append(c.rows, r)
		c.rep.Rows = append(c.rep.Rows, name)
		r.checkFiles()
	}
}

func admitted(layout []schema.LayoutFile, rel string) bool {
	for _, e := range layout {
		if e.Path == rel {
			return true
		}
	}
	return false
}

func (r *rowCheck) checkFiles() {
	have := r.files
	present := map[string]bool{}
	for _, f := range have {
		present[f] = true
	}
	exp := r.expansion()
	named := map[string]bool{}
	var patterns []*regexp.Regexp
	var trees []string
	for _, e := range schema.RowLayout {
		if dir, ok := e.Tree(); ok {
			if e.Need == schema.FamilyTree || !r.passed(e.Stage) {
				trees = append(trees, dir+"/")
			}
			continue
		}
		paths, pat := exp.expand(e.Path)
		if pat != nil {
			patterns = append(patterns, pat)
		}
		for _, p := range paths {
			named[p] = true
			if e.Need == schema.Required && (e.Stage == "" || r.passed(e.Stage)) && !present[p] {
				why := "required in every row"
				if e.Stage != "" {
					why = fmt.Sprintf("required once stage %s passed, as results.json says it did", e.Stage)
				}
				r.c.fail(r.rel(p), "exact file set", why, "missing")
			}
		}
	}
next:
	for _, f := range have {
		if named[f] {
			continue
		}
		for _, p := range patterns {
			if p.MatchString(f) {
				continue next
			}
		}
		for _, t := range trees {
			if strings.HasPrefix(f, t) {
				continue next
			}
		}
		r.c.fail(r.rel(f), "exact file set", "no entry of schema.RowLayout admits it in this row", "present")
	}
}
