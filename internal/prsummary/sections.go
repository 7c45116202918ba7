package prsummary

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"qualkit/internal/schema"
)

// Section is what PR.md (version 2) and index.html (version 3) show of one row, a
// single run's or a merged run's alike, every value as the row's files state it.
type Section struct {
	Name   string // the row
	Href   string // the row folder, relative to the page: "refedit-v1", "shards/a/<run id>/refedit-v1"
	Shard  string // the shard that ran it (merged runs only)
	Status string
	Reason string
	// More is the file that says more about the reason, linked beside it: preflight.json
	// for a row that failed preflight (results.json schema 3 on; none for runs before).
	More    *Link
	Command string
	Stages  []StageMark
	// Headline is the row's numbers a reviewer wants first (index.html's rows table).
	Headline []string
	Timing   []Pair
	// Controls are the controls stage's lines: each declared control with its verdict
	// and evidence figure, then each refused field with its answer (none before
	// results.json schema 3).
	Controls []Pair
	Hardware []Pair
	Pictures []Link // the contact sheet and the latency chart, where drawn
	Evidence []Link // the files a reviewer opens first
	Files    []Link // every file of the row folder
}

// StageMark is one stage of a row's stage strip: passed, failed or not run.
type StageMark struct {
	Name   string
	Status string // schema.Pass, schema.Fail or schema.NotRun
	Title  string // "identity: failed (gate) after 1.18 s"
}

// Pair is one line of a two-column table.
type Pair struct{ Name, Value string }

// Link is a labelled link, its href relative to the page.
type Link struct{ Href, Label string }

// sections are the run's rows as Sections, their links under prefix ("" for the run's
// own pages, "shards/<name>/<run id>/" in a merged run).
func (r *run) sections(prefix string) []Section {
	var out []Section
	for _, w := range r.rows {
		out = append(out, r.section(w, prefix))
	}
	return out
}

func (r *run) section(w row, prefix string) Section {
	res := w.res
	s := Section{Name: w.name, Href: prefix + w.name, Status: res.Status, Reason: res.Reason, Command: res.Command}
	if st, ok := res.Stage(schema.StagePreflight); ok && st.Status == schema.Fail && res.Schema == schema.ResultSchema && w.has(schema.PreflightFile) {
		s.More = &Link{prefix + w.name + "/" + schema.PreflightFile, schema.PreflightFile}
	}
	for _, name := range schema.PipelineOf(res.Schema) {
		m := StageMark{Name: name, Status: schema.NotRun, Title: name + ": not run"}
		if st, ok := res.Stage(name); ok && st.Status != schema.NotRun {
			m.Status = st.Status
			word := "passed"
			if st.Status == schema.Fail {
				word = "failed"
				if st.Kind != "" {
					word += " (" + st.Kind + ")"
				}
			}
			m.Title = fmt.Sprintf("%s: %s after %s", name, word, seconds(st.WallS))
		}
		s.Stages = append(s.Stages, m)
	}
	cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(w.line, "| "), " |"), " | ")
	cell := func(i int) string {
		if i < len(cells) {
			return strings.ReplaceAll(cells[i], "`", "")
		}
		return "-"
	}
	s.Headline = []string{cell(7), pairMs(res.HTTP), pairMs(res.Task), cell(12), cell(8)}
	s.Timing = timing(res)
	s.Controls = controlLines(res.Controls)
	s.Hardware = r.hardware(w)
	for _, p := range []struct{ label, file string }{{"contact sheet", schema.ContactSheetFile}, {"latency chart", schema.LatencyChartFile}} {
		if w.has(p.file) {
			s.Pictures = append(s.Pictures, Link{prefix + w.name + "/" + p.file, p.label + " of " + w.name})
		}
	}
	for _, l := range evidenceLinks {
		if w.has(l.file) {
			s.Evidence = append(s.Evidence, Link{prefix + w.name + "/" + l.file, l.label})
		}
	}
	for _, f := range w.files {
		s.Files = append(s.Files, Link{prefix + f, strings.TrimPrefix(f, w.name+"/")})
	}
	return s
}

var evidenceLinks = []struct{ label, file string }{
	{schema.ResultsFile, schema.ResultsFile}, {schema.RowMarkdown, schema.RowMarkdown}, {"commands", schema.CommandsFile},
	{"server log", schema.ServerLog}, {"AIPerf raw export", schema.RawExportFile},
	{"identity", schema.IdentityFile}, {"correctness JUnit", schema.CorrectnessJUnit},
}

func timing(res schema.Result) []Pair {
	dash := "-"
	build, load, corr, wall, work, path, ratio := dash, dash, dash, dash, dash, dash, dash
	if tb := res.TimeBudget; tb != nil {
		build, load, corr = seconds(tb.Model.BuildS), seconds(tb.Model.ServerLoadS), seconds(tb.Model.CorrectnessS)
		if bd := res.Bundle; bd != nil && bd.Cached {
			build += " (bundle reused from the cache)"
		}
		wall, work, ratio = seconds(tb.WallS), seconds(tb.ModelWorkS), fmt.Sprintf("%.2f", tb.Ratio)
		if tb.CriticalPathS > 0 {
			path = seconds(tb.CriticalPathS)
		}
	}
	first := dash
	if f := res.FirstRequest; f != nil {
		first = duration(f.ClientMs) + " (" + f.Phase + ", client latency)"
	}
	ips := dash
	if res.ImagesPerS > 0 {
		ips = fmt.Sprintf("%.4g", res.ImagesPerS)
	}
	return []Pair{
		{"build (model work)", build},
		{"server load", load},
		{"correctness case", corr},
		{"first request", first},
		{"HTTP latency p50 / p95 / p99", tripleMs(res.HTTP)},
		{"Task time p50 / p95 / p99", tripleMs(res.Task)},
		{"images/s", ips},
		{"time budget: wall", wall},
		{"time budget: model work", work},
		{"time budget: critical path", path},
		{"time budget: wall / model work", ratio},
	}
}

// controlLines are one line per declared control (its verdict and figure) and per
// refused field or out-of-range value (its verdict and answer).
func controlLines(c *schema.ControlsResult) []Pair {
	if c == nil {
		return nil
	}
	if c.Declared == nil {
		return []Pair{{"controls", "not declared by the family"}}
	}
	if c.Cut {
		return []Pair{{"controls", fmt.Sprintf("cut before its verdict, %d probe(s) sent", len(c.Probes))}}
	}
	var out []Pair
	for _, v := range c.Controls {
		out = append(out, Pair{v.Field + " (" + v.Effect + ")", v.Verdict + ": " + v.Figure})
	}
	for _, v := range c.Refused {
		if v.Gap != "" {
			out = append(out, Pair{"accepts " + v.Field + "=" + v.Value, fmt.Sprintf("%s: %d (%s)", v.Verdict, v.Status, v.Gap)})
			continue
		}
		out = append(out, Pair{"refuse " + v.Field + "=" + v.Value, fmt.Sprintf("%s: %d %s", v.Verdict, v.Status, v.Message)})
	}
	out = append(out, Pair{"work recorded", fmt.Sprintf("%d values of %d requests held to their records, %d mismatches", c.Work.Values, c.Work.Requests, len(c.Work.Mismatches))})
	return out
}

// hardware is the row's GPUs (its own NVML reading) and the host's CPU and memory.
func (r *run) hardware(w row) []Pair {
	gpus := "none"
	if g := w.gpu; g != nil {
		var devs []string
		for _, d := range g.Devices {
			devs = append(devs, fmt.Sprintf("%s (%d GiB)", d.Name, d.MemoryTotalBytes>>30))
		}
		gpus = fmt.Sprintf("%d: %s", g.Count, strings.Join(devs, ", "))
	} else if w.gpuNote != "" {
		gpus = "none: " + firstClause(w.gpuNote)
	}
	driver, cuda := "-", "-"
	if g := w.gpu; g != nil {
		driver = g.DriverVersion
		cuda = fmt.Sprintf("%d.%d", g.CUDADriverVersion/1000, g.CUDADriverVersion%1000/10)
	}
	i := r.info
	mem := "-"
	if i.MemTotalBytes > 0 {
		mem = fmt.Sprintf("%.1f GiB", float64(i.MemTotalBytes)/(1<<30))
	}
	return []Pair{
		{"GPU", gpus},
		{"driver", driver},
		{"CUDA (driver)", cuda},
		{"CPU", fmt.Sprintf("%s, %d CPUs", cmp.Or(i.CPUModel, "-"), i.CPUs)},
		{"memory", mem},
		{"host", fmt.Sprintf("%s, %s/%s", cmp.Or(i.Hostname, "-"), i.OS, i.Arch)},
	}
}

func (r *run) venvPackages() []string {
	var out []string
	for _, l := range r.info.VenvSet {
		name, _, _ := strings.Cut(l, " ")
		out = append(out, name)
	}
	return out
}

// duration is a time for a reader: milliseconds under a second, else seconds.
func duration(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.2f s", ms/1000)
}

func seconds(s float64) string { return fmt.Sprintf("%.2f s", s) }

// msList is several times in one unit: milliseconds when the largest is under a second.
// A time not recorded (0: p99 in results.json version 1) reads "-".
func msList(ms ...float64) string {
	unit, div, f := "ms", 1.0, "%.1f"
	if slices.Max(ms) >= 1000 {
		unit, div, f = "s", 1000, "%.3f"
	}
	parts := make([]string, len(ms))
	for i, v := range ms {
		parts[i] = "-"
		if v > 0 {
			parts[i] = fmt.Sprintf(f, v/div)
		}
	}
	return strings.Join(parts, " / ") + " " + unit
}

func pairMs(q *schema.Quantiles) string {
	if q == nil {
		return "-"
	}
	return msList(q.P50, q.P95)
}

func tripleMs(q *schema.Quantiles) string {
	if q == nil {
		return "-"
	}
	return msList(q.P50, q.P95, q.P99) + fmt.Sprintf(" (%d measured)", q.Count)
}

// MarkdownSection is a row's section of PR.md (version 2), a single run's or a merged
// run's alike.
func MarkdownSection(s Section) string {
	b := &strings.Builder{}
	fmt.Fprintf(b, "\n### `%s`: %s\n\n", s.Name, s.Status)
	if s.Shard != "" {
		fmt.Fprintf(b, "Shard %s, folder `%s`.\n\n", s.Shard, path.Dir(s.Href))
	}
	if s.Reason != "" {
		more := ""
		if s.More != nil {
			more = fmt.Sprintf(" ([%s](%s))", s.More.Label, s.More.Href)
		}
		fmt.Fprintf(b, "%s%s\n\n", s.Reason, more)
	}
	var strip []string
	for _, m := range s.Stages {
		strip = append(strip, m.Name+" "+stageWord[m.Status])
	}
	fmt.Fprintf(b, "Stages: %s\n\n", strings.Join(strip, " · "))
	fmt.Fprintf(b, "Reproduce:\n\n```\n%s\n```\n\n", s.Command)
	table(b, "| timing | |", s.Timing)
	b.WriteString("\n")
	if len(s.Controls) > 0 {
		table(b, "| controls | |", s.Controls)
		b.WriteString("\n")
	}
	table(b, "| hardware | |", s.Hardware)
	b.WriteString("\n")
	for _, p := range s.Pictures {
		fmt.Fprintf(b, "![%s](%s)\n", p.Label, p.Href)
	}
	if len(s.Pictures) > 0 {
		b.WriteString("\n")
	}
	var links []string
	for _, l := range s.Evidence {
		links = append(links, fmt.Sprintf("[%s](%s)", l.Label, l.Href))
	}
	fmt.Fprintf(b, "Evidence: %s\n", strings.Join(links, " · "))
	return b.String()
}

var stageWord = map[string]string{schema.Pass: "passed", schema.Fail: "FAILED", schema.NotRun: "not run"}

func table(b *strings.Builder, head string, rows []Pair) {
	b.WriteString(head + "\n|---|---|\n")
	for _, p := range rows {
		fmt.Fprintf(b, "| %s | %s |\n", p.Name, cell(p.Value))
	}
}

// Folder is what the pages show of one run folder held inside another page's folder (a
// merged run's shard): its rows' sections, their links under a prefix, and its versions.
type Folder struct {
	RunID    string
	Rows     []Section
	Versions VersionBlock
}

// ReadFolder reads the run folder runDir for a page whose links to it start with prefix
// ("shards/<name>/<run id>/"); shard names it in each section.
func ReadFolder(runDir, prefix, shard string) (Folder, error) {
	r, err := readRun(runDir)
	if err != nil {
		return Folder{}, err
	}
	f := Folder{RunID: r.info.RunID, Rows: r.sections(prefix), Versions: r.versionBlock("Versions")}
	for i := range f.Rows {
		f.Rows[i].Shard = shard
	}
	return f, nil
}

// VersionsMarkdown is a versions table and the venv's package list, folded (GitHub
// renders <details>), as PR.md (version 2) has them.
func VersionsMarkdown(vb VersionBlock) string {
	var b strings.Builder
	table(&b, versionsHead, vb.Lines)
	if len(vb.Packages) == 0 {
		b.WriteString("\nVenv: not recorded in run.json.\n")
		return b.String()
	}
	fmt.Fprintf(&b, "\n<details><summary>venv: %d packages, sha256 <code>%s</code></summary>\n\n", len(vb.Packages), vb.VenvSHA)
	for _, p := range vb.Packages {
		fmt.Fprintf(&b, "- `%s`\n", p)
	}
	b.WriteString("\n</details>\n")
	return b.String()
}

const versionsHead = "| what | version |"
