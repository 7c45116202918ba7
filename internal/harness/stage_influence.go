package harness

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"qualkit/internal/fixtures"
	"qualkit/internal/judge"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// influence sends the same instruction and seed with the same reference image twice
// (the outputs must match) and with another one (they must differ enough).
// It returns the comparisons and the responses (for their Task times).
func (r *row) influence(ctx context.Context, fx *fixtures.Workload, srv serving.Server) (*schema.InfluenceResult, [][]byte, error) {
	inf := fx.Influence
	client := &http.Client{Timeout: r.c.Deadline.Request}
	settings := fx.InfluenceSettings()
	names := schema.InfluenceProbes
	files := []string{inf.Images[0], inf.Images[0], inf.Images[1]}
	var outs []image.Image
	var bodies [][]byte
	for i, f := range files {
		data, err := os.ReadFile(fx.ImagePath(f))
		if err != nil {
			return nil, bodies, err
		}
		id := schema.InfluenceRequestID(names[i])
		status, body, err := Send(ctx, client, r.proto(), srv.URL(), r.c.Model, wire.Request{Image: data, Prompt: inf.Instruction, Settings: settings}, id)
		if err != nil {
			return nil, bodies, err
		}
		if status != http.StatusOK {
			return nil, bodies, fmt.Errorf("influence request %s (%s): status %d: %s", names[i], f, status, wire.Clip(body, 300))
		}
		bodies = append(bodies, body)
		png, err := r.output(body, id)
		if err != nil {
			return nil, bodies, fmt.Errorf("influence request %s: %w", names[i], err)
		}
		img, err := judge.DecodePNG(png)
		if err != nil {
			return nil, bodies, fmt.Errorf("influence request %s: %w", names[i], err)
		}
		if err := r.ev.WriteFile(schema.InfluencePNG(names[i]), png); err != nil {
			return nil, bodies, err
		}
		outs = append(outs, img)
	}
	v := judgeInfluence(influenceInput{Instruction: inf.Instruction, Images: [2]string{inf.Images[0], inf.Images[1]}, Outputs: [3]image.Image(outs)})
	if err := r.ev.WriteJSON(schema.InfluenceFile, &v.Result); err != nil {
		return &v.Result, bodies, err
	}
	return &v.Result, bodies, v.Err
}

// influenceInput is what the influence probes sent and got back, outputs in
// schema.InfluenceProbes order.
type influenceInput struct {
	Instruction string
	Images      [2]string
	Outputs     [3]image.Image
}

type influenceVerdict struct {
	Result schema.InfluenceResult
	Err    error
}

// judgeInfluence requires the same request twice to give pixel-identical outputs, and
// the other reference image an output that differs enough (judge.MinInfluence*).
func judgeInfluence(in influenceInput) influenceVerdict {
	res := schema.InfluenceResult{Instruction: in.Instruction, Images: in.Images,
		Repeat: judge.ComparePixels(in.Outputs[0], in.Outputs[1]), Other: judge.ComparePixels(in.Outputs[0], in.Outputs[2])}
	v := influenceVerdict{Result: res}
	if !res.Repeat.Identical() {
		v.Err = fmt.Errorf("the same request twice gave different outputs (%s): the server is not deterministic for a fixed seed", res.Repeat)
		return v
	}
	if res.Other.Identical() {
		v.Err = fmt.Errorf("capability gap: two different reference images (%s, %s) gave pixel-identical outputs: the server ignores the reference image", in.Images[0], in.Images[1])
		return v
	}
	if f := float64(res.Other.DifferingPixel) / float64(max(res.Other.Pixels, 1)); f < judge.MinInfluenceFraction || res.Other.MeanAbs < judge.MinInfluenceMeanLevels {
		v.Err = fmt.Errorf("capability gap: two different reference images (%s, %s) gave outputs that barely differ (%s; %.2f %% of the pixels): "+
			"the gate needs %.0f %% of the pixels and a mean of %.2f levels, so the server all but ignores the reference image",
			in.Images[0], in.Images[1], res.Other, 100*f, 100*judge.MinInfluenceFraction, judge.MinInfluenceMeanLevels)
	}
	return v
}

// Send sends one edit over proto, byte for byte as AIPerf would, with X-Request-ID set,
// and returns the status and body.
func Send(ctx context.Context, client *http.Client, proto wire.Protocol, url, model string, req wire.Request, requestID string) (int, []byte, error) {
	body, ctype, err := proto.Encode(model, req)
	if err != nil {
		return 0, nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url+proto.Route(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	hr.Header.Set("Content-Type", ctype)
	hr.Header.Set("X-Request-ID", requestID)
	resp, err := client.Do(hr)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s%s: %w", url, proto.Route(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	return resp.StatusCode, b, err
}

// proto is how the row's requests travel: the family's protocol, else wire.OpenAI.
func (r *row) proto() wire.Protocol {
	if r.spec.Wire != nil {
		return r.spec.Wire
	}
	return wire.OpenAI{}
}

// sent is what a recorded request carried, read through the row's protocol.
func (r *row) sent(rec schema.RawRecord) (wire.Request, error) {
	req, err := r.proto().Decode(rec.Payload)
	if err != nil {
		return req, fmt.Errorf("request %s: %w", rec.Metadata.XRequestID, err)
	}
	return req, nil
}

// output is the PNG a response names, read through the row's protocol.
func (r *row) output(body []byte, requestID string) ([]byte, error) {
	return r.proto().Output(body, requestID, r.readScratch)
}

func (r *row) readScratch(rel string) ([]byte, error) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%q is not a file inside the server's scratch folder", rel)
	}
	return os.ReadFile(filepath.Join(r.ev.Path(schema.ScratchDir), filepath.FromSlash(rel)))
}
