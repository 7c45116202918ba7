// Command docs keeps the examples in the README and docs/ true: each is what the current
// code prints for the committed reference run docs/evidence/reference-run/ (make docs-run).
//
//	go run ./scripts/docs -write   # make docs: rewrite every example from the run
//	go run ./scripts/docs          # list the examples that differ, exit 1 (the docs test)
//
// An example is a block between `<!-- make docs: NAME -->` and `<!-- /make docs -->`
// (qual-table, checkevidence, reference-run), or one of the row's pictures under docs/.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	_ "qualkit/families/all" // the families' evidence rules
	"qualkit/internal/evidencecheck"
	"qualkit/internal/evidencerepo"
	"qualkit/internal/harness"
	"qualkit/internal/judge"
	"qualkit/internal/pictures"
	"qualkit/internal/runarchive"
	"qualkit/internal/runs"
	"qualkit/internal/schema"
)

// SourceDir is the committed run's folder, relative to the repository root: its README
// and JUnit; the run itself is SourceRuns's folder of the same name (reference-run/) in
// the archive of committed runs, Archive.
const (
	SourceDir  = "docs/evidence/reference-run"
	Archive    = "docs/evidence/runs" + runarchive.Ext
	SourceRuns = "reference-run"
)

// Files are the Markdown files that hold examples.
var Files = []string{"README.md", "docs/README.md"}

// Pictures maps each picture under docs/ to the row picture it is.
var Pictures = map[string]string{
	"docs/refedit-contact-sheet.png": schema.ContactSheetFile,
	"docs/refedit-latency.png":       schema.LatencyChartFile,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("docs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	write := fs.Bool("write", false, "rewrite the examples (make docs); without it, list those that differ and exit 1")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := harness.FindRoot(".")
	if err != nil {
		fmt.Fprintln(stderr, "docs:", err)
		return 2
	}
	stale, err := Examples(root, *write)
	if err != nil {
		fmt.Fprintln(stderr, "docs:", err)
		return 1
	}
	if *write {
		fmt.Fprintf(stdout, "docs: %d example(s) rewritten from %s\n", len(stale), SourceDir)
		return 0
	}
	if len(stale) > 0 {
		fmt.Fprintf(stderr, "docs: %d example(s) no longer what the code prints for %s: %s; run make docs\n", len(stale), SourceDir, strings.Join(stale, ", "))
		return 1
	}
	fmt.Fprintf(stdout, "docs: every example is what the code prints for %s\n", SourceDir)
	return 0
}

// source is the committed run: its folder (unpacked into a temporary folder, tmp),
// JUnit, and rows' results.
type source struct {
	dir, junit, tmp string
	results         []schema.Result
}

// readSource unpacks the committed run; the caller removes s.tmp.
func readSource(root string) (*source, error) {
	tmp, err := os.MkdirTemp("", "qualkit-docs-")
	if err != nil {
		return nil, err
	}
	s := &source{tmp: tmp, junit: filepath.Join(root, SourceDir, "junit.xml")}
	if err := runarchive.Extract(filepath.Join(root, Archive), filepath.Join(tmp, "runs"), SourceRuns); err != nil {
		return s, err
	}
	found := evidencecheck.FindRuns(filepath.Join(tmp, "runs", SourceRuns))
	if len(found) != 1 {
		return s, fmt.Errorf("%s holds %d runs under %s/, want exactly one (make docs-run packs one there)", Archive, len(found), SourceRuns)
	}
	s.dir = found[0]
	r, err := runs.Read(s.dir)
	if err == nil {
		s.results = r.Rows
	}
	return s, err
}

// blocks renders every named block from the run.
func (s *source) blocks(root string) (map[string]string, error) {
	// As scripts/checkevidence checks it without a key, inside the clone that holds the
	// archive of runs.
	opts := evidencecheck.Options{JUnit: s.junit}
	if arch, err := filepath.EvalSymlinks(filepath.Join(root, Archive)); err == nil {
		if g, err := evidencerepo.Open(filepath.Dir(arch)); err == nil {
			opts.Repo = g
		}
	}
	rep := evidencecheck.VerifyWith(s.dir, opts)
	rep.VerifySignatures(context.Background(), nil, s.junit, false)
	if err := rep.Err(); err != nil {
		return nil, fmt.Errorf("the examples' run does not check: %w", err)
	}
	table := schema.RowMarkdownHeader()
	var status []string
	for i, r := range s.results {
		table += harness.MarkdownRow(&s.results[i])
		status = append(status, fmt.Sprintf("%s %s", r.Row, r.Status))
	}
	return map[string]string{
		"qual-table":    table,
		"checkevidence": "```\n" + rep.OK("evidence/"+filepath.Base(s.dir)) + "\n```\n",
		"reference-run": fmt.Sprintf("From run `%s` (%s, [kept whole](%s)), drawn by the current renderer from the row's raw evidence:\n",
			filepath.Base(s.dir), strings.Join(status, ", "), strings.TrimPrefix(SourceDir, "docs/")+"/README.md"),
	}, nil
}

var blockRe = regexp.MustCompile(`(?s)(<!-- make docs: ([a-z-]+) -->\n)(.*?)(<!-- /make docs -->)`)

// Examples renders every example from the committed run and returns those that differ
// from what the files hold, rewriting them when write is set.
func Examples(root string, write bool) ([]string, error) {
	s, err := readSource(root)
	if s != nil {
		defer os.RemoveAll(s.tmp)
	}
	if err != nil {
		return nil, err
	}
	blocks, err := s.blocks(root)
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, f := range Files {
		path := filepath.Join(root, f)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var missing []string
		out := blockRe.ReplaceAllFunc(b, func(m []byte) []byte {
			sub := blockRe.FindSubmatch(m)
			name := string(sub[2])
			want, ok := blocks[name]
			if !ok {
				missing = append(missing, name)
				return m
			}
			if string(sub[3]) != want {
				stale = append(stale, f+": "+name)
			}
			return []byte(string(sub[1]) + want + string(sub[4]))
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: no example named %s", f, strings.Join(missing, ", "))
		}
		if write && !bytes.Equal(out, b) {
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return nil, err
			}
		}
	}
	staleP, err := s.pictures(root, write)
	if err != nil {
		return nil, err
	}
	return append(stale, staleP...), nil
}

// pictures renders the first row's pictures from the run's raw records, compares their
// pixels (the encoder may change with Go) with the ones under docs/, and writes them
// when asked.
func (s *source) pictures(root string, write bool) ([]string, error) {
	if len(s.results) == 0 {
		return nil, nil
	}
	sheet, chart, err := evidencecheck.PictureInputs(filepath.Join(s.dir, s.results[0].Row))
	if err != nil {
		return nil, err
	}
	var stale []string
	for _, doc := range slices.Sorted(maps.Keys(Pictures)) {
		img := pictures.RenderLatencyChart(chart)
		if Pictures[doc] == schema.ContactSheetFile {
			img = pictures.RenderContactSheet(sheet)
		}
		path := filepath.Join(root, doc)
		if data, err := os.ReadFile(path); err == nil {
			if old, err := judge.DecodePNG(data); err == nil && judge.ComparePixels(img, old).Identical() {
				continue
			}
		}
		stale = append(stale, doc)
		if write {
			if err := pictures.WritePNG(path, img); err != nil {
				return nil, err
			}
		}
	}
	return stale, nil
}
