package evidencecheck

import "encoding/json"

// Stages is the pipeline every row runs, in order; a row passes only if results.json
// lists exactly these, each "pass". (The harness's StageNames, less "report".)
var Stages = []string{"preflight", "build", "correctness", "serve", "benchmark", "influence", "identity"}

// Row status values, as the harness writes them.
const (
	statusQualified = "qualified"
	statusSmoke     = "smoke-passed"
	statusPassedNQ  = "passed-not-qualification"
	statusFailed    = "failed"
	statusNotRun    = "not-run"
)

// PercentileMethod is the only method the reports may use.
const PercentileMethod = "nearest-rank"

// runInfo is the part of run.json that is checked.
type runInfo struct {
	RunID         string   `json:"run_id"`
	Qualification bool     `json:"qualification_run"`
	GoVersion     string   `json:"go_version"`
	HarnessCommit string   `json:"harness_commit"`
	HarnessDirty  bool     `json:"harness_dirty"`
	AIPerfVersion string   `json:"aiperf_version"`
	Skips         []string `json:"skips"`
	Rows          []string `json:"rows"`
}

type stageResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

type quantiles struct {
	P50    float64 `json:"p50_ms"`
	P95    float64 `json:"p95_ms"`
	Count  int     `json:"count"`
	Method string  `json:"method"`
}

type caseCounts struct {
	Total    int `json:"total"`
	Executed int `json:"executed"`
	Failed   int `json:"failed"`
	Errors   int `json:"errors"`
	Skipped  int `json:"skipped"`
}

type identityRequest struct {
	RequestID    string  `json:"request_id"`
	Phase        string  `json:"phase"`
	Prompt       string  `json:"prompt"`
	InputSHA256  string  `json:"input_sha256"`
	HTTPSHA256   string  `json:"http_sha256"`
	NativeSHA256 string  `json:"native_sha256"`
	HTTPFile     string  `json:"http_file"`
	NativeFile   string  `json:"native_file"`
	Pixels       string  `json:"pixels"`
	ClientMs     float64 `json:"client_latency_ms"`
	TaskMs       float64 `json:"task_ms"`
}

type identitySummary struct {
	Total         int               `json:"total"`
	PixelMatches  int               `json:"pixel_matches"`
	ByteIdentical int               `json:"byte_identical"`
	Requests      []identityRequest `json:"requests"`
}

type pixelDiff struct {
	SameSize       bool    `json:"same_size"`
	DifferingPixel int     `json:"differing_pixels"`
	MaxAbs         int     `json:"max_abs_diff"`
	MeanAbs        float64 `json:"mean_abs_diff"`
}

type influence struct {
	Instruction string    `json:"instruction"`
	Images      []string  `json:"images"`
	Repeat      pixelDiff `json:"repeat"`
	Other       pixelDiff `json:"other"`
}

// result is the part of a row's results.json that is checked. Unknown fields are
// left alone: a field that no check reads makes no claim this package vouches for.
type result struct {
	Schema     string `json:"schema"`
	RunID      string `json:"run_id"`
	Row        string `json:"row"`
	Checkpoint struct {
		Name    string `json:"name"`
		Family  string `json:"family"`
		Backend string `json:"backend"`
		Model   string `json:"model"`
		Profile string `json:"profile"`
		Smoke   bool   `json:"smoke"`
	} `json:"checkpoint"`
	Status  string        `json:"status"`
	Reason  string        `json:"reason"`
	Stages  []stageResult `json:"stages"`
	Runtime string        `json:"runtime"`
	Bundle  *struct {
		SHA256 string `json:"sha256"`
		Bytes  int64  `json:"bytes"`
	} `json:"bundle"`
	Settings     map[string]string `json:"settings"`
	Measured     int               `json:"measured"`
	Warmup       int               `json:"warmup"`
	Correctness  *caseCounts       `json:"correctness"`
	ClientErrors *int              `json:"client_errors"`
	HTTP         *quantiles        `json:"http_latency"`
	Task         *quantiles        `json:"task_time"`
	TaskSource   string            `json:"task_time_source"`
	ImagesPerS   float64           `json:"images_per_s"`
	Overhead     *struct {
		P50DiffMs float64 `json:"client_p50_minus_task_p50_ms"`
		Fraction  float64 `json:"fraction_of_client_p50"`
	} `json:"http_overhead"`
	Identity     *identitySummary `json:"identity"`
	InfluenceRaw json.RawMessage  `json:"influence"`
	Command      string           `json:"command"`
}

func (r *result) passing() bool {
	return r.Status == statusQualified || r.Status == statusSmoke || r.Status == statusPassedNQ
}
