package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/gpu"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/wire"
)

// replay is one request AIPerf sent, to run again through the native Task.
type replay struct {
	index  int
	req    schema.IdentityRequest
	spec   family.NativeSpec
	log    string  // the one-shot Task's log, relative to the row
	wallS  float64 // the one-shot process's wall
	taskMs float64 // the native Task call, as the program reports it; 0 when it does not
	stated string  // the sha256 the program says it wrote
	err    error
}

// identity, with the server stopped, replays every request AIPerf sent (warmup too) from
// the exact bytes in the raw export through the native Task, and requires the decoded
// pixels to equal those the HTTP response carried.
func (r *row) identity(ctx context.Context, fx *fixtures.Workload, b bundle, bench *benchmarkResult, batch *future[schema.CommandRecord]) (out identityRun, err error) {
	if sha, err := pathSHA256(b.path); err != nil || sha != b.sha {
		return out, fmt.Errorf("the bundle changed while it was served: sha256 %s before, %s after (%v)", b.sha, sha, err)
	}
	in := identityInput{Fixtures: map[string]bool{}, Want: r.c.Bench.Measured + r.c.Bench.Warmup}
	for _, im := range fx.Images {
		in.Fixtures[im.SHA256] = true
	}
	stopped := func(err error) (identityRun, error) {
		v := judgeIdentity(in)
		out.sum = &v.Summary
		return out, err
	}
	for i, rec := range bench.export.Raw {
		id := rec.Metadata.XRequestID
		sent, err := r.sent(rec)
		if err != nil {
			return stopped(err)
		}
		c := identityCase{Req: schema.IdentityRequest{RequestID: id, Phase: rec.Metadata.BenchmarkPhase, Prompt: sent.Prompt, ClientMs: bench.clientMs[id], TaskMs: bench.taskMs[id]},
			Input: sent.Image, HTTP: bench.httpPNG[id]}
		if c.HTTP != nil {
			c.Req.HTTPFile, c.Req.NativeFile = schema.IdentityPNG(i, c.Req.Phase, schema.SideHTTP), schema.IdentityPNG(i, c.Req.Phase, schema.SideNative)
		}
		in.Requests = append(in.Requests, c)
		if c.HTTP == nil {
			continue
		}
		img := filepath.Join(r.nativeInDir(), fmt.Sprintf("input-%02d", i))
		if err := os.MkdirAll(filepath.Dir(img), 0o755); err != nil {
			return stopped(err)
		}
		if err := os.WriteFile(img, sent.Image, 0o644); err != nil {
			return stopped(err)
		}
		rp := &replay{index: i, req: c.Req, log: schema.NativeLog(i),
			spec: family.NativeSpec{Bundle: b.path, Image: img, Prompt: sent.Prompt, Settings: sent.Settings, LatentSeed: sent.LatentSeed, Output: r.ev.Path(c.Req.NativeFile)}}
		out.replays = append(out.replays, rp)
	}
	// A native run that failed as a whole fails each replay it did not do.
	var native schema.IdentitySummary
	in.NativeErr = r.runNatives(ctx, b, batch, &out, &native)
	for _, rp := range out.replays {
		if _, err := os.Stat(rp.spec.Output); in.NativeErr != nil && rp.err == nil && err != nil {
			rp.err = in.NativeErr
		}
		c := &in.Requests[rp.index] // one request per raw record, in order
		c.Err, c.Stated = rp.err, rp.stated
		if rp.err == nil {
			c.Native, c.NativeErr = os.ReadFile(rp.spec.Output)
		}
	}
	in.Replayed = true
	v := judgeIdentity(in)
	v.Summary.Mode, v.Summary.LoadMs = native.Mode, native.LoadMs
	out.sum = &v.Summary
	if err := r.ev.WriteJSON(schema.IdentityFile, &v.Summary); err != nil {
		return out, err
	}
	return out, v.Err
}

// identityRun is what the identity stage made.
type identityRun struct {
	sum          *schema.IdentitySummary
	replays      []*replay
	batchWallS   float64
	batchWaitedS float64
}

// identityCase is one request AIPerf sent, as the identity stage compares it (HTTP
// nil: no valid output).
type identityCase struct {
	Req    schema.IdentityRequest
	Input  []byte // the image the request sent
	HTTP   []byte
	Err    error  // the native Task failed
	Native []byte // the PNG the native Task wrote
	// NativeErr: the PNG could not be read.
	NativeErr error
	Stated    string // the sha256 the native Task says it wrote; "" when it states none
}

// identityInput is every request AIPerf sent (warmup too) in its raw export's order.
// Replayed says the native Tasks ran (false: the stage stopped before them, and only the
// requests are counted); NativeErr is the failure of the native run as a whole.
type identityInput struct {
	Requests  []identityCase
	Fixtures  map[string]bool // the sha256 of every fixture image
	Want      int             // the requests the row asks for, measured and warmup
	Replayed  bool
	NativeErr error
}

// identityVerdict is the comparison summary (the native mode apart) and why the stage fails.
type identityVerdict struct {
	Summary schema.IdentitySummary
	Err     error
}

// judgeIdentity requires every request to have sent a fixture's exact bytes and to have
// a valid HTTP output, its native replay to have written what it says it wrote, and the
// two outputs to decode to the same pixels; and as many requests as the row asks for.
func judgeIdentity(in identityInput) identityVerdict {
	var sum schema.IdentitySummary
	var problems []string
	for _, c := range in.Requests {
		sum.Total++
		if c.HTTP == nil {
			problems = append(problems, fmt.Sprintf("request %s: no valid HTTP output to compare", c.Req.RequestID))
			sum.Requests = append(sum.Requests, c.Req)
			continue
		}
		if sha := bytesSHA256(c.Input); !in.Fixtures[sha] {
			problems = append(problems, fmt.Sprintf("request %s: AIPerf sent an image (sha256 %s) that is no fixture: the bytes were re-encoded", c.Req.RequestID, sha[:12]))
		}
	}
	if !in.Replayed {
		return identityVerdict{Summary: sum}
	}
	for _, c := range in.Requests {
		if c.HTTP == nil {
			continue
		}
		req := c.Req
		req.InputSHA256 = bytesSHA256(c.Input)
		if c.Err != nil {
			problems = append(problems, fmt.Sprintf("request %s: native task: %v", req.RequestID, c.Err))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		if c.NativeErr != nil {
			problems = append(problems, fmt.Sprintf("request %s: the native Task wrote no %s: %v", req.RequestID, req.NativeFile, c.NativeErr))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		req.HTTPSHA256, req.NativeSHA256 = bytesSHA256(c.HTTP), bytesSHA256(c.Native)
		if c.Stated != "" && c.Stated != req.NativeSHA256 {
			problems = append(problems, fmt.Sprintf("request %s: the native Task says it wrote sha256 %s, but %s is %s", req.RequestID, c.Stated, req.NativeFile, req.NativeSHA256))
		}
		if req.HTTPSHA256 == req.NativeSHA256 {
			sum.ByteIdentical++
		}
		a, _ := judge.DecodePNG(c.HTTP)
		b, err := judge.DecodePNG(c.Native)
		if err != nil {
			problems = append(problems, fmt.Sprintf("request %s: native %v", req.RequestID, err))
			sum.Requests = append(sum.Requests, req)
			continue
		}
		d := judge.ComparePixels(a, b)
		req.Pixels = d.String()
		if d.Identical() {
			sum.PixelMatches++
		} else {
			problems = append(problems, fmt.Sprintf("request %s (%s, %q): native and HTTP outputs differ: %s (sha256 %s vs %s)",
				req.RequestID, req.Phase, req.Prompt, d, req.HTTPSHA256[:12], req.NativeSHA256[:12]))
		}
		sum.Requests = append(sum.Requests, req)
	}
	if sum.Total != in.Want {
		problems = append(problems, fmt.Sprintf("%d requests to compare, expected %d", sum.Total, in.Want))
	}
	v := identityVerdict{Summary: sum}
	switch {
	case in.NativeErr != nil:
		v.Err = fmt.Errorf("%d/%d native-HTTP pixel matches: %w", sum.PixelMatches, sum.Total, in.NativeErr)
	case len(problems) > 0:
		v.Err = fmt.Errorf("%d/%d native-HTTP pixel matches:\n  - %s", sum.PixelMatches, sum.Total, strings.Join(problems, "\n  - "))
	}
	return v
}

// runNatives runs the replays' native Tasks: in the family's batch program (one load),
// else a process per replay, one per GPU at a time. A failed replay is recorded on it;
// the error is for what stops the stage.
func (r *row) runNatives(ctx context.Context, b bundle, batch *future[schema.CommandRecord], out *identityRun, sum *schema.IdentitySummary) error {
	replays := out.replays
	if len(replays) == 0 {
		return nil
	}
	if batch != nil {
		if err := r.writeItems(replays); err != nil {
			return err
		}
		sum.Mode = schema.NativeBatch
		if batch.early {
			r.prog.printf("native Task: %d replays handed to the batch process preloaded %s ago (one load)", len(replays), time.Since(batch.begun).Round(time.Second))
		} else {
			r.prog.printf("native Task: %d replays in one %s process (one load)", len(replays), schema.NativeBatch)
		}
		r.prog.watch(r.ev.Path(schema.NativeBatchLog))
		return r.readNativeBatch(batch, out, sum)
	}
	r.prog.printf("native Task: the family has no batch mode for this row (no Spec.NativeBatch); one process per replay")
	sum.Mode = schema.NativeOneShot
	gpus := r.env.GPUs
	slots := [][]gpu.Device{gpus}
	if len(gpus) > 1 {
		sum.Mode, slots = schema.NativeParallel, nil
		for _, g := range gpus {
			slots = append(slots, []gpu.Device{g})
		}
	}
	work := make(chan *replay)
	var wg sync.WaitGroup
	for _, gpus := range slots {
		wg.Go(func() {
			for rp := range work {
				r.nativeOne(ctx, b, rp, gpus)
			}
		})
	}
	for i, rp := range replays {
		r.prog.printf("native Task %d/%d (%s) of request %s", i+1, len(replays), rp.req.Phase, rp.req.RequestID)
		work <- rp
	}
	close(work)
	wg.Wait()
	return nil
}

func (r *row) nativeOne(ctx context.Context, b bundle, rp *replay, gpus []gpu.Device) {
	ctx, cancel := context.WithTimeout(ctx, r.c.Deadline.Native)
	defer cancel()
	mounts := append(at(true, b.path, filepath.Dir(rp.spec.Image)), at(false, filepath.Dir(rp.spec.Output))...)
	cmd, err := r.c.Adapter.Native(r.env, rp.spec)
	if err != nil {
		rp.err = fmt.Errorf("native task: %w", err)
		return
	}
	rec, err := r.job(ctx, r.prog, cmd, rp.log, gpus, mounts...)
	rp.wallS = rec.WallS
	if err != nil {
		rp.err = err
		return
	}
	rp.stated, rp.err = r.nativeStated(r.ev.Path(rp.log))
	rp.taskMs = statedTaskMs(r.ev.Path(rp.log))
}

func (r *row) itemsPath() string { return filepath.Join(r.env.Work, "native-items.jsonl") }

func (r *row) nativeInDir() string { return filepath.Join(r.env.Work, "native-in") }

// nativeBatch is the family's batch program (nil for none): begun now when early (it
// loads beside the server and waits for its items, written at identity), else at identity.
func (r *row) nativeBatch(ctx context.Context, b bundle, early bool) (*future[schema.CommandRecord], error) {
	if r.spec.NativeBatch == nil {
		return nil, nil
	}
	f, err := later(ctx, early, func(ctx context.Context) (func(context.Context) (schema.CommandRecord, error), error) {
		total := r.c.Bench.Measured + r.c.Bench.Warmup
		spec := family.NativeBatchSpec{Bundle: b.path, Items: r.itemsPath(), Report: r.ev.Path(schema.NativeBatchFile)}
		limit := time.Duration(total+1) * r.c.Deadline.Native
		during := ""
		if early {
			spec.WaitItems = r.c.Deadline.Ready + time.Duration(total+3)*r.c.Deadline.Request + 10*time.Minute
			limit += spec.WaitItems
			during = schema.StageServe
			os.Remove(spec.Items) // it waits for them: never a stale file
		}
		cmd, err := r.spec.NativeBatch(r.env, spec)
		if err != nil {
			return nil, fmt.Errorf("native batch: %w", err)
		}
		for _, d := range []string{r.nativeInDir(), filepath.Dir(spec.Report)} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
		}
		mounts := append(at(true, spec.Bundle, r.nativeInDir()), at(false, filepath.Dir(spec.Report))...)
		run, err := r.command(ctx, schema.StageIdentity, during, cmd, schema.NativeBatchLog, limit, mounts...)
		if err != nil {
			return nil, fmt.Errorf("native batch: %w", err)
		}
		if early {
			r.prog.printf("native batch: started now to load beside the server; it waits for its items until identity")
		}
		return run, nil
	})
	if err != nil {
		return nil, err
	}
	r.stops.add(func() { f.stop(nil) })
	return f, nil
}

// writeItems writes the replays as a batch's items, one NativeItem per line, whole: a
// preloaded batch waiting for the file never reads half of it.
func (r *row) writeItems(replays []*replay) error {
	var items bytes.Buffer
	enc := json.NewEncoder(&items)
	for _, rp := range replays {
		if err := enc.Encode(family.NativeItem{ID: rp.req.RequestID, NativeSpec: rp.spec}); err != nil {
			return err
		}
	}
	return writeWhole(r.itemsPath(), items.Bytes())
}

func (r *row) readNativeBatch(batch *future[schema.CommandRecord], out *identityRun, sum *schema.IdentitySummary) error {
	rec, runErr := batch.wait()
	out.batchWallS = rec.WallS
	head, lines, err := readBatchReport(r.ev.Path(schema.NativeBatchFile))
	if err != nil {
		if runErr != nil {
			return fmt.Errorf("native batch: %w (and its report: %v)", runErr, err)
		}
		return fmt.Errorf("native batch report: %w", err)
	}
	sum.LoadMs, out.batchWaitedS = head.LoadMs, head.WaitedMs/1000
	for _, rp := range out.replays {
		line, ok := lines[rp.req.RequestID]
		switch {
		case !ok && runErr != nil:
			rp.err = fmt.Errorf("the batch failed before this replay: %w", runErr)
		case !ok:
			rp.err = fmt.Errorf("the batch report %s has no line for it", schema.NativeBatchFile)
		case filepath.Clean(line.Output) != filepath.Clean(rp.spec.Output):
			rp.err = fmt.Errorf("the batch report says it wrote %s, the replay asked for %s", line.Output, rp.spec.Output)
		default:
			rp.stated, rp.taskMs = line.SHA256, line.TaskMs
		}
	}
	return nil
}

type batchLine struct {
	ID     string  `json:"id"`
	Output string  `json:"output"`
	SHA256 string  `json:"output_sha256"`
	TaskMs float64 `json:"task_ms"`
}

// batchHead is a batch report's first line.
type batchHead struct {
	LoadMs      float64   `json:"load_ms"`
	WaitedMs    float64   `json:"waited_ms"`
	ItemsReadAt time.Time `json:"items_read_at"`
}

func readBatchReport(path string) (head batchHead, lines map[string]batchLine, err error) {
	f, err := os.Open(path)
	if err != nil {
		return head, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	lines = map[string]batchLine{}
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			var h struct {
				LoadMs *float64 `json:"load_ms"`
				batchHead
			}
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.LoadMs == nil {
				return head, nil, fmt.Errorf("%s line 1: want {\"load_ms\": ...}, got %s", filepath.Base(path), wire.Clip(sc.Bytes(), 200))
			}
			head = h.batchHead
			head.LoadMs = *h.LoadMs
			continue
		}
		var l batchLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.ID == "" || len(l.SHA256) != 64 {
			return head, nil, fmt.Errorf("%s line %d: want {\"id\", \"output\", \"output_sha256\", \"task_ms\"}, got %s", filepath.Base(path), n, wire.Clip(sc.Bytes(), 200))
		}
		if _, dup := lines[l.ID]; dup {
			return head, nil, fmt.Errorf("%s line %d: replay %s twice", filepath.Base(path), n, l.ID)
		}
		lines[l.ID] = l
	}
	return head, lines, sc.Err()
}

// nativeStated is the sha256 a native Task's log says it wrote ("" for no pattern).
func (r *row) nativeStated(logPath string) (string, error) {
	pat := r.res.NativeOutputPattern
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
		return "", fmt.Errorf("the native Task's log %s states no output sha256 (pattern %s)", relInside(r.ev.Dir, logPath), pat)
	}
	return string(m[1]), nil
}

// taskMsPattern finds a one-shot Task's own report of its Task call ("task_ms": N).
var taskMsPattern = regexp.MustCompile(`"task_ms":\s*([0-9.]+)`)

func statedTaskMs(logPath string) (v float64) {
	b, _ := os.ReadFile(logPath)
	if m := taskMsPattern.FindSubmatch(b); m != nil {
		fmt.Sscan(string(m[1]), &v)
	}
	return v
}
