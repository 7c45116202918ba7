package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"qualkit/internal/fixtures"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// benchmark waits for AIPerf (begun with the server, or now), then judges its export.
func (r *row) benchmark(ctx context.Context, fx *fixtures.Workload, srv serving.Server, bench *future[schema.CommandRecord]) (*benchmarkResult, error) {
	if bench.early {
		r.prog.printf("AIPerf: started with the server %s ago; waiting for it", time.Since(bench.begun).Round(time.Second))
	}
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	stopFollow := make(chan struct{})
	var followed sync.WaitGroup
	followed.Go(func() { r.prog.followRecords(r.ev.Path(schema.RecordsFile), total, stopFollow) })
	r.prog.watch(r.ev.Path(schema.AIPerfLog))
	_, runErr := r.waitBenchmark(ctx, srv, bench)
	close(stopFollow)
	followed.Wait()
	artifacts := filepath.Join(r.ev.Dir, filepath.FromSlash(schema.AIPerfArtifacts))
	in := benchmarkInput{RunErr: runErr, Measured: r.c.Bench.Measured, Warmup: r.c.Bench.Warmup, Size: fx.FormSettings()["size"], Timing: r.spec.Timing}
	in.Export, in.ExportErr = ReadExport(artifacts)
	if in.Export != nil {
		r.gatherBenchmark(&in)
	}
	v := judgeBenchmark(in)
	if in.Export == nil {
		return nil, v.Err
	}
	b := &benchmarkResult{export: in.Export, httpPNG: map[string][]byte{}, clientErrors: v.ClientErrors, timing: v.Timing}
	for _, o := range v.Outputs {
		b.httpPNG[o.RequestID] = o.PNG
		if err := r.ev.WriteFile(schema.IdentityPNG(o.Index, o.Phase, schema.SideHTTP), o.PNG); err != nil {
			return b, err
		}
	}
	if t := v.Timing; t != nil {
		b.clientMs, b.taskMs = t.ClientMs, t.TaskMs
	}
	return b, v.Err
}

// benchmarkResult is what the benchmark stage hands on.
type benchmarkResult struct {
	export           *Export
	httpPNG          map[string][]byte
	clientMs, taskMs map[string]float64
	clientErrors     int
	timing           *benchmarkTiming
}

// gatherBenchmark reads what judging AIPerf's export needs beyond it: what each answered
// request sent, the PNG its response names, and the server's records where they count.
func (r *row) gatherBenchmark(in *benchmarkInput) {
	in.Responses = make([]benchmarkResponse, len(in.Export.Raw))
	for i, rec := range in.Export.Raw {
		if rec.Failed() {
			continue
		}
		resp := &in.Responses[i]
		if resp.Sent, resp.SentErr = r.sent(rec); resp.SentErr != nil {
			continue
		}
		resp.PNG, resp.OutputErr = r.output(rec.Body(), rec.Metadata.XRequestID)
	}
	ts, records := in.Timing, r.ev.Path(schema.RecordsFile)
	if ts.Body == "" || ts.Records != "" {
		in.RecordTasks, in.RecordTasksErr = tasksFromRecords(ts, records)
	}
	if ts.Body != "" && ts.RecordID != "" {
		in.RecordIDs, in.RecordIDsErr = recordIDs(ts, records)
	}
}

// benchmarkResponse is what one answered request sent and the PNG its response names.
type benchmarkResponse struct {
	Sent      wire.Request
	SentErr   error
	PNG       []byte
	OutputErr error
}

// benchmarkInput is what the benchmark left: AIPerf's export (nil when unreadable,
// ExportErr why), a response per raw record in its order, and the server's records.
type benchmarkInput struct {
	RunErr           error
	Export           *Export
	ExportErr        error
	Responses        []benchmarkResponse
	Measured, Warmup int
	Size             string
	Timing           schema.TimingSource
	RecordTasks      map[string]float64 // Task times by request id, when the records are read for them
	RecordTasksErr   error
	RecordIDs        map[string]bool // request ids of the records, when the body is the source and they are joined
	RecordIDsErr     error
}

// benchmarkOutput is a valid HTTP output: a PNG of the requested size, not the sent image.
type benchmarkOutput struct {
	Index     int // in the raw export
	RequestID string
	Phase     string
	PNG       []byte
}

// benchmarkTiming is the measured requests' client latency and server Task time.
type benchmarkTiming struct {
	ClientMs, TaskMs map[string]float64
	HTTP, Task       *schema.Quantiles // nil when a time is missing or two sources disagree
	Source           *schema.TimingSource
	Overhead         *schema.Overhead
	ImagesPerS       float64
	FirstRequest     *schema.FirstRequest
}

// benchmarkVerdict is what the benchmark stage states; Timing is nil when the server's
// records could not be read.
type benchmarkVerdict struct {
	ClientErrors int
	Outputs      []benchmarkOutput
	Timing       *benchmarkTiming
	Err          error
}

// judgeBenchmark checks what AIPerf does not: the requests the row asked for, none
// failed, every response a PNG of the requested size that is not the sent image, and
// every measured request both a client latency and a server Task time.
func judgeBenchmark(in benchmarkInput) benchmarkVerdict {
	var v benchmarkVerdict
	ex := in.Export
	if ex == nil {
		if in.RunErr != nil {
			v.Err = fmt.Errorf("aiperf: %w", in.RunErr)
		} else {
			v.Err = in.ExportErr
		}
		return v
	}
	var problems []string
	if in.ExportErr != nil {
		problems = append(problems, in.ExportErr.Error())
	}
	warm, prof := ex.Phase(schema.PhaseWarmup), ex.Phase(schema.PhaseProfiling)
	if len(prof) != in.Measured || len(warm) != in.Warmup {
		problems = append(problems, fmt.Sprintf("AIPerf recorded %d measured + %d warmup requests, the row asks for %d + %d",
			len(prof), len(warm), in.Measured, in.Warmup))
	}
	for _, rec := range ex.Raw {
		if rec.Failed() {
			v.ClientErrors++
			problems = append(problems, fmt.Sprintf("request %s (%s) failed: status %d %s", rec.Metadata.XRequestID, rec.Metadata.BenchmarkPhase, rec.Status, errorText(rec)))
		}
	}
	for i, rec := range ex.Raw {
		if rec.Failed() {
			continue
		}
		png, err := judgeOutput(in.Responses[i], in.Size)
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s (%s): %v", rec.Metadata.XRequestID, rec.Metadata.BenchmarkPhase, err))
			continue
		}
		v.Outputs = append(v.Outputs, benchmarkOutput{Index: i, RequestID: rec.Metadata.XRequestID, Phase: rec.Metadata.BenchmarkPhase, PNG: png})
	}
	var timing []string
	v.Timing, timing = judgeTiming(in, prof)
	problems = append(problems, timing...)
	if len(problems) == 0 && in.RunErr != nil {
		problems = append(problems, "aiperf failed: "+in.RunErr.Error())
	}
	if len(problems) > 0 {
		v.Err = fmt.Errorf("%d problem(s):\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return v
}

func errorText(rec schema.RawRecord) string {
	if rec.Error != nil {
		return fmt.Sprintf("%s: %s", rec.Error.Type, wire.Clip([]byte(rec.Error.Message), 300))
	}
	return wire.Clip(rec.Body(), 300)
}

// judgeOutput is the format gate on one HTTP response: a PNG of the requested size that
// is not the request's own image. What it shows is the quality stage's to judge.
func judgeOutput(resp benchmarkResponse, size string) ([]byte, error) {
	if resp.SentErr != nil {
		return nil, resp.SentErr
	}
	if resp.OutputErr != nil {
		return nil, fmt.Errorf("%q: %w", resp.Sent.Prompt, resp.OutputErr)
	}
	if bytes.Equal(resp.PNG, resp.Sent.Image) {
		return nil, fmt.Errorf("output is the input image unchanged (same bytes)")
	}
	out, err := judge.DecodePNG(resp.PNG)
	if err != nil {
		return nil, err
	}
	if got := judge.ImageSize(out); got != size {
		return nil, fmt.Errorf("output is %s, the request asked for size %s", got, size)
	}
	return resp.PNG, nil
}

const aiperfAfterServer = 5 * time.Second

// waitBenchmark waits for AIPerf, and stops it once the server has died (AIPerf waiting
// for a model never listed would run on until its own limits).
func (r *row) waitBenchmark(ctx context.Context, srv serving.Server, bench *future[schema.CommandRecord]) (schema.CommandRecord, error) {
	bench.begin()
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-bench.done:
			return bench.wait()
		case <-tick.C:
			if died := srv.Died(context.WithoutCancel(ctx)); died != nil {
				r.prog.printf("the server died while AIPerf ran (%v): AIPerf has %s to end", died, aiperfAfterServer)
				select {
				case <-bench.done:
				case <-time.After(aiperfAfterServer):
					r.prog.printf("stopping AIPerf: the server it waits for is gone")
					bench.stop(nil)
				}
				return bench.wait()
			}
		}
	}
}

// aiperf is AIPerf's run against url: begun now when early (while the server loads; it
// waits for the model to be listed), else when the benchmark stage waits for it.
func (r *row) aiperf(ctx context.Context, fx *fixtures.Workload, url string, early bool) (*future[schema.CommandRecord], error) {
	var tmp string
	f, err := later(ctx, early, func(ctx context.Context) (func(context.Context) (schema.CommandRecord, error), error) {
		input, err := fx.AIPerfInput(r.proto())
		if err != nil {
			return nil, err
		}
		if err := r.ev.WriteFile(schema.AIPerfInputs, input); err != nil {
			return nil, err
		}
		run := AIPerfRun{
			URL: url, Model: r.c.Model, Input: r.ev.Path(schema.AIPerfInputs), Endpoint: r.proto().AIPerfEndpoint(fx.ExtraInputs()),
			Measured: r.c.Bench.Measured, Warmup: r.c.Bench.Warmup, Seed: r.c.Bench.Seed,
			ArtifactDir: filepath.Join(r.ev.Dir, filepath.FromSlash(schema.AIPerfArtifacts)), RequestTimeout: r.c.Deadline.Request,
		}
		total := r.c.Bench.Measured + r.c.Bench.Warmup
		limit := time.Duration(total)*r.c.Deadline.Request + aiperfStartBound
		during := ""
		if early {
			during, run.WaitForModel = schema.StageServe, r.c.Deadline.Ready+time.Minute
			limit += run.WaitForModel
			r.prog.printf("AIPerf: started now, while the server loads; it waits up to %s for GET /v1/models to list %s", run.WaitForModel, r.c.Model)
		}
		r.prog.printf("AIPerf: %d measured + %d warmup requests, concurrency 1", r.c.Bench.Measured, r.c.Bench.Warmup)
		if run.TempDir, err = os.MkdirTemp(aiperfTempBase(), "aiperf-"); err != nil {
			return nil, fmt.Errorf("AIPerf's temp folder: %w", err)
		}
		tmp = run.TempDir
		if rp := r.s.cfg.Reaper; rp != nil {
			rp.Remove(run.TempDir) // it may lie outside this process's temp folder
		}
		cmd, err := r.command(ctx, schema.StageBenchmark, during, r.s.cfg.AIPerf.Command(run), schema.AIPerfLog, limit)
		if err != nil {
			os.RemoveAll(run.TempDir)
			return nil, err
		}
		return func(ctx context.Context) (schema.CommandRecord, error) {
			defer os.RemoveAll(run.TempDir)
			return cmd(ctx)
		}, nil
	})
	if err != nil {
		return nil, err
	}
	r.stops.add(func() {
		f.stop(nil)
		os.RemoveAll(tmp) // "" when never made: nothing
	})
	return f, nil
}

// judgeTiming joins AIPerf's client latency with the server's Task time for every
// measured request (prof), neither derived from the other; nil when the server's records
// could not be read.
func judgeTiming(in benchmarkInput, prof []schema.RawRecord) (*benchmarkTiming, []string) {
	var problems []string
	client := map[string]float64{}
	for _, p := range in.Export.Profile {
		if p.Metadata.BenchmarkPhase != schema.PhaseProfiling {
			continue
		}
		if ms, err := p.RequestLatencyMs(); err == nil {
			client[p.Metadata.XRequestID] = ms
		}
	}
	ts := in.Timing
	task := map[string]float64{}
	if ts.Body == "" && in.RecordTasksErr != nil {
		return nil, []string{in.RecordTasksErr.Error()}
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
			if t, ok = in.RecordTasks[id]; !ok {
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
		if in.RecordIDsErr != nil {
			return nil, append(problems, in.RecordIDsErr.Error())
		}
		for _, rec := range prof {
			if id := rec.Metadata.XRequestID; !in.RecordIDs[id] {
				problems = append(problems, fmt.Sprintf("request %s: no records line with that request id: does the server honour X-Request-ID?", id))
			}
		}
	}
	if ts.Body != "" && ts.Records != "" {
		// Two reports of one measurement: the body's and the records line's must agree.
		if in.RecordTasksErr != nil {
			return nil, append(problems, in.RecordTasksErr.Error())
		}
		for _, rec := range prof {
			id := rec.Metadata.XRequestID
			if v, ok := in.RecordTasks[id]; ok && !sameMs(v, task[id]) {
				problems = append(problems, fmt.Sprintf("request %s: the response body says %s = %v ms, its records line %s = %v ms", id, ts.Body, task[id], ts.Records, v))
			}
		}
	}
	t := &benchmarkTiming{ClientMs: client, TaskMs: task}
	if len(problems) == 0 && len(prof) > 0 {
		h, q := NewQuantiles(clientMs), NewQuantiles(taskMs)
		t.HTTP, t.Task, t.Source = &h, &q, &ts
		t.Overhead = newOverhead(h, q)
		t.ImagesPerS = ImagesPerSecond(prof)
		t.FirstRequest = FirstRequest(in.Export.Raw, in.Export.Profile)
	}
	return t, problems
}
