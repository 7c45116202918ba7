package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"qualkit/internal/schema"
)

// benchmark runs AIPerf, then checks what AIPerf does not: every response is a real PNG
// of the requested size, and every measured request has both a client latency and a
// server Task time.
func (r *row) benchmark(ctx context.Context) error {
	if r.bench == nil {
		if err := r.startBenchmark(ctx, "", r.server.URL()); err != nil {
			return err
		}
	} else {
		r.prog.printf("AIPerf: started with the server %s ago; waiting for it", time.Since(r.bench.started).Round(time.Second))
	}
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	stopFollow := make(chan struct{})
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		r.prog.followRecords(r.ev.Path(schema.RecordsFile), total, stopFollow)
	}()
	r.prog.watch(r.ev.Path(schema.AIPerfLog))
	_, runErr := r.waitBenchmark(ctx)
	close(stopFollow)
	<-followed
	artifacts := filepath.Join(r.ev.Dir, filepath.FromSlash(schema.AIPerfArtifacts))
	ex, exErr := ReadExport(artifacts)
	if ex == nil {
		if runErr != nil {
			return fmt.Errorf("aiperf: %w", runErr)
		}
		return exErr
	}
	r.export = ex
	r.result.ClientErrors = new(int)

	var problems []string
	if exErr != nil {
		problems = append(problems, exErr.Error())
	}
	warm, prof := ex.Phase(schema.PhaseWarmup), ex.Phase(schema.PhaseProfiling)
	if len(prof) != r.c.Bench.Measured || len(warm) != r.c.Bench.Warmup {
		problems = append(problems, fmt.Sprintf("AIPerf recorded %d measured + %d warmup requests, the row asks for %d + %d",
			len(prof), len(warm), r.c.Bench.Measured, r.c.Bench.Warmup))
	}
	for _, rec := range ex.Raw {
		if rec.Failed() {
			*r.result.ClientErrors++
			problems = append(problems, fmt.Sprintf("request %s (%s) failed: status %d %s", rec.Metadata.XRequestID, rec.Metadata.BenchmarkPhase, rec.Status, errorText(rec)))
		}
	}
	size := r.result.Settings["size"]
	r.httpPNG = map[string][]byte{}
	for i, rec := range ex.Raw {
		if rec.Failed() {
			continue
		}
		png, err := r.checkOutput(rec, size)
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s (%s): %v", rec.Metadata.XRequestID, rec.Metadata.BenchmarkPhase, err))
			continue
		}
		r.httpPNG[rec.Metadata.XRequestID] = png
		if err := r.ev.WriteFile(schema.IdentityPNG(i, rec.Metadata.BenchmarkPhase, schema.SideHTTP), png); err != nil {
			return err
		}
	}
	problems = append(problems, r.timing(prof)...)
	if len(problems) == 0 && runErr != nil {
		problems = append(problems, "aiperf failed: "+runErr.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s):\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return nil
}

func errorText(rec RawRecord) string {
	if rec.Error != nil {
		return fmt.Sprintf("%s: %s", rec.Error.Type, clip([]byte(rec.Error.Message), 300))
	}
	return clip(rec.Body(), 300)
}

// checkOutput is the format gate on one HTTP response: a PNG of the requested size that
// is not the request's own image. What it shows is the quality stage's to judge.
func (r *row) checkOutput(rec RawRecord, size string) ([]byte, error) {
	sent, err := r.sent(rec)
	if err != nil {
		return nil, err
	}
	png, err := r.output(rec.Body(), rec.Metadata.XRequestID)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", sent.Prompt, err)
	}
	if bytes.Equal(png, sent.Image) {
		return nil, fmt.Errorf("output is the input image unchanged (same bytes)")
	}
	out, err := DecodePNG(png)
	if err != nil {
		return nil, err
	}
	if got := ImageSize(out); got != size {
		return nil, fmt.Errorf("output is %s, the request asked for size %s", got, size)
	}
	return png, nil
}

// aiperfAfterServer is how long AIPerf may run on once the server has died.
const aiperfAfterServer = 5 * time.Second

// waitBenchmark waits for AIPerf, and stops it once the server has died: AIPerf waiting
// for a model that will never be listed, or sending to a port nobody answers, would run
// on until its own limits.
func (r *row) waitBenchmark(ctx context.Context) (schema.CommandRecord, error) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.bench.done:
			return r.bench.wait()
		case <-tick.C:
			if died := r.server.Died(context.WithoutCancel(ctx)); died != nil {
				// AIPerf sending to a dead port ends by itself within a moment, its
				// errors exported; one still probing for the model does not.
				r.prog.printf("the server died while AIPerf ran (%v): AIPerf has %s to end", died, aiperfAfterServer)
				select {
				case <-r.bench.done:
				case <-time.After(aiperfAfterServer):
					r.prog.printf("stopping AIPerf: the server it waits for is gone")
					r.bench.stop()
				}
				return r.bench.wait()
			}
		}
	}
}

// startBenchmark starts AIPerf against url, in the background: from the benchmark stage
// (during ""), or from serve while the server loads (during serve), when AIPerf waits
// for the model to be listed before its first request.
func (r *row) startBenchmark(ctx context.Context, during, url string) error {
	input, err := r.fx.AIPerfInput(r.proto)
	if err != nil {
		return err
	}
	if err := r.ev.WriteFile(schema.AIPerfInputs, input); err != nil {
		return err
	}
	run := AIPerfRun{
		URL: url, Model: r.c.Model, Input: r.ev.Path(schema.AIPerfInputs), Endpoint: r.proto.AIPerfEndpoint(r.fx.ExtraInputs()),
		Measured: r.c.Bench.Measured, Warmup: r.c.Bench.Warmup, Seed: r.c.Bench.Seed,
		ArtifactDir: filepath.Join(r.ev.Dir, filepath.FromSlash(schema.AIPerfArtifacts)), RequestTimeout: r.c.Deadline.Request,
	}
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	limit := time.Duration(total)*r.c.Deadline.Request + 5*time.Minute
	if during != "" {
		run.WaitForModel = r.c.Deadline.Ready + time.Minute
		limit += run.WaitForModel
		r.prog.printf("AIPerf: started now, while the server loads; it waits up to %s for GET /v1/models to list %s", run.WaitForModel, r.c.Model)
	}
	r.prog.printf("AIPerf: %d measured + %d warmup requests, concurrency 1", r.c.Bench.Measured, r.c.Bench.Warmup)
	if run.TempDir, err = os.MkdirTemp(aiperfTempBase(), "aiperf-"); err != nil {
		return fmt.Errorf("AIPerf's temp folder: %w", err)
	}
	b, err := r.startJob(ctx, schema.StageBenchmark, during, r.s.cfg.AIPerf.Command(run), schema.AIPerfLog, limit,
		func() { os.RemoveAll(run.TempDir) })
	if err != nil {
		return err
	}
	r.bench = b
	return nil
}

// timing joins AIPerf's client latency with the server's Task time for every measured
// request. The two stay separate columns: neither is derived from the other.
func (r *row) timing(prof []RawRecord) []string {
	var problems []string
	client := map[string]float64{}
	for _, p := range r.export.Profile {
		if p.Metadata.BenchmarkPhase != schema.PhaseProfiling {
			continue
		}
		if ms, ok := p.RequestLatencyMs(); ok {
			client[p.Metadata.XRequestID] = ms
		}
	}
	ts := r.spec.Timing
	task := map[string]float64{}
	var fromRecords map[string]float64
	if ts.Body == "" {
		var err error
		if fromRecords, err = tasksFromRecords(ts, r.ev.Path(schema.RecordsFile)); err != nil {
			return []string{err.Error()}
		}
	}
	var clientMs, taskMs []float64
	for _, rec := range prof {
		id := rec.Metadata.XRequestID
		c, haveClient := client[id]
		if !haveClient {
			problems = append(problems, fmt.Sprintf("request %s: AIPerf recorded no request_latency", id))
		}
		var t float64
		var err error
		if ts.Body != "" {
			t, err = taskFromBody(ts, rec.Body())
		} else {
			var ok bool
			if t, ok = fromRecords[id]; !ok {
				err = fmt.Errorf("no records line with request id %s (does the server honour X-Request-ID?)", id)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s: server Task time missing from %s: %v", id, ts, err))
			continue
		}
		task[id] = t
		if haveClient {
			clientMs, taskMs = append(clientMs, c), append(taskMs, t)
		}
	}
	if ts.Body != "" && ts.RecordID != "" {
		ids, err := recordIDs(ts, r.ev.Path(schema.RecordsFile))
		if err != nil {
			return append(problems, err.Error())
		}
		for _, rec := range prof {
			if id := rec.Metadata.XRequestID; !ids[id] {
				problems = append(problems, fmt.Sprintf("request %s: no records line with that request id: does the server honour X-Request-ID?", id))
			}
		}
	}
	if ts.Body != "" && ts.Records != "" {
		// Two reports of one measurement: the body's and the records line's must agree.
		fromRecords, err := tasksFromRecords(ts, r.ev.Path(schema.RecordsFile))
		if err != nil {
			return append(problems, err.Error())
		}
		for _, rec := range prof {
			id := rec.Metadata.XRequestID
			if v, ok := fromRecords[id]; ok && !sameMs(v, task[id]) {
				problems = append(problems, fmt.Sprintf("request %s: the response body says %s = %v ms, its records line %s = %v ms", id, ts.Body, task[id], ts.Records, v))
			}
		}
	}
	r.clientMs, r.taskMs = client, task
	if len(problems) == 0 && len(prof) > 0 {
		h, t := NewQuantiles(clientMs), NewQuantiles(taskMs)
		r.result.HTTP, r.result.Task, r.result.TaskSource = &h, &t, ts.Schema()
		r.result.Overhead = newOverhead(h, t)
		r.result.ImagesPerS = ImagesPerSecond(prof)
		r.result.FirstRequest = FirstRequest(r.export.Raw, r.export.Profile)
	}
	return problems
}
