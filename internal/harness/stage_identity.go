package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"qualkit/internal/schema"
)

// native runs one native Task where the server ran: in a container of the family's image
// for container rows, else as a process pinned to the row's GPUs.
func (r *row) native(ctx context.Context, spec NativeSpec, logRel string) error {
	mounts := append(at(true, r.bundle, filepath.Dir(spec.Image)), at(false, filepath.Dir(spec.Output))...)
	_, err := r.job(ctx, schema.StageIdentity, r.c.Adapter.Native(r.env, spec), logRel, mounts...)
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
	if err := r.ev.WriteJSON("identity/identity.json", sum); err != nil {
		return err
	}
	want := r.c.Bench.Measured + r.c.Bench.Warmup
	if sum.Total != want {
		problems = append(problems, fmt.Sprintf("%d requests to compare, expected %d", sum.Total, want))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d/%d native-HTTP pixel matches:\n  - %s", sum.PixelMatches, sum.Total, strings.Join(problems, "\n  - "))
	}
	return nil
}
