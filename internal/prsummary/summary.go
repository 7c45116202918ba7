package prsummary

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"qualkit/internal/inventory"
	"qualkit/internal/schema"
)

// The files Write puts into the run folder.
const (
	MarkdownFile    = schema.PRFile
	IndexFile       = schema.IndexFile
	CheckpointsFile = schema.CheckpointsFile
)

// Checkpoints is checkpoints.json: the inventory's image-edit group when the run
// finished, kept in the run folder so that PR.md renders again from the folder alone.
type Checkpoints struct {
	Source      string       `json:"source"`         // the inventory read: inventory.json or a TRTMC checkout's folder name
	Note        string       `json:"note,omitempty"` // why the list is short or empty
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// Checkpoint is one profile of the inventory's image-edit group.
type Checkpoint struct {
	Profile string `json:"profile"`
	Class   string `json:"class"`
	Status  string `json:"status"`
}

// DefaultInventory is the inventory snapshot `make inventory` commits, relative to the
// repository root: reports read it unless a TRTMC checkout is named.
const DefaultInventory = "inventory.json"

// Options says where the inventory comes from. Relative paths are taken from Root.
type Options struct {
	Root      string // repository root; default "."
	TRTMC     string // a TRTMC checkout to inventory; "" reads Inventory instead. Unreadable: the status table says why
	Inventory string // the inventory JSON read when TRTMC is ""; default DefaultInventory
	// Rows are the qual tables' rows (the table registry: qual hands its own; commands
	// read its export with inventory.ReadTables). None: the status table says so.
	Rows         []inventory.QualRow
	EvidenceRoot string // the runs the inventory's status is proven from; default the run folder's parent
	HTML         bool   // also write index.html
}

func (o Options) resolve(runDir string) Options {
	if o.Root == "" {
		o.Root = "."
	}
	abs := func(p, def string) string {
		if p == "" {
			p = def
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(o.Root, p)
		}
		return p
	}
	if o.TRTMC != "" {
		o.TRTMC = abs(o.TRTMC, "")
	}
	o.Inventory = abs(o.Inventory, DefaultInventory)
	if o.EvidenceRoot == "" {
		o.EvidenceRoot = filepath.Dir(filepath.Clean(runDir))
	}
	return o
}

// Write snapshots the inventory into <runDir>/checkpoints.json, then renders PR.md and,
// with o.HTML, index.html from the run folder alone. Call it after the rows are final and
// before the run's SHA256SUMS, so the checksums cover all three.
func Write(runDir string, o Options) error {
	r, err := readRun(runDir)
	if err != nil {
		return err
	}
	cp := snapshot(r, o.resolve(runDir))
	b, err := json.MarshalIndent(cp, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runDir, CheckpointsFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	md, page, err := Render(runDir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runDir, MarkdownFile), md, 0o644); err != nil {
		return err
	}
	if !o.HTML {
		return nil
	}
	return os.WriteFile(filepath.Join(runDir, IndexFile), page, 0o644)
}

// Render is PR.md and index.html as the run folder's files say they must be: the same
// bytes every time for the same folder.
func Render(runDir string) (md, page []byte, err error) {
	if md, err = Markdown(runDir); err == nil {
		page, err = Index(runDir)
	}
	return md, page, err
}

// statusLine is one line of the checkpoint status table.
type statusLine struct {
	checkpoint, class, inventory, thisRun, evidence string
}

// MarkdownVersion is the PR.md version Markdown renders: 2 adds, per row, the stage
// strip, the timing table and the hardware, and the venv's package list.
const MarkdownVersion = 2

var markdownMarker = regexp.MustCompile(`^<!-- qualkit PR.md ([0-9]+) -->\n`)

// MarkdownVersionOf is the PR.md version a file states (1 when it states none).
func MarkdownVersionOf(md []byte) int {
	if m := markdownMarker.FindSubmatch(md); m != nil {
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	return 1
}

// Markdown renders PR.md from the run folder. Links are relative to it.
func Markdown(runDir string) ([]byte, error) { return MarkdownAt(runDir, MarkdownVersion) }

// MarkdownAt renders PR.md as version v renders it (1 or MarkdownVersion).
func MarkdownAt(runDir string, v int) ([]byte, error) {
	if v != 1 && v != MarkdownVersion {
		return nil, fmt.Errorf("PR.md version %d: this qualkit renders versions 1 and %d", v, MarkdownVersion)
	}
	r, err := readRun(runDir)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if v >= 2 {
		fmt.Fprintf(&b, "<!-- qualkit PR.md %d -->\n", v)
	}
	counts := map[string]int{}
	for _, w := range r.rows {
		counts[w.res.Status]++
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	fmt.Fprintf(&b, "# qualkit run %s\n\n", r.info.RunID)
	fmt.Fprintf(&b, "%d row(s): %s. ", len(r.rows), strings.Join(parts, ", "))
	if len(r.info.Skips) > 0 || !r.info.Qualification {
		fmt.Fprintf(&b, "Not a qualification run (%d skip(s)): it qualifies nothing. ", len(r.info.Skips))
	}
	fmt.Fprintf(&b, "Verify the folder with `make check-evidence DIR=evidence/%s`.\n\n", r.info.RunID)

	b.WriteString(statusSection(r, false))

	b.WriteString("\n## Results\n\n")
	b.WriteString(r.resultsTable())
	if v >= 2 {
		for _, s := range r.sections("") {
			b.WriteString(MarkdownSection(s))
		}
	} else {
		r.sectionsV1(&b)
	}

	b.WriteString("\n## Versions\n\n")
	if v >= 2 {
		b.WriteString(VersionsMarkdown(r.versionBlock("Versions")))
	} else {
		table(&b, versionsHead, versions(r, v))
	}
	if len(r.info.Skips) > 0 {
		b.WriteString("\n## Skips\n\n")
		for _, s := range r.info.Skips {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}
	return []byte(b.String()), nil
}

// resultsTable is row.md's header and every row's line.
func (r *run) resultsTable() string {
	var b strings.Builder
	if len(r.rows) > 0 {
		md, _ := os.ReadFile(filepath.Join(r.dir, r.rows[0].name, schema.RowMarkdown))
		// row.md is the table's header, its separator and the row: take the first two.
		if head := strings.SplitN(string(md), "\n", 3); len(head) == 3 {
			b.WriteString(head[0] + "\n" + head[1] + "\n")
		}
	}
	for _, w := range r.rows {
		b.WriteString(w.line + "\n")
	}
	return b.String()
}

// sectionsV1 are PR.md version 1's row sections: status, reason, command, pictures, links.
func (r *run) sectionsV1(b *strings.Builder) {
	for _, w := range r.rows {
		fmt.Fprintf(b, "\n### `%s`: %s\n\n", w.name, w.res.Status)
		if w.res.Reason != "" {
			fmt.Fprintf(b, "%s\n\n", w.res.Reason)
		}
		fmt.Fprintf(b, "Reproduce:\n\n```\n%s\n```\n\n", w.res.Command)
		var pics []string
		for _, p := range []struct{ alt, file string }{{"contact sheet", schema.ContactSheetFile}, {"latency chart", schema.LatencyChartFile}} {
			if w.has(p.file) {
				pics = append(pics, fmt.Sprintf("![%s of %s](%s/%s)", p.alt, w.name, w.name, p.file))
			}
		}
		if len(pics) > 0 {
			b.WriteString(strings.Join(pics, "\n") + "\n\n")
		}
		var links []string
		for _, l := range evidenceLinks {
			if w.has(l.file) {
				links = append(links, fmt.Sprintf("[%s](%s/%s)", l.label, w.name, l.file))
			}
		}
		fmt.Fprintf(b, "Evidence: %s\n", strings.Join(links, " · "))
	}
}

// snapshot is the inventory's image-edit group as o's inventory, qual rows and evidence
// root give it now.
func snapshot(r *run, o Options) Checkpoints {
	cp := Checkpoints{Source: filepath.Base(o.Inventory), Checkpoints: []Checkpoint{}}
	load := func() (*inventory.Inventory, error) { return inventory.ReadJSON(o.Inventory) }
	if o.TRTMC != "" {
		cp.Source = filepath.Base(o.TRTMC)
		load = func() (*inventory.Inventory, error) { return inventory.Load(o.TRTMC) }
	}
	inv, err := load()
	if err != nil {
		cp.Note = "No inventory: " + cp.Source + " could not be read, so only this run's rows are listed."
		return cp
	}
	if o.Rows == nil {
		cp.Note = "No qual rows were given (the table registry: make tables), so nothing is implemented."
	}
	if progress, err := inventory.LoadProgress(inventory.Profiles(o.Rows), o.EvidenceRoot); err == nil {
		inv.ApplyProgress(progress)
	}
	for _, p := range inv.Group() {
		cp.Checkpoints = append(cp.Checkpoints, Checkpoint{Profile: p.Profile, Class: string(p.Class), Status: string(p.Status)})
	}
	return cp
}

// statusSection is PR.md's checkpoint status: the ladder, and where each checkpoint of
// the inventory's image-edit group (and each row of the run) stands on it.
func statusSection(r *run, everyRow bool) string {
	var b strings.Builder
	b.WriteString("## Checkpoint status\n\n")
	b.WriteString("Ladder: planned -> implemented (a qual row exists) -> family-validated (the family's unchanged correctness case passed on the exact bundle) -> aiperf-qualified (every stage passed in one run, zero skips).\n\n")
	lines, note := statusTable(r, everyRow)
	if note != "" {
		b.WriteString(note + "\n\n")
	}
	b.WriteString("| checkpoint | class | inventory status | this run proves | this run |\n|---|---|---|---|---|\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", l.checkpoint, l.class, l.inventory, l.thisRun, l.evidence)
	}
	return b.String()
}

// StatusMarkdown is the checkpoint status section over several run folders (a merged
// run's shards, each linked through its prefix, "shards/<name>/<run id>/"): their rows
// together, against the first shard's inventory snapshot.
func StatusMarkdown(dirs, prefixes []string) (string, error) {
	all := &run{}
	for i, dir := range dirs {
		r, err := readRun(dir)
		if err != nil {
			return "", err
		}
		if all.checkpoints == nil {
			all.checkpoints = r.checkpoints
		}
		for _, w := range r.rows {
			w.href = prefixes[i] + w.name
			all.rows = append(all.rows, w)
		}
	}
	return statusSection(all, true), nil
}

// statusTable is the snapshot's image-edit group, then this run's rows that the group
// does not list, each with what this run proves of it. everyRow lists every row of a
// profile two rows ran (a merged run's page); a single run's PR.md names its last.
func statusTable(r *run, everyRow bool) ([]statusLine, string) {
	byProfile := map[string][]row{}
	for _, w := range r.rows {
		p := w.res.Checkpoint.Profile
		if everyRow {
			byProfile[p] = append(byProfile[p], w)
		} else {
			byProfile[p] = []row{w}
		}
	}
	var lines []statusLine
	add := func(profile, class, inventory string) {
		if len(byProfile[profile]) == 0 {
			lines = append(lines, statusLine{"`" + profile + "`", class, inventory, "-", "not in this run"})
		}
		for _, w := range byProfile[profile] {
			lines = append(lines, statusLine{"`" + profile + "`", class, inventory, w.proves(),
				fmt.Sprintf("[`%s`](%s/results.json): %s", w.name, w.href, w.res.Status)})
		}
	}
	listed := map[string]bool{}
	note := "No inventory: this run folder has no " + CheckpointsFile + ", so only its rows are listed."
	if cp := r.checkpoints; cp != nil {
		note = cp.Note
		for _, p := range cp.Checkpoints {
			listed[p.Profile] = true
			add(p.Profile, p.Class, p.Status)
		}
	}
	for _, w := range r.rows {
		p := w.res.Checkpoint.Profile
		if !listed[p] {
			listed[p] = everyRow // else a line per row, each naming the profile's last row (version 2)
			add(p, "not a TRTMC profile ("+w.res.Checkpoint.Family+" family)", "-")
		}
	}
	return lines, note
}

// versions lists the software and hardware the run used (version 2 adds the host's CPU
// model and memory).
func versions(r *run, v int) []Pair {
	i := r.info
	commit := i.HarnessCommit
	if i.HarnessDirty {
		commit += " (dirty: " + strings.Join(i.Changes, "; ") + ")"
	}
	out := []Pair{
		{"Go", i.GoVersion},
		{"harness commit", commit},
		{"AIPerf", i.AIPerfVersion},
		{"host", fmt.Sprintf("%s, %s/%s, %d CPUs", cmp.Or(i.Hostname, "-"), i.OS, i.Arch, i.CPUs)},
	}
	if v >= 2 {
		mem := "-"
		if i.MemTotalBytes > 0 {
			mem = fmt.Sprintf("%.1f GiB", float64(i.MemTotalBytes)/(1<<30))
		}
		out = append(out, Pair{"CPU", cmp.Or(i.CPUModel, "-")}, Pair{"memory", mem})
	}
	if i.Docker != nil {
		nv := "no nvidia runtime"
		if i.Docker.NvidiaRuntime {
			nv = "nvidia runtime"
		}
		out = append(out, Pair{"Docker", fmt.Sprintf("%s on %s, %s", i.Docker.ServerVersion, i.Docker.OS, nv)})
	} else {
		out = append(out, Pair{"Docker", "none: " + cmp.Or(i.DockerError, "-")})
	}
	out = append(out, Pair{"serving", cmp.Or(i.RuntimeNote, "-")})
	if i := slices.IndexFunc(r.rows, func(w row) bool { return w.gpu != nil }); i >= 0 {
		g := r.rows[i].gpu
		var devs []string
		for _, d := range g.Devices {
			devs = append(devs, fmt.Sprintf("%s (%d GiB, cc %s)", d.Name, d.MemoryTotalBytes>>30, d.ComputeCapability))
		}
		out = append(out, Pair{"GPUs", fmt.Sprintf("%d: %s; driver %s, CUDA %d.%d", g.Count, strings.Join(devs, ", "),
			g.DriverVersion, g.CUDADriverVersion/1000, g.CUDADriverVersion%1000/10)})
	} else {
		note := "none"
		for _, w := range r.rows {
			if w.gpuNote != "" {
				note = "none: " + firstClause(w.gpuNote)
				break
			}
		}
		out = append(out, Pair{"GPUs", note})
	}
	for _, w := range r.rows {
		if c := w.res.Container; c != nil {
			out = append(out, Pair{"server image (" + w.name + ")", c.ImageID + " (" + c.ImageRef + ")"})
		}
		if bd := w.res.Bundle; bd != nil && bd.SHA256 != "" {
			out = append(out, Pair{"bundle (" + w.name + ")", fmt.Sprintf("sha256 %s, %d bytes", bd.SHA256, bd.Bytes)})
		}
	}
	return out
}

func firstClause(s string) string {
	if i := strings.Index(s, ";"); i > 0 {
		return s[:i]
	}
	return s
}

func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", `\|`)
}
