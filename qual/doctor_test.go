package qual

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"qualkit/internal/family"
	"qualkit/internal/harness"
)

// doctorRow is one row's readiness, as -qualkit.doctor -qualkit.json prints it.
type doctorRow struct {
	Table        string               `json:"table"`
	Row          string               `json:"row"`
	Checkpoint   string               `json:"profile"` // not "Profile": the inventory reads qual/ literals with that key as rows
	Ready        bool                 `json:"ready"`
	Requirements []family.Requirement `json:"requirements"`
	GPUError     string               `json:"gpu_error,omitempty"`
}

// printDoctor prints, for every row -run selects, what it needs and the host lacks. It
// returns 0 when every selected row is ready, 1 when one is not, 2 when -run selects
// no row or the suite cannot start.
func printDoctor(root string, cfg harness.SuiteConfig, w io.Writer) int {
	s, err := harness.NewSuite(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	defer s.Finish(context.Background()) // no row ran: it removes the empty run folder
	work, err := os.MkdirTemp("", "qualkit-doctor-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "qual:", err)
		return 2
	}
	defer os.RemoveAll(work)
	pattern := flag.Lookup("test.run").Value.String()
	env := family.Env{Root: root, Work: work, Python: cfg.Python}
	var rows []doctorRow
	for _, tb := range tables() {
		for _, c := range tb.rows {
			if !selected(pattern, tb.name(), c.Name) {
				continue
			}
			if c.Double {
				if err := doubleOnce(); err != nil {
					fmt.Fprintln(os.Stderr, "qual: the TRTMC contract double:", err)
					return 2
				}
			}
			rd := s.Preflight(context.Background(), c, env)
			rows = append(rows, doctorRow{Table: tb.name(), Row: c.Name, Checkpoint: c.Profile,
				// An empty list, never null: a ready row has no missing requirement.
				Ready: len(rd.Requirements) == 0, Requirements: append([]family.Requirement{}, rd.Requirements...), GPUError: rd.GPUError})
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(os.Stderr, "qual: doctor: -run %q selects no row of %s\n", pattern, strings.Join(tableTests(), ", "))
		return 2
	}
	code := 0
	for _, r := range rows {
		if !r.Ready {
			code = 1
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintln(os.Stderr, "qual:", err)
			return 2
		}
		return code
	}
	fmt.Fprintln(w, "qual:", s.RuntimeNote)
	for _, r := range rows {
		if r.Ready {
			fmt.Fprintf(w, "ready     %s/%s (profile %s)\n", r.Table, r.Row, r.Checkpoint)
			continue
		}
		fmt.Fprintf(w, "NOT READY %s/%s (profile %s): %v\n", r.Table, r.Row, r.Checkpoint, harness.Missing(r.Requirements))
	}
	return code
}

// selected says whether go test's -run pattern would run the row's subtest: each
// slash-separated element of the pattern must match the name at its level, unanchored,
// as go test matches them. Levels beyond the row (its stages) select the row.
func selected(pattern, test, row string) bool {
	if pattern == "" {
		return true
	}
	names := []string{test, row}
	for i, elem := range splitPattern(pattern) {
		if i >= len(names) {
			break
		}
		re, err := regexp.Compile(elem)
		if err != nil || !re.MatchString(names[i]) {
			return false
		}
	}
	return true
}

// splitPattern splits a -run pattern at the slashes outside brackets and parentheses,
// as the testing package does.
func splitPattern(p string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case '\\':
			i++
		case '/':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:])
}

func tableTests() []string {
	var out []string
	for _, tb := range tables() {
		out = append(out, tb.name())
	}
	return out
}
