package harness

import (
	"fmt"
	"sort"
	"strings"
)

// Row status values, in the order of the DESIGN status levels.
const (
	StatusQualified = "qualified"                // every stage passed, zero skips in the run, not smoke
	StatusSmoke     = "smoke-passed"             // every stage passed on a smoke profile: never qualification
	StatusPassedNQ  = "passed-not-qualification" // every stage passed in a run that had skips
	StatusFailed    = "failed"
	StatusNotRun    = "not-run"
)

// StageResult is one stage of one row.
type StageResult struct {
	Name   string  `json:"name"`
	Status string  `json:"status"` // pass, fail, not-run
	Error  string  `json:"error,omitempty"`
	WallS  float64 `json:"wall_s"`
}

// Result is a row's results.json: every headline number and where it came from.
type Result struct {
	Schema     string        `json:"schema"`
	RunID      string        `json:"run_id"`
	Row        string        `json:"row"`
	Checkpoint CheckpointRef `json:"checkpoint"`
	Status     string        `json:"status"`
	Reason     string        `json:"reason,omitempty"`
	Stages     []StageResult `json:"stages"`

	Runtime   string            `json:"runtime,omitempty"`
	Container *ContainerInfo    `json:"container,omitempty"`
	Bundle    *BundleInfo       `json:"bundle,omitempty"`
	Settings  map[string]string `json:"settings,omitempty"`
	Measured  int               `json:"measured"`
	Warmup    int               `json:"warmup"`

	Correctness  *CaseCounts      `json:"correctness,omitempty"`
	StartupS     float64          `json:"startup_s,omitempty"`
	ClientErrors *int             `json:"client_errors,omitempty"` // nil until AIPerf's raw export was read
	HTTP         *Quantiles       `json:"http_latency,omitempty"`
	Task         *Quantiles       `json:"task_time,omitempty"`
	TaskSource   string           `json:"task_time_source,omitempty"`
	ImagesPerS   float64          `json:"images_per_s,omitempty"`
	Overhead     *Overhead        `json:"http_overhead,omitempty"`
	Identity     *IdentitySummary `json:"identity,omitempty"`
	Influence    *InfluenceResult `json:"influence,omitempty"`
	Command      string           `json:"command"`
}

type CheckpointRef struct {
	Name     string `json:"name"`
	Family   string `json:"family"`
	Backend  string `json:"backend"`
	Model    string `json:"model"`
	Profile  string `json:"profile"`
	Revision string `json:"revision,omitempty"`
	Smoke    bool   `json:"smoke"`
}

// BundleInfo identifies the exact bundle every later stage used.
type BundleInfo struct {
	Path     string            `json:"path"`
	SHA256   string            `json:"sha256"`
	Bytes    int64             `json:"bytes"`
	CacheKey string            `json:"cache_key"`
	Cached   bool              `json:"cached"`
	BuildS   float64           `json:"build_wall_s"`
	Builder  string            `json:"builder_sha256"`
	Settings map[string]string `json:"build_settings"`
}

// IdentitySummary counts native-vs-HTTP comparisons over every request, warmup included.
type IdentitySummary struct {
	Total         int               `json:"total"`
	PixelMatches  int               `json:"pixel_matches"`
	ByteIdentical int               `json:"byte_identical"`
	Requests      []IdentityRequest `json:"requests"`
}

type IdentityRequest struct {
	RequestID    string  `json:"request_id"`
	Phase        string  `json:"phase"`
	Prompt       string  `json:"prompt"`
	InputSHA256  string  `json:"input_sha256"`
	HTTPSHA256   string  `json:"http_sha256"`
	NativeSHA256 string  `json:"native_sha256"`
	HTTPFile     string  `json:"http_file"`
	NativeFile   string  `json:"native_file"`
	Pixels       string  `json:"pixels"`
	ClientMs     float64 `json:"client_latency_ms,omitempty"`
	TaskMs       float64 `json:"task_ms,omitempty"`
}

// Overhead is a reported ratio, never a timing column: how much of the client p50 the
// server's Task p50 does not account for (HTTP, multipart, base64, queueing).
type Overhead struct {
	P50DiffMs float64 `json:"client_p50_minus_task_p50_ms"`
	Fraction  float64 `json:"fraction_of_client_p50"`
}

func newOverhead(client, task Quantiles) *Overhead {
	d := client.P50 - task.P50
	return &Overhead{P50DiffMs: d, Fraction: d / client.P50}
}

// MarkdownHeader and Markdown render the stage-7-style result table.
const MarkdownHeader = "| checkpoint | profile | backend | runtime | bundle sha256 | settings | measured + warmup | native/HTTP pixel matches | client errors | HTTP p50 / p95 (s) | Task p50 / p95 (s) | images/s | correctness executed / skipped | status |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

func (r *Result) Markdown() string {
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
	status := r.Status
	if r.Reason != "" {
		status += ": " + r.Reason
	}
	cells := []string{r.Checkpoint.Name, r.Checkpoint.Profile, r.Checkpoint.Backend, orDash(r.Runtime), sha,
		settingsText(r.Settings), counts, identity, errs, httpq, taskq, ips, corr, status}
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

func settingsText(s map[string]string) string {
	if len(s) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return strings.Join(parts, " ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
