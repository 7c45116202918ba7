package merged

import (
	"fmt"
	"path/filepath"
	"strings"

	"qualkit/internal/prsummary"
	"qualkit/internal/schema"
)

// pages is what the merged run's PR.md and index.html (version 2) show: every shard's
// rows with a single run's sections, read from the shard folders by internal/prsummary.
type pages struct {
	m      Manifest
	status map[string]string   // the rows table's status cell, by row
	rows   []prsummary.Section // the matrix rows, in m.Rows order
	local  []prsummary.Section // the rows of correctness-only shards
	shards []prsummary.Folder  // by shard, in m.Shards order
	byRow  map[string]Shard    // the shard that ran each matrix row
	ladder string              // the checkpoint status section over every shard
}

func readPages(dir string, m Manifest, status map[string]string) (*pages, error) {
	p := &pages{m: m, status: status, byRow: map[string]Shard{}}
	sections := map[string]prsummary.Section{}
	for _, s := range m.Shards {
		f, err := prsummary.ReadFolder(filepath.Join(dir, filepath.FromSlash(s.Dir)), s.Dir+"/", s.Name)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", s.Name, err)
		}
		p.shards = append(p.shards, f)
		for _, sec := range f.Rows {
			if s.CorrectnessOnly {
				p.local = append(p.local, sec)
				continue
			}
			sections[sec.Name] = sec
			p.byRow[sec.Name] = s
		}
	}
	for _, r := range m.Rows {
		p.rows = append(p.rows, sections[r])
	}
	var dirs, prefixes []string
	for _, s := range m.Shards {
		dirs, prefixes = append(dirs, filepath.Join(dir, filepath.FromSlash(s.Dir))), append(prefixes, s.Dir+"/")
	}
	ladder, err := prsummary.StatusMarkdown(dirs, prefixes)
	if err != nil {
		return nil, err
	}
	p.ladder = ladder
	return p, nil
}

// signature is a shard's signature state as merged.json records it.
func signature(s Shard) string {
	if !s.Signed {
		return "UNSIGNED"
	}
	id := s.KeyID
	if len(id) > 16 {
		id = id[:16]
	}
	return "signed (key " + id + ")"
}

// signatures is one sentence on the shards' signatures.
func (p *pages) signatures() string {
	if u := Unsigned(p.m); len(u) > 0 {
		return fmt.Sprintf("UNSIGNED shards: %s (merged with UNSIGNED=1): no signature vouches for their folders; each was checked whole.", strings.Join(u, ", "))
	}
	return "Every shard is signed; check the signatures with make check-evidence PUBKEY=<the signer's public key>."
}

// markdown is PR.md version 2.
func (p *pages) markdown(header string, rowLines map[string]string) []byte {
	m := p.m
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- qualkit merged PR.md %d -->\n", m.Version)
	fmt.Fprintf(&b, "# qualkit merged run %s\n\n", m.MergedID)
	fmt.Fprintf(&b, "Commit %s, %d row(s) in %d shard(s). Check it: `make check-evidence DIR=<this folder>`.\n\n",
		commitText(m.Commit, m.Dirty), len(m.Rows), len(m.Shards))
	b.WriteString(p.signatures() + "\n\n")
	b.WriteString("| row | status | shard | shard run | shard SHA256SUMS sha256 | signature |\n|---|---|---|---|---|---|\n")
	for _, r := range m.Rows {
		s := p.byRow[r]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | `%s` | %s |\n", r, p.status[r], s.Name, s.RunID, s.SumsSHA256, signature(s))
	}
	for _, s := range m.Shards {
		if s.CorrectnessOnly {
			fmt.Fprintf(&b, "\nLocal verification (the seed's rule for a hardware limit): shard %s, run %s, ran the unchanged correctness case of %s alone "+
				"(SHA256SUMS sha256 `%s`, %s). The rows above stay failed.\n", s.Name, s.RunID, strings.Join(s.Rows, ", "), s.SumsSHA256, signature(s))
		}
	}
	b.WriteString("\n" + p.ladder)
	b.WriteString("\n## Results\n\n" + header)
	for _, r := range m.Rows {
		b.WriteString(rowLines[r] + "\n")
	}
	for _, sec := range p.rows {
		b.WriteString(prsummary.MarkdownSection(sec))
	}
	if len(p.local) > 0 {
		b.WriteString("\n## Local verifications\n")
		for _, sec := range p.local {
			b.WriteString(prsummary.MarkdownSection(sec))
		}
	}
	for i, s := range m.Shards {
		fmt.Fprintf(&b, "\n## Shard %s: run %s, %s\n\n", s.Name, s.RunID, signature(s))
		b.WriteString(prsummary.VersionsMarkdown(p.shards[i].Versions))
	}
	return []byte(b.String())
}

// pageVersion is the index.html version of a merged run of version v (2 or later).
func pageVersion(v int) int {
	if v == 2 {
		return 3
	}
	return prsummary.IndexVersion
}

// html is index.html: the page a single run has (prsummary.Page), over every shard.
func (p *pages) html() ([]byte, error) {
	m := p.m
	qualified := 0
	for _, r := range p.rows {
		if r.Status == schema.StatusQualified {
			qualified++
		}
	}
	verdict := "Not every row qualified."
	if qualified == len(p.rows) {
		verdict = "Every row qualified."
	}
	notes := []string{fmt.Sprintf("Commit %s, %d row(s) in %d shard(s); each shard's folder under %s/ is a whole run with its own SHA256SUMS and JUnit.",
		commitText(m.Commit, m.Dirty), len(m.Rows), len(m.Shards), ShardsDir), p.signatures()}
	for _, s := range m.Shards {
		if s.CorrectnessOnly {
			notes = append(notes, fmt.Sprintf("Local verification: shard %s (%s, %s) ran the unchanged correctness case of %s alone, beside the row that met a hardware limit; it qualifies nothing.",
				s.Name, s.Dir, signature(s), strings.Join(s.Rows, ", ")))
		}
	}
	page := prsummary.Page{
		Version: pageVersion(m.Version), Title: "qualkit merged run " + m.MergedID, Verdict: verdict, Notes: notes,
		RunFiles: []prsummary.Link{{Href: PRFile, Label: PRFile}, {Href: SummaryFile, Label: SummaryFile}, {Href: ManifestFile, Label: ManifestFile},
			{Href: MatrixFile, Label: MatrixFile}, {Href: JUnitFile, Label: JUnitFile}, {Href: SumsFile, Label: SumsFile}},
		Check: "make check-evidence DIR=<this folder>",
		Rows:  p.rows,
	}
	for i, s := range m.Shards {
		vb := p.shards[i].Versions
		vb.Title = fmt.Sprintf("Shard %s: run %s, %s", s.Name, s.RunID, signature(s))
		page.Versions = append(page.Versions, vb)
	}
	return page.HTML()
}
