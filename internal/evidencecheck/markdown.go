package evidencecheck

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"qualkit/internal/prsummary"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

// splitRow splits a Markdown table line into cells, honouring `\|`.
func splitRow(line string) ([]string, bool) {
	if !strings.HasPrefix(line, "| ") || !strings.HasSuffix(line, " |") || len(line) < 4 {
		return nil, false
	}
	inner := line[2 : len(line)-2]
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(inner); i++ {
		switch {
		case inner[i] == '\\' && i+1 < len(inner) && inner[i+1] == '|':
			cur.WriteByte('|')
			i++
		case strings.HasPrefix(inner[i:], " | "):
			cells = append(cells, cur.String())
			cur.Reset()
			i += 2
		default:
			cur.WriteByte(inner[i])
		}
	}
	return append(cells, cur.String()), true
}

// cellWant: ok tests number cells, accepting values equal up to float noise.
type cellWant struct {
	want   string
	source string
	ok     func(got string) bool
}

func exact(want, source string) cellWant { return cellWant{want: want, source: source} }

func (w cellWant) matches(got string) bool { return got == w.want || (w.ok != nil && w.ok(got)) }

// numbers accepts any text the values (up to 1e-12 relative) print as with format.
func numbers(format, source string, vs ...float64) cellWant {
	render := func(scale float64) string {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = fmt.Sprintf(format, v*scale)
		}
		return strings.Join(parts, " / ")
	}
	want := render(1)
	return cellWant{want: want, source: source, ok: func(got string) bool {
		return got == want || got == render(1+1e-12) || got == render(1-1e-12)
	}}
}

func (r *rowCheck) expectedCells() []cellWant {
	res := r.res
	dash := exact("-", "no claim in results.json")
	out := make([]cellWant, 0, len(schema.RowColumns))
	out = append(out,
		exact(res.Checkpoint.Name, "results.json checkpoint.name"),
		exact(res.Checkpoint.Profile, "results.json checkpoint.profile"),
		exact(res.Checkpoint.Backend, "results.json checkpoint.backend"),
		exact(orDash(res.Runtime), "results.json runtime, serve/startup.json"))
	switch sha := r.bundleSHA; {
	case res.Bundle == nil, sha == "" && len(res.Bundle.SHA256) < 12:
		// No bundle, or a build that failed before it wrote one.
		out = append(out, dash)
	case sha == "":
		out = append(out, exact("`"+prefix(res.Bundle.SHA256, 12)+"`", "results.json bundle.sha256 (no build/bundle.json)"))
	default:
		out = append(out, exact("`"+prefix(sha, 12)+"`", schema.BundleFile))
	}
	out = append(out,
		exact(settingsText(res.Settings), "results.json settings, as every request in "+schema.RawExportFile+" carried them"))
	if r.rawErr == nil {
		out = append(out, exact(fmt.Sprintf("%d + %d", res.Measured, res.Warmup), "results.json measured/warmup, the aiperf command in commands.jsonl"))
	} else {
		out = append(out, exact("-", "no AIPerf raw export: no request was recorded"))
	}
	if res.Identity != nil && r.rawErr == nil {
		m, total := r.identityCounts()
		out = append(out, exact(fmt.Sprintf("%d/%d", m, total), "decoded PNG pairs in identity/"))
	} else {
		out = append(out, dash)
	}
	if res.Quality != nil && r.rawErr == nil {
		out = append(out, exact(quality.Worst(r.derivedMeasures()), "the measures re-derived from the HTTP outputs in identity/ and the pair's reference image"))
	} else {
		out = append(out, dash)
	}
	if r.rawErr == nil {
		out = append(out, exact(fmt.Sprint(r.clientErrors()), "failed records in "+schema.RawExportFile))
	} else {
		out = append(out, exact("-", "no AIPerf raw export: no request was recorded"))
	}
	client, task, problems := r.measuredTimes()
	timing := func(q *schema.Quantiles, xs []float64, src string) cellWant {
		switch {
		case q == nil:
			return dash
		case r.rawErr != nil || len(problems) > 0:
			return exact("(not derivable: "+strings.Join(problems, "; ")+")", src)
		}
		return numbers("%.4f", schema.PercentileMethod+" p50 / p95 over "+src, nearestRank(xs, 50)/1000, nearestRank(xs, 95)/1000)
	}
	out = append(out,
		timing(res.HTTP, client, fmt.Sprintf("%d request_latency values in %s", len(client), schema.ProfileExportFile)),
		timing(res.Task, task, fmt.Sprintf("%d Task times in %s", len(task), r.taskSrc)))
	if res.ImagesPerS > 0 && r.rawErr == nil {
		out = append(out, numbers("%.4g", "profiling records / (last request_end_ns - first request_start_ns) in "+schema.RawExportFile, r.imagesPerSecond()))
	} else {
		out = append(out, dash)
	}
	switch {
	case res.Correctness == nil:
		out = append(out, dash)
	case !r.corrOK:
		out = append(out, exact("(no readable correctness/junit.xml)", ""))
	default:
		out = append(out, exact(fmt.Sprintf("%d / %d", r.corr.Executed, r.corr.Skipped), "test cases in correctness/junit.xml"))
	}
	status := res.Status
	if res.Reason != "" {
		status += ": " + res.Reason
	}
	return append(out, exact(status, "results.json status and reason, checked against every stage"))
}

func prefix(s string, n int) string {
	if len(s) < n {
		return s
	}
	return s[:n]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *rowCheck) checkMarkdown() {
	const f = schema.RowMarkdown
	b, ok := r.read(f)
	if !ok {
		return
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	head, sep := schema.RowHeader()
	if len(lines) != 3 {
		r.fail(f, "shape", "a header, a separator and one row", fmt.Sprintf("%d lines", len(lines)))
		return
	}
	r.same(f, "header", head, lines[0], "schema.RowHeader")
	r.same(f, "separator", sep, lines[1], "")
	cells, ok := splitRow(lines[2])
	if !ok || len(cells) != len(schema.RowColumns) {
		r.fail(f, "row", fmt.Sprintf("%d cells", len(schema.RowColumns)), fmt.Sprintf("%d cells in %q", len(cells), lines[2]))
		return
	}
	for i, w := range r.expectedCells() {
		r.c.rep.Claims++
		got := cells[i]
		if w.matches(got) {
			continue
		}
		want := quote(w.want)
		if w.source != "" {
			want += " (" + w.source + ")"
		}
		r.fail(f, schema.RowColumns[i], want, quote(got))
	}
}

// expectedLine is row.md's own line when every cell checked out, else the evidence's cells.
func (r *rowCheck) expectedLine() string {
	cells := r.expectedCells()
	if b, ok := r.read(schema.RowMarkdown); ok {
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		got, ok := []string(nil), len(lines) == 3
		if ok {
			got, ok = splitRow(lines[2])
		}
		for i := 0; ok && i < len(cells); i++ {
			ok = len(got) == len(cells) && cells[i].matches(got[i])
		}
		if ok {
			return lines[2]
		}
	}
	parts := make([]string, len(cells))
	for i, w := range cells {
		parts[i] = strings.ReplaceAll(w.want, "|", `\|`)
	}
	return "| " + strings.Join(parts, " | ") + " |"
}

func (c *checker) readRunInfo() {
	b, ok := c.read(schema.RunFile)
	if !ok {
		return
	}
	var info schema.RunInfo
	if err := json.Unmarshal(b, &info); err != nil {
		c.fail(schema.RunFile, "valid JSON", "the run's run.json", err.Error())
		return
	}
	c.info = &info
}

func (c *checker) checkRun() {
	info := c.info
	if info == nil {
		return
	}
	// The run id is run.json's own: a copied or renamed run folder is the same run.
	c.truth(info.RunID != "", schema.RunFile, "run_id", "a run id", `""`)
	if len(info.VenvSet) > 0 || info.VenvSHA256 != "" {
		c.same(schema.RunFile, "venv_sha256", schema.VenvSetSHA256(info.VenvSet), info.VenvSHA256, "the sha256 of venv_set, one entry per line")
	}
	seen := map[string]bool{}
	for i, row := range info.Rows {
		c.truth(!seen[row], schema.RunFile, "rows", "each row once", row+" twice")
		seen[row] = true
		if i > 0 {
			c.truth(info.Rows[i-1] < row, schema.RunFile, "rows", "sorted by name", strings.Join(info.Rows, " "))
		}
	}
	for _, s := range info.Skips {
		row, _, ok := strings.Cut(s, ": ")
		c.truth(ok && seen[row], schema.RunFile, "skips", "\"<row>: <reason>\" naming a row of the run", quote(s))
	}
	c.checkSummary()
	c.checkPR()
	c.checkIndex()
	c.checkRendered()
}

func (c *checker) expectedSummary() (string, bool) {
	var b strings.Builder
	head, sep := schema.RowHeader()
	fmt.Fprintf(&b, "# qualkit run %s\n\n%s\n%s\n", c.info.RunID, head, sep)
	for _, r := range c.rows {
		if r.res == nil {
			return "", false
		}
		b.WriteString(r.expectedLine() + "\n")
	}
	b.WriteString("\n")
	for _, r := range c.rows {
		fmt.Fprintf(&b, "- `%s`: `%s`\n", r.name, r.res.Command)
	}
	if len(c.info.Skips) > 0 {
		b.WriteString("\nNot a qualification run: skipped rows:\n")
		for _, s := range c.info.Skips {
			b.WriteString("- " + s + "\n")
		}
	}
	return b.String(), true
}

// checkSummary: SUMMARY.md is exactly the row.md rows, commands and the run's skips.
func (c *checker) checkSummary() {
	got, ok := c.read(schema.SummaryFile)
	if !ok {
		return
	}
	want, ok := c.expectedSummary()
	if !ok {
		return // a row without a readable row.md: already reported
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		w, g := "(end of file)", "(end of file)"
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			c.fail(schema.SummaryFile, fmt.Sprintf("line %d", i+1), quote(w)+" (the rows as the raw records give them, results.json commands, run.json skips)", quote(g))
			return
		}
	}
	c.rep.Claims++
}

// checkRendered: PR.md and index.html are exactly what prsummary.Render renders.
func (c *checker) checkRendered() {
	md, page, err := prsummary.Render(c.dir)
	if err != nil {
		c.fail(prsummary.MarkdownFile, "rendered from the run folder", "PR.md and index.html as the folder renders them", err.Error())
		return
	}
	for _, f := range []struct {
		name string
		want []byte
	}{{prsummary.MarkdownFile, md}, {prsummary.IndexFile, page}} {
		got, ok := c.read(f.name)
		if !ok {
			continue // the layout check says it is missing
		}
		// A run from before the current version of a page: its own version re-rendered.
		if v := prsummary.PageVersion(got); f.name == prsummary.IndexFile && v != prsummary.IndexVersion {
			if f.want, err = prsummary.IndexAt(c.dir, v); err != nil {
				c.fail(f.name, "rendered from the run folder", "index.html as its version renders it", err.Error())
				continue
			}
		}
		if v := prsummary.MarkdownVersionOf(got); f.name == prsummary.MarkdownFile && v != prsummary.MarkdownVersion {
			if f.want, err = prsummary.MarkdownAt(c.dir, v); err != nil {
				c.fail(f.name, "rendered from the run folder", "PR.md as its version renders it", err.Error())
				continue
			}
		}
		c.sameText(f.name, string(f.want), string(got), "rendered from results.json, row.md, run.json and "+prsummary.CheckpointsFile)
	}
}

func (c *checker) sameText(file, want, got, source string) {
	c.rep.Claims++
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		w, g := "(end of file)", "(end of file)"
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			c.fail(file, fmt.Sprintf("line %d", i+1), quote(w)+" ("+source+")", quote(g))
			return
		}
	}
}

// checkPR: PR.md has every row.md line verbatim and no result line of its own.
func (c *checker) checkPR() {
	b, ok := c.read(schema.PRFile)
	if !ok {
		return
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		lines[l] = true
	}
	rowLines := map[string]bool{}
	for _, r := range c.rows {
		if r.res == nil {
			continue
		}
		want := r.expectedLine()
		rowLines[want] = true
		c.truth(lines[want], schema.PRFile, "result row "+r.name, quote(want)+" ("+r.name+"/row.md, checked against the raw records)", "no such line")
		if r.res != nil {
			c.truth(strings.Contains(string(b), r.res.Command), schema.PRFile, "command of "+r.name, quote(r.res.Command)+" ("+r.name+"/results.json)", "not there")
		}
	}
	head, _ := schema.RowHeader()
	for _, l := range strings.Split(string(b), "\n") {
		if cells, ok := splitRow(l); ok && len(cells) == len(schema.RowColumns) && !rowLines[l] && l != head {
			c.fail(schema.PRFile, "result row", "only the rows' row.md lines", quote(l))
		}
	}
}

var statusAttr = regexp.MustCompile(`data-row="([^"]*)" data-status="([^"]*)"`)

func (c *checker) checkIndex() {
	b, ok := c.read(schema.IndexFile)
	if !ok {
		return
	}
	found := map[string]string{}
	for _, m := range statusAttr.FindAllStringSubmatch(string(b), -1) {
		found[m[1]] = m[2]
	}
	for _, r := range c.rows {
		if r.res == nil {
			continue
		}
		got, ok := found[r.name]
		if !ok {
			got = "no entry"
		}
		c.same(schema.IndexFile, "status of "+r.name, r.res.Status, got, r.name+"/results.json")
	}
	for row := range found {
		c.truth(c.hasRow(row), schema.IndexFile, "rows", "rows of run.json", row)
	}
}

// intText: "(absent)" when results.json holds none.
func intText(v *int) string {
	if v == nil {
		return "(absent)"
	}
	return fmt.Sprint(*v)
}
