package harness

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"qualkit/internal/harness/gpu"
	"qualkit/internal/schema"
)

// Paths of the bundle and the records folder inside a server container.
const (
	containerBundleDir  = "/qualkit/bundle"
	containerRecordsDir = "/qualkit/records"
)

func (r *row) serve(ctx context.Context) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	records := r.ev.Path("serve/records.jsonl")
	spec := ServeSpec{Bundle: r.bundle, Model: r.c.Model, Host: "127.0.0.1", Port: port, Records: records}
	rt := r.s.rowRuntime(r.c)
	r.prog.watch(r.ev.Path("serve/server.log"))
	r.prog.printf("starting the server (%s runtime), waiting up to %s for %s", rt, r.c.Deadline.Ready, ReadyPath)
	var srv Server
	switch rt {
	case RuntimeContainer:
		cspec := ContainerSpec{
			RunID: r.s.Evidence.RunID, Row: r.c.Name, Image: r.c.Adapter.(Containerized).Image(r.env),
			Port: port, Ready: r.c.Deadline.Ready, LogRel: "serve/server.log",
			Mounts: []Mount{
				{Host: r.bundle, Container: containerBundleDir + "/" + filepath.Base(r.bundle), ReadOnly: true},
				{Host: filepath.Dir(records), Container: containerRecordsDir},
			},
		}
		spec.Bundle, spec.Records, spec.InContainer = cspec.Mounts[0].Container, containerRecordsDir+"/"+filepath.Base(records), true
		cspec.Cmd = r.c.Adapter.Serve(r.env, spec)
		if len(r.gpus) > 0 {
			req, err := gpu.DeviceRequest(r.gpus)
			if err != nil {
				return err
			}
			cspec.GPUs = &req
		}
		var info schema.ContainerInfo
		srv, info, err = StartContainer(ctx, r.ev, cspec)
		r.result.Container = &info
	default:
		cmd := r.c.Adapter.Serve(r.env, spec)
		cmd.Env = append(cmd.Env, r.gpuEnv()...)
		srv, err = StartProcess(ctx, r.ev, cmd, port, r.c.Deadline.Ready, "serve/server.log")
	}
	if err != nil {
		return fmt.Errorf("start server (%s; %s): %w", rt, r.s.RuntimeNote, err)
	}
	r.server = srv
	r.result.Runtime = srv.Runtime()
	r.result.StartupS = srv.Startup().Seconds()
	return r.ev.WriteJSON("serve/startup.json", map[string]any{
		"runtime": srv.Runtime(), "runtime_note": r.s.RuntimeNote, "url": srv.URL(), "startup_s": srv.Startup().Seconds(),
		"ready_path": ReadyPath, "spec": spec, "container": r.result.Container, "gpus": r.gpus,
	})
}

// gpuEnv pins a process to the row's GPUs by UUID, as the container's device request does.
func (r *row) gpuEnv() []string {
	if len(r.gpus) == 0 {
		return nil
	}
	ids := make([]string, len(r.gpus))
	for i, d := range r.gpus {
		ids[i] = d.UUID
	}
	return []string{"CUDA_VISIBLE_DEVICES=" + strings.Join(ids, ",")}
}

// benchmark runs AIPerf, then checks what AIPerf does not: every response is a real PNG
// of the requested size that is not constant and not the input, and every measured
// request has both a client latency and a server Task time.
func (r *row) benchmark(ctx context.Context) error {
	input, err := r.fx.AIPerfInput()
	if err != nil {
		return err
	}
	if err := r.ev.WriteFile("aiperf/inputs.jsonl", input); err != nil {
		return err
	}
	artifacts := filepath.Join(r.ev.Dir, "aiperf", "artifacts")
	a := r.s.cfg.AIPerf
	run := AIPerfRun{
		URL: r.server.URL(), Model: r.c.Model, Input: r.ev.Path("aiperf/inputs.jsonl"), ExtraInputs: []string{r.fx.ExtraInputs()},
		Measured: r.c.Bench.Measured, Warmup: r.c.Bench.Warmup, Seed: r.c.Bench.Seed,
		ArtifactDir: artifacts, RequestTimeout: r.c.Deadline.Request,
	}
	total := r.c.Bench.Measured + r.c.Bench.Warmup
	ctx, cancel := context.WithTimeout(ctx, time.Duration(total)*r.c.Deadline.Request+5*time.Minute)
	defer cancel()
	stopFollow := make(chan struct{})
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		r.prog.followRecords(r.ev.Path("serve/records.jsonl"), total, stopFollow)
	}()
	r.prog.printf("AIPerf: %d measured + %d warmup requests, concurrency 1", r.c.Bench.Measured, r.c.Bench.Warmup)
	_, runErr := r.run(ctx, "benchmark", a.Command(run), "aiperf/aiperf.log")
	close(stopFollow)
	<-followed
	ex, err := ReadExport(artifacts)
	if err != nil {
		if runErr != nil {
			return fmt.Errorf("aiperf: %w", runErr)
		}
		return err
	}
	r.export = ex
	r.result.ClientErrors = new(int)

	var problems []string
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
		png, err := checkOutput(rec, size)
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s (%s, %q): %v", rec.Metadata.XRequestID, rec.Metadata.BenchmarkPhase, rec.Prompt(), err))
			continue
		}
		r.httpPNG[rec.Metadata.XRequestID] = png
		r.ev.WriteFile(fmt.Sprintf("identity/%02d-%s-http.png", i, rec.Metadata.BenchmarkPhase), png)
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

// checkOutput is the content gate on one HTTP response.
func checkOutput(rec RawRecord, size string) ([]byte, error) {
	png, err := ResponsePNG(rec.Body())
	if err != nil {
		return nil, err
	}
	sent, err := rec.SentImage()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(png, sent) {
		return nil, fmt.Errorf("output is the input image unchanged (same bytes)")
	}
	out, err := DecodePNG(png)
	if err != nil {
		return nil, err
	}
	if got := ImageSize(out); got != size {
		return nil, fmt.Errorf("output is %s, the request asked for size %s", got, size)
	}
	if IsConstant(out) {
		return nil, fmt.Errorf("output is a constant image")
	}
	in, _, err := image.Decode(bytes.NewReader(sent))
	if err != nil {
		return nil, fmt.Errorf("the sent reference image does not decode: %w", err)
	}
	if f := ChangedFraction(in, out); f < MinChangedFraction {
		return nil, fmt.Errorf("output is the input image unchanged or only resized: %.1f %% of its pixels differ by more than %d levels from the input resized to %s, the gate needs %.0f %%",
			100*f, ChangeLevels, size, 100*MinChangedFraction)
	}
	return png, nil
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
	ts := r.c.Adapter.Timing()
	task := map[string]float64{}
	var fromRecords map[string]float64
	if ts.Body == "" {
		var err error
		if fromRecords, err = ts.FromRecords(r.ev.Path("serve/records.jsonl")); err != nil {
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
			t, err = ts.FromBody(rec.Body())
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
		ids, err := ts.RecordIDs(r.ev.Path("serve/records.jsonl"))
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
		fromRecords, err := ts.FromRecords(r.ev.Path("serve/records.jsonl"))
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
	}
	return problems
}

func (r *row) influence(ctx context.Context) error {
	inf := r.fx.Influence
	client := &http.Client{Timeout: r.c.Deadline.Request}
	settings := r.fx.InfluenceSettings()
	names := []string{"a", "a-repeat", "b"}
	files := []string{inf.Images[0], inf.Images[0], inf.Images[1]}
	var outs []image.Image
	for i, f := range files {
		data, err := os.ReadFile(r.fx.ImagePath(f))
		if err != nil {
			return err
		}
		status, body, err := EditRequest(ctx, client, r.server.URL(), r.c.Model, inf.Instruction, data, settings, "qualkit-influence-"+names[i])
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("influence request %s (%s): status %d: %s", names[i], f, status, clip(body, 300))
		}
		png, err := ResponsePNG(body)
		if err != nil {
			return fmt.Errorf("influence request %s: %w", names[i], err)
		}
		img, err := DecodePNG(png)
		if err != nil {
			return fmt.Errorf("influence request %s: %w", names[i], err)
		}
		r.ev.WriteFile("influence/"+names[i]+".png", png)
		outs = append(outs, img)
	}
	res := &schema.InfluenceResult{Instruction: inf.Instruction, Images: [2]string{inf.Images[0], inf.Images[1]},
		Repeat: ComparePixels(outs[0], outs[1]), Other: ComparePixels(outs[0], outs[2])}
	r.result.Influence = res
	r.ev.WriteJSON("influence/influence.json", res)
	if !res.Repeat.Identical() {
		return fmt.Errorf("the same request twice gave different outputs (%s): the server is not deterministic for a fixed seed", res.Repeat)
	}
	if res.Other.Identical() {
		return fmt.Errorf("capability gap: two different reference images (%s, %s) gave pixel-identical outputs: the server ignores the reference image", inf.Images[0], inf.Images[1])
	}
	if f := float64(res.Other.DifferingPixel) / float64(max(res.Other.Pixels, 1)); f < MinInfluenceFraction || res.Other.MeanAbs < MinInfluenceMeanLevels {
		return fmt.Errorf("capability gap: two different reference images (%s, %s) gave outputs that barely differ (%s; %.2f %% of the pixels): "+
			"the gate needs %.0f %% of the pixels and a mean of %.2f levels, so the server all but ignores the reference image",
			inf.Images[0], inf.Images[1], res.Other, 100*f, 100*MinInfluenceFraction, MinInfluenceMeanLevels)
	}
	return nil
}

// Paths of a native Task's input and output folders inside the server image.
const (
	containerInDir  = "/qualkit/in"
	containerOutDir = "/qualkit/out"
)

// native runs one native Task where the server ran: in a container of the server's
// image for container rows, else as a process pinned to the row's GPUs.
func (r *row) native(ctx context.Context, spec NativeSpec, logRel string) error {
	if r.result.Container == nil || r.result.Container.ImageID == "" {
		cmd := r.c.Adapter.Native(r.env, spec)
		cmd.Env = append(cmd.Env, r.gpuEnv()...)
		_, err := r.run(ctx, "identity", cmd, logRel)
		return err
	}
	mounts := []Mount{
		{Host: r.bundle, Container: containerBundleDir + "/" + filepath.Base(r.bundle), ReadOnly: true},
		{Host: filepath.Dir(spec.Image), Container: containerInDir, ReadOnly: true},
		{Host: filepath.Dir(spec.Output), Container: containerOutDir},
	}
	spec.Bundle, spec.InContainer = mounts[0].Container, true
	spec.Image = containerInDir + "/" + filepath.Base(spec.Image)
	spec.Output = containerOutDir + "/" + filepath.Base(spec.Output)
	o := OneShot{RunID: r.s.Evidence.RunID, Row: r.c.Name, Stage: "identity", ImageID: r.result.Container.ImageID,
		Cmd: r.c.Adapter.Native(r.env, spec), Mounts: mounts, LogRel: logRel}
	if len(r.gpus) > 0 {
		req, err := gpu.DeviceRequest(r.gpus)
		if err != nil {
			return err
		}
		o.GPUs = &req
	}
	r.prog.watch(r.ev.Path(logRel))
	_, err := RunContainer(ctx, r.ev, o)
	return err
}

// nativeStated is the sha256 a native Task's log says it wrote, by the family's pattern;
// "" when the family's program states none.
func (r *row) nativeStated(logPath string) (string, error) {
	pat := r.result.NativeOutputPattern
	if pat == "" {
		return "", nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return "", fmt.Errorf("the family's native output pattern %q: %w", pat, err)
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		return "", err
	}
	m := re.FindSubmatch(log)
	if m == nil || len(m) != 2 {
		return "", fmt.Errorf("the native Task's log %s states no output sha256 (pattern %s)", r.ev.rel(logPath), pat)
	}
	return string(m[1]), nil
}

// identity stops the server, then replays every request AIPerf sent (warmup too) from
// the exact bytes in the raw export through the native Task, and requires the decoded
// pixels to equal those the HTTP response carried.
func (r *row) identity(ctx context.Context) error {
	if err := r.server.Stop(ctx); err != nil {
		return fmt.Errorf("stop server: %w", err)
	}
	if sha, err := pathSHA256(r.bundle); err != nil || sha != r.bundleSHA {
		return fmt.Errorf("the bundle changed while it was served: sha256 %s before, %s after (%v)", r.bundleSHA, sha, err)
	}
	fixtureBySHA := map[string]string{}
	for _, im := range r.fx.Images {
		fixtureBySHA[im.SHA256] = im.File
	}
	sum := &schema.IdentitySummary{}
	r.result.Identity = sum
	var problems []string
	for i, rec := range r.export.Raw {
		id := rec.Metadata.XRequestID
		req := schema.IdentityRequest{RequestID: id, Phase: rec.Metadata.BenchmarkPhase, Prompt: rec.Prompt(), ClientMs: r.clientMs[id], TaskMs: r.taskMs[id]}
		sum.Total++
		httpPNG, ok := r.httpPNG[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("request %s: no valid HTTP output to compare", id))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		sent, err := rec.SentImage()
		if err != nil {
			return err
		}
		req.InputSHA256 = bytesSHA256(sent)
		if _, ok := fixtureBySHA[req.InputSHA256]; !ok {
			problems = append(problems, fmt.Sprintf("request %s: AIPerf sent an image (sha256 %s) that is no fixture: the bytes were re-encoded", id, req.InputSHA256[:12]))
		}
		in := filepath.Join(r.env.Work, "native-in", fmt.Sprintf("input-%02d", i))
		if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(in, sent, 0o644); err != nil {
			return err
		}
		req.HTTPFile = fmt.Sprintf("identity/%02d-%s-http.png", i, req.Phase)
		req.NativeFile = fmt.Sprintf("identity/%02d-%s-native.png", i, req.Phase)
		native := r.ev.Path(req.NativeFile)
		spec := NativeSpec{Bundle: r.bundle, Image: in, Prompt: rec.Prompt(), Settings: rec.Settings(), Output: native}
		r.prog.printf("native Task %d/%d (%s) of request %s", i+1, len(r.export.Raw), req.Phase, id)
		nctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Native)
		err = r.native(nctx, spec, fmt.Sprintf("identity/%02d-native.log", i))
		cancel()
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s: native task: %v", id, err))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		nativePNG, err := os.ReadFile(native)
		if err != nil {
			return err
		}
		req.HTTPSHA256, req.NativeSHA256 = bytesSHA256(httpPNG), bytesSHA256(nativePNG)
		if stated, err := r.nativeStated(r.ev.Path(fmt.Sprintf("identity/%02d-native.log", i))); err != nil {
			problems = append(problems, fmt.Sprintf("request %s: %v", id, err))
		} else if stated != "" && stated != req.NativeSHA256 {
			problems = append(problems, fmt.Sprintf("request %s: the native Task's log says it wrote sha256 %s, but %s is %s", id, stated, req.NativeFile, req.NativeSHA256))
		}
		if req.HTTPSHA256 == req.NativeSHA256 {
			sum.ByteIdentical++
		}
		a, _ := DecodePNG(httpPNG)
		b, err := DecodePNG(nativePNG)
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s: native %v", id, err))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		d := ComparePixels(a, b)
		req.Pixels = d.String()
		if d.Identical() {
			sum.PixelMatches++
		} else {
			problems = append(problems, fmt.Sprintf("request %s (%s, %q): native and HTTP outputs differ: %s (sha256 %s vs %s)",
				id, req.Phase, req.Prompt, d, req.HTTPSHA256[:12], req.NativeSHA256[:12]))
		}
		sum.Requests = append(sum.Requests, req)
	}
	r.ev.WriteJSON("identity/identity.json", sum)
	want := r.c.Bench.Measured + r.c.Bench.Warmup
	if sum.Total != want {
		problems = append(problems, fmt.Sprintf("%d requests to compare, expected %d", sum.Total, want))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d/%d native-HTTP pixel matches:\n  - %s", sum.PixelMatches, sum.Total, strings.Join(problems, "\n  - "))
	}
	return nil
}
