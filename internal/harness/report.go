package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"qualkit/internal/quality"
	"qualkit/internal/schema"
)

func newOverhead(client, task schema.Quantiles) *schema.Overhead {
	d := client.P50 - task.P50
	return &schema.Overhead{P50DiffMs: d, Fraction: d / client.P50}
}

// MarkdownRow renders a result as one line of row.md's table, one cell per
// schema.RowColumns.
func MarkdownRow(r *schema.Result) string {
	dash := "-"
	sha, counts, errs, identity, httpq, taskq, ips, corr := dash, dash, dash, dash, dash, dash, dash, dash
	if r.Bundle != nil && len(r.Bundle.SHA256) >= 12 {
		sha = "`" + r.Bundle.SHA256[:12] + "`"
	}
	if r.ClientErrors != nil {
		// The request counts and errors are what AIPerf recorded; a row that never got
		// that far shows none.
		counts, errs = fmt.Sprintf("%d + %d", r.Measured, r.Warmup), fmt.Sprint(*r.ClientErrors)
	}
	if r.Identity != nil {
		identity = fmt.Sprintf("%d/%d", r.Identity.PixelMatches, r.Identity.Total)
	}
	if r.HTTP != nil {
		httpq = fmt.Sprintf("%.4f / %.4f", r.HTTP.P50/1000, r.HTTP.P95/1000)
	}
	if r.Task != nil {
		taskq = fmt.Sprintf("%.4f / %.4f", r.Task.P50/1000, r.Task.P95/1000)
	}
	if r.ImagesPerS > 0 {
		ips = fmt.Sprintf("%.4g", r.ImagesPerS)
	}
	if r.Correctness != nil {
		corr = fmt.Sprintf("%d / %d", r.Correctness.Executed, r.Correctness.Skipped)
	}
	qual := dash
	if r.Quality != nil {
		qual = quality.Worst(r.Quality.Requests, r.Quality.Pair)
	}
	status := r.Status
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	cells := []string{r.Checkpoint.Name, r.Checkpoint.Profile, r.Checkpoint.Backend, orDash(r.Runtime), sha,
		settingsText(r.Settings), counts, identity, qual, errs, httpq, taskq, ips, corr, status}
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
