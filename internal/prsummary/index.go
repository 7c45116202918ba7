package prsummary

import (
	"bytes"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"

	"qualkit/internal/schema"
)

// indexPage renders versions 1 and 2 (2 adds the generator line and the headline
// columns); like pageV3 it is static and well-formed XML.
var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
{{if ge .Version 2}}<meta name="generator" content="qualkit index {{.Version}}" />
{{end}}<title>qualkit run {{.RunID}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
.status-qualified { color: #1a7f37; font-weight: bold; }
.status-failed, .status-not-run { color: #c01c1c; font-weight: bold; }
img { max-width: 100%; border: 1px solid #ccc; margin: 4px 0; }
code { font-size: 90%; }
</style>
</head>
<body>
<h1>qualkit run {{.RunID}}</h1>
<p>{{.Verdict}} Run files: <a href="PR.md">PR.md</a> · <a href="SUMMARY.md">SUMMARY.md</a> · <a href="run.json">run.json</a> · <a href="SHA256SUMS">SHA256SUMS</a>. Check it with <code>make check-evidence DIR=evidence/{{.RunID}}</code>.</p>
<table id="rows">
<tr><th>row</th><th>status</th>{{if ge .Version 2}}<th>native/HTTP pixel matches</th><th>HTTP p50 / p95 (s)</th><th>Task p50 / p95 (s)</th><th>images/s</th><th>HTTP edit quality (worst)</th>{{end}}<th>reproduce</th></tr>
{{range .Rows}}<tr data-row="{{.Name}}" data-status="{{.Status}}"><td><a href="#row-{{.Name}}">{{.Name}}</a></td><td class="status-{{.Status}}">{{.Status}}{{if .Reason}}: {{.Reason}}{{end}}</td>{{range .Headline}}<td>{{.}}</td>{{end}}<td><code>{{.Command}}</code></td></tr>
{{end}}</table>
{{range .Rows}}
<section id="row-{{.Name}}">
<h2>{{.Name}}</h2>
<p>{{range .Pictures}}<a href="{{.}}"><img src="{{.}}" alt="{{.}}" /></a> {{end}}</p>
<details>
<summary>{{len .Files}} evidence files</summary>
<ul>
{{range .Files}}<li><a href="{{.Href}}">{{.Name}}</a></li>
{{end}}</ul>
</details>
</section>
{{end}}
</body>
</html>
`))

type indexRow struct {
	Name, Status, Reason, Command string
	// Headline is the row's numbers a reviewer wants first, as row.md states them.
	Headline []string
	Pictures []string
	Files    []indexFile
}

// IndexVersion is the version Index renders (3: Page, with stage strips, timing and
// hardware; 4: the rows table fits 1400 px). Older versions render the runs made before.
const IndexVersion = 4

var generator = regexp.MustCompile(`<meta name="generator" content="qualkit index ([0-9]+)" />`)

// PageVersion is the index.html version a page states (1 when it states none).
func PageVersion(page []byte) int {
	if m := generator.FindSubmatch(page); m != nil {
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	return 1
}

// headlineColumns are the row.md columns index.html shows beside the status.
var headlineColumns = []int{7, 10, 11, 12, 8}

type indexFile struct{ Href, Name string }

func Index(runDir string) ([]byte, error) { return IndexAt(runDir, IndexVersion) }

// IndexAt renders index.html as version v renders it (1 to IndexVersion).
func IndexAt(runDir string, v int) ([]byte, error) {
	if v < 1 || v > IndexVersion {
		return nil, fmt.Errorf("index.html version %d: this qualkit renders versions 1 to %d", v, IndexVersion)
	}
	r, err := readRun(runDir)
	if err != nil {
		return nil, err
	}
	if v >= 3 {
		return r.page(v).HTML()
	}
	data := struct {
		Version        int
		RunID, Verdict string
		Rows           []indexRow
	}{Version: v, RunID: r.info.RunID}
	for _, w := range r.rows {
		ir := indexRow{Name: w.name, Status: w.res.Status, Reason: w.res.Reason, Command: w.res.Command}
		if v >= 2 { // version 1 shows no headline
			cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(w.line, "| "), " |"), " | ")
			for _, col := range headlineColumns {
				cell := "-"
				if col < len(cells) {
					cell = strings.ReplaceAll(cells[col], "`", "")
				}
				ir.Headline = append(ir.Headline, cell)
			}
		}
		for _, p := range []string{schema.ContactSheetFile, schema.LatencyChartFile} {
			if w.has(p) {
				ir.Pictures = append(ir.Pictures, w.name+"/"+p)
			}
		}
		for _, f := range w.files {
			ir.Files = append(ir.Files, indexFile{Href: f, Name: strings.TrimPrefix(f, w.name+"/")})
		}
		data.Rows = append(data.Rows, ir)
	}
	data.Verdict = r.verdict()
	var b bytes.Buffer
	if err := indexPage.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (r *run) verdict() string {
	qualified := 0
	for _, w := range r.rows {
		if w.res.Status == "qualified" {
			qualified++
		}
	}
	switch {
	case len(r.info.Skips) > 0 || !r.info.Qualification:
		return "Not a qualification run: it qualifies nothing."
	case qualified == len(r.rows):
		return "Every row qualified."
	}
	return "Not every row qualified."
}

// page is the run's index.html from version 3 on.
func (r *run) page(v int) Page {
	id := r.info.RunID
	return Page{
		Version: v, Title: "qualkit run " + id, Verdict: r.verdict(),
		RunFiles: []Link{{schema.PRFile, schema.PRFile}, {schema.SummaryFile, schema.SummaryFile}, {schema.RunFile, schema.RunFile}, {schema.ChecksumFile, schema.ChecksumFile}},
		Check:    "make check-evidence DIR=evidence/" + id,
		Rows:     r.sections(""),
		Versions: []VersionBlock{r.versionBlock("Versions")},
	}
}

func (r *run) versionBlock(title string) VersionBlock {
	return VersionBlock{Title: title, VenvSHA: r.info.VenvSHA256, Packages: r.venvPackages(), Lines: versions(r, MarkdownVersion)}
}
