package prsummary

import (
	"bytes"
	"html/template"
)

// Page is index.html from version 3 on, a single run's or a merged run's: a rows table
// with each row's stage strip, then one section per row (stage strip, timing table,
// hardware, pictures, evidence files), then the versions of each run it holds.
type Page struct {
	Version  int
	Title    string   // "qualkit run <id>", "qualkit merged run <id>"
	Verdict  string   // one sentence
	Notes    []string // paragraphs after the verdict (a merged run's shards and signatures)
	RunFiles []Link   // the page's own run files
	Check    string   // the command that checks the folder
	Rows     []Section
	Versions []VersionBlock
}

// VersionBlock is the software and hardware of one run folder (a merged run has one per
// shard) and its venv's packages.
type VersionBlock struct {
	Title    string
	Lines    []Pair
	VenvSHA  string
	Packages []string
}

// pageV3 is static: no script, no server; every link is relative to the page's folder, so
// it works from file://. It is well-formed XML too, which its test relies on. A stage
// strip cell is green (passed), red (failed) or grey and dashed (not run): a stage that
// never ran did not fail.
var pageV3 = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="generator" content="qualkit index {{.Version}}" />
<title>{{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
.status-qualified { color: #1a7f37; font-weight: bold; }
.status-failed { color: #c01c1c; font-weight: bold; }
.status-not-run { color: #6e7781; font-weight: bold; }
.strip { display: flex; gap: 2px; }
.stage { font-size: 75%; padding: 2px 4px; border: 1px solid; border-radius: 3px; white-space: nowrap; }
.stage-pass { background: #dafbe1; border-color: #1a7f37; color: #116329; }
.stage-fail { background: #ffebe9; border-color: #c01c1c; color: #a40e26; font-weight: bold; }
.stage-not-run { background: #f6f8fa; border-color: #8c959f; border-style: dashed; color: #6e7781; }
img { max-width: 100%; border: 1px solid #ccc; margin: 4px 0; }
code { font-size: 90%; }
{{if ge .Version 4}}#rows td:nth-child(2) { overflow-wrap: anywhere; min-width: 8em; }
#rows .strip { flex-wrap: wrap; }
{{end}}</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Verdict}} Files: {{range $i, $l := .RunFiles}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Label}}</a>{{end}}. Check it with <code>{{.Check}}</code>.</p>
{{range .Notes}}<p>{{.}}</p>
{{end}}<table id="rows">
<tr><th>row</th><th>status</th><th>stages</th><th>native/HTTP pixel matches</th><th>HTTP p50 / p95</th><th>Task p50 / p95</th><th>images/s</th><th>HTTP edit quality (worst)</th><th>reproduce</th></tr>
{{range .Rows}}<tr data-row="{{.Name}}" data-status="{{.Status}}"><td><a href="#row-{{.Name}}">{{.Name}}</a></td><td class="status-{{.Status}}">{{.Status}}{{if .Reason}}: {{.Reason}}{{end}}{{template "more" .}}</td><td>{{template "strip" .}}</td>{{range .Headline}}<td>{{.}}</td>{{end}}<td><code>{{.Command}}</code></td></tr>
{{end}}</table>
{{range .Rows}}
<section id="row-{{.Name}}">
<h2>{{.Name}}: <span class="status-{{.Status}}">{{.Status}}</span></h2>
{{if .Shard}}<p>Shard {{.Shard}}: <a href="{{.Href}}/results.json">{{.Href}}</a></p>
{{end}}{{if .Reason}}<p>{{.Reason}}{{template "more" .}}</p>
{{end}}{{template "strip" .}}
<table class="timing">
<tr><th>timing</th><th></th></tr>
{{range .Timing}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
{{if .Controls}}<table class="controls">
<tr><th>controls</th><th></th></tr>
{{range .Controls}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
{{end}}<table class="hardware">
<tr><th>hardware</th><th></th></tr>
{{range .Hardware}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
<p>{{range .Pictures}}<a href="{{.Href}}"><img src="{{.Href}}" alt="{{.Label}}" /></a> {{end}}</p>
<p>Evidence: {{range $i, $l := .Evidence}}{{if $i}} · {{end}}<a href="{{$l.Href}}">{{$l.Label}}</a>{{end}}</p>
<details>
<summary>{{len .Files}} evidence files</summary>
<ul>
{{range .Files}}<li><a href="{{.Href}}">{{.Label}}</a></li>
{{end}}</ul>
</details>
</section>
{{end}}
{{range .Versions}}<h2>{{.Title}}</h2>
<table class="versions">
{{range .Lines}}<tr><td>{{.Name}}</td><td>{{.Value}}</td></tr>
{{end}}</table>
{{if .Packages}}<details>
<summary>venv: {{len .Packages}} packages, sha256 <code>{{.VenvSHA}}</code></summary>
<ul>
{{range .Packages}}<li><code>{{.}}</code></li>
{{end}}</ul>
</details>
{{else}}<p>Venv: not recorded in run.json.</p>
{{end}}{{end}}</body>
</html>
{{define "more"}}{{with .More}} (<a href="{{.Href}}">{{.Label}}</a>){{end}}{{end}}{{define "strip"}}<div class="strip" data-stages="{{.Name}}">{{range .Stages}}<span class="stage stage-{{.Status}}" data-stage="{{.Name}}" data-stage-status="{{.Status}}" title="{{.Title}}">{{.Name}}</span>{{end}}</div>{{end}}`))

func (p Page) HTML() ([]byte, error) {
	var b bytes.Buffer
	if err := pageV3.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
