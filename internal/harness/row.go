package harness

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// row is the state one checkpoint row threads through its stages.
type row struct {
	s   *Suite
	c   Checkpoint
	t   *testing.T // the row's own test, for Attr and Cleanup
	ev  *RowEvidence
	env Env
	fx  *Fixtures

	bundle     string
	bundleSHA  string
	server     Server
	export     *Export
	httpPNG    map[string][]byte // request id -> PNG the HTTP response carried
	clientMs   map[string]float64
	taskMs     map[string]float64
	failed     string // first stage that failed
	skipReason string
	result     *Result
}

// stage is one named step of the pipeline.
type stage struct {
	name string
	run  func(r *row, ctx context.Context) error
}

// Stages is the pipeline, in order. Influence runs while the server is still up, since
// it needs HTTP; identity stops the server first, so the native Task has the GPU to itself.
var stages = []stage{
	{"preflight", (*row).preflight},
	{"build", (*row).build},
	{"correctness", (*row).correctness},
	{"serve", (*row).serve},
	{"benchmark", (*row).benchmark},
	{"influence", (*row).influence},
	{"identity", (*row).identity},
}

// StageNames lists the subtests every row runs, in order (the report last).
func StageNames() []string {
	names := make([]string, 0, len(stages)+1)
	for _, st := range stages {
		names = append(names, st.name)
	}
	return append(names, "report")
}

// Qualify runs every stage of one row as a subtest of t, then the report.
func (s *Suite) Qualify(t *testing.T, c Checkpoint) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ev, err := s.Evidence.Row(c.Name)
	if err != nil {
		t.Fatal(err)
	}
	r := &row{s: s, c: c.withDefaults(), t: t, ev: ev, env: Env{Root: s.cfg.Root, Work: t.TempDir(), Python: s.cfg.Python}}
	r.result = &Result{
		Schema: "qualkit.result/1", RunID: s.Evidence.RunID, Row: c.Name, Status: StatusFailed,
		Checkpoint: CheckpointRef{Name: c.Name, Family: c.Family, Backend: c.Adapter.Backend(), Model: c.Model,
			Profile: c.Profile, Revision: c.Revision, Smoke: c.Smoke},
		Measured: c.Bench.Measured, Warmup: c.Bench.Warmup,
		Command: reproduce(t.Name()),
	}
	s.register(r.result)
	t.Cleanup(func() {
		if r.server != nil {
			r.server.Stop(context.Background())
		}
	})
	for _, st := range stages {
		t.Run(st.name, r.wrap(st))
		if r.skipReason != "" {
			r.result.Status, r.result.Reason = StatusNotRun, r.skipReason
			t.Skipf("not run (not a qualification run): %s", r.skipReason)
		}
	}
	t.Run("report", r.report)
}

func (c Checkpoint) withDefaults() Checkpoint {
	c.Deadline = c.Deadline.withDefaults()
	return c
}

// wrap turns a stage into a subtest: it refuses to run after an earlier failure (that is
// a failure too, never a skip), times the stage and records its outcome.
func (r *row) wrap(st stage) func(*testing.T) {
	return func(t *testing.T) {
		res := StageResult{Name: st.name, Status: "fail"}
		start := time.Now()
		defer func() {
			res.WallS = time.Since(start).Seconds()
			if res.Status == "fail" && r.failed == "" {
				r.failed = st.name
			}
			r.result.Stages = append(r.result.Stages, res)
		}()
		if r.failed != "" {
			res.Status = "not-run"
			t.Fatalf("%s %s: not run because stage %q failed; evidence %s", st.name, r.c.Name, r.failed, r.ev.Dir)
		}
		err := st.run(r, t.Context())
		switch {
		case r.skipReason != "":
			res.Status = "not-run"
			t.Skipf("%s %s: %s", st.name, r.c.Name, r.skipReason)
		case err != nil:
			res.Error = err.Error()
			t.Fatalf("%s %s: %v\nevidence: %s", st.name, r.c.Name, err, r.ev.Dir)
		}
		res.Status = "pass"
	}
}

func (r *row) report(t *testing.T) {
	res := r.result
	switch {
	case r.failed != "":
		res.Status, res.Reason = StatusFailed, "stage "+r.failed+" failed"
	case r.c.Smoke:
		res.Status, res.Reason = StatusSmoke, "smoke profile: never qualification of the full checkpoint"
	default:
		res.Status, res.Reason = StatusQualified, ""
	}
	t.Attr("qualkit.status", res.Status)
	t.Attr("qualkit.evidence", r.ev.Dir)
	if res.Bundle != nil {
		t.Attr("qualkit.bundle_sha256", res.Bundle.SHA256)
	}
	if res.Identity != nil {
		t.Attr("qualkit.native_http_matches", fmt.Sprintf("%d/%d", res.Identity.PixelMatches, res.Identity.Total))
	}
	if res.HTTP != nil && res.Task != nil {
		t.Attr("qualkit.http_p50_ms", fmt.Sprintf("%.3f", res.HTTP.P50))
		t.Attr("qualkit.http_p95_ms", fmt.Sprintf("%.3f", res.HTTP.P95))
		t.Attr("qualkit.task_p50_ms", fmt.Sprintf("%.3f", res.Task.P50))
		t.Attr("qualkit.task_p95_ms", fmt.Sprintf("%.3f", res.Task.P95))
		t.Attr("qualkit.images_per_s", fmt.Sprintf("%.4f", res.ImagesPerS))
	}
	t.Attr("qualkit.client_errors", fmt.Sprint(res.ClientErrors))
	if err := r.ev.WriteJSON("results.json", res); err != nil {
		t.Fatalf("report %s: %v", r.c.Name, err)
	}
	if err := r.ev.WriteFile("row.md", []byte(MarkdownHeader+res.Markdown())); err != nil {
		t.Fatalf("report %s: %v", r.c.Name, err)
	}
	t.Logf("%s%s", MarkdownHeader, res.Markdown())
	if res.Status != StatusQualified && res.Status != StatusSmoke {
		t.Fatalf("report %s: %s (%s); evidence %s", r.c.Name, res.Status, res.Reason, r.ev.Dir)
	}
}

// reproduce is the command that reruns exactly this row.
func reproduce(testName string) string {
	parts := strings.Split(testName, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test ./qual/ -count=1 -v -run '%s'", strings.Join(parts, "/"))
}
