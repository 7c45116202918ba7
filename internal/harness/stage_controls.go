package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"maps"
	"net/http"
	"os"
	"slices"

	"qualkit/internal/controls"
	"qualkit/internal/fixtures"
	"qualkit/internal/judge"
	"qualkit/internal/quality"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

// controls is the last stage that needs the server: for every declared control it sends
// requests that differ only in that control, and every refused field and out-of-range
// value, and judges what came back (controls.Judge); then it stops the server, so that
// identity's native Task has the GPU to itself. It also returns the 200 responses.
func (r *row) controls(ctx context.Context, fx *fixtures.Workload, srv serving.Server, bench *benchmarkResult) (*schema.ControlsResult, [][]byte, error) {
	res, bodies, err := r.probeControls(ctx, fx, srv, bench)
	if err != nil {
		return res, bodies, err
	}
	if err := srv.Stop(ctx); err != nil {
		return res, bodies, fmt.Errorf("stop server: %w", err)
	}
	return res, bodies, nil
}

func (r *row) probeControls(ctx context.Context, fx *fixtures.Workload, srv serving.Server, bench *benchmarkResult) (res *schema.ControlsResult, bodies [][]byte, err error) {
	decl := r.spec.Controls
	// A stage cut before its verdict still says which probes it sent: the server recorded
	// them, and the checker holds every records line to a request the evidence names.
	var probes []schema.ControlProbe
	sent, judged := 0, false
	defer func() {
		if err != nil && !judged && sent > 0 {
			res = &schema.ControlsResult{Declared: decl, Probes: probes[:sent], Cut: true}
			if werr := r.ev.WriteJSON(schema.ControlsFile, res); werr != nil {
				err = fmt.Errorf("%w; and writing what the stage sent: %v", err, werr)
			}
		}
	}()
	inf := fx.Influence
	data, err := os.ReadFile(fx.ImagePath(inf.Images[0]))
	if err != nil {
		return nil, nil, err
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("the influence image %s: %w", inf.Images[0], err)
	}
	client := &http.Client{Timeout: r.c.Deadline.Request}
	probes = controls.Plan(decl, fx.InfluenceSettings(), inf.Instruction)
	outs := map[string]image.Image{}
	ts := r.spec.Timing
	for i := range probes {
		p := &probes[i]
		req := wire.Request{Image: data, Prompt: p.Prompt, Settings: p.Settings}
		if !slices.ContainsFunc(decl.Controls, func(c schema.Control) bool { return c.Field == p.Field }) {
			// A refused or accepted field no control names travels as it is.
			req.Settings = maps.Clone(p.Settings)
			delete(req.Settings, p.Field)
			req.Raw = map[string]string{p.Field: p.Value}
		}
		sent = i + 1
		status, body, err := Send(ctx, client, r.proto(), srv.URL(), r.c.Model, req, p.RequestID)
		if err != nil {
			return nil, bodies, fmt.Errorf("controls probe %s (%s=%q): %w", p.Name, p.Field, p.Value, err)
		}
		p.Status = status
		if status != http.StatusOK {
			p.Message = refusalMessage(body)
			continue
		}
		bodies = append(bodies, body)
		png, err := r.output(body, p.RequestID)
		if err != nil {
			return nil, bodies, fmt.Errorf("controls probe %s: %w", p.Name, err)
		}
		img, err := judge.DecodePNG(png)
		if err != nil {
			return nil, bodies, fmt.Errorf("controls probe %s: %w", p.Name, err)
		}
		p.File = schema.ControlsPNG(p.Name)
		if err := r.ev.WriteFile(p.File, png); err != nil {
			return nil, bodies, err
		}
		outs[p.Name] = img
		if ts.Body != "" {
			if p.TaskMS, err = taskFromBody(ts, body); err != nil {
				return nil, bodies, fmt.Errorf("controls probe %s: the Task time: %w", p.Name, err)
			}
		}
	}
	records, err := r.recordLines()
	if err != nil && decl != nil {
		return nil, bodies, err
	}
	for i := range probes {
		p := &probes[i]
		path := ts.Records
		switch {
		case controls.ByStepTime(decl, *p):
			path = decl.StepTime
		case p.Status != http.StatusOK || ts.Body != "":
			continue
		}
		if p.TaskMS, err = schema.NumberAt(records[p.RequestID], path); err != nil {
			return nil, bodies, fmt.Errorf("controls probe %s: %s in the server's records: %w", p.Name, path, err)
		}
	}
	criteria, err := r.qualityCriteria()
	if err != nil {
		return nil, bodies, err
	}
	v := controls.Judge(controls.Input{Decl: decl, Probes: probes, Outputs: outs,
		Gate: func(p schema.ControlProbe, out image.Image) []string {
			return append(notSource(src, out, p.Settings["size"]), quality.Judge(criteria, quality.Measure(out), quality.Measure(src))...)
		},
		Work: r.askedWork(bench, probes, records)})
	judged = true
	if err := r.ev.WriteJSON(schema.ControlsFile, &v.Result); err != nil {
		return &v.Result, bodies, err
	}
	return &v.Result, bodies, v.Err
}

// refusalMessage is what a refusal says: an OpenAI-style error's message and param, else
// the body (never the request id it echoes, which names the probe's field).
func refusalMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Param   *string `json:"param"`
		} `json:"error"`
		Detail any `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		switch {
		case e.Error.Message != "" && e.Error.Param != nil:
			return wire.Clip([]byte(fmt.Sprintf("%s (param %s)", e.Error.Message, *e.Error.Param)), 300)
		case e.Error.Message != "":
			return wire.Clip([]byte(e.Error.Message), 300)
		case e.Detail != nil:
			b, _ := json.Marshal(e.Detail)
			return wire.Clip(b, 300)
		}
	}
	return wire.Clip(body, 300)
}

// askedWork is every request answered 200, with what it asked and its records line.
func (r *row) askedWork(b *benchmarkResult, probes []schema.ControlProbe, records map[string]any) []controls.Asked {
	var out []controls.Asked
	if b != nil {
		for _, rec := range b.export.Raw {
			if rec.Failed() {
				continue
			}
			sent, err := r.sent(rec)
			if err != nil {
				continue // the benchmark stage refused it already
			}
			id := rec.Metadata.XRequestID
			out = append(out, controls.Asked{RequestID: id, Settings: sent.Settings, Record: records[id]})
		}
	}
	for _, p := range probes {
		if p.Status == http.StatusOK {
			out = append(out, controls.Asked{RequestID: p.RequestID, Settings: p.Settings, Record: records[p.RequestID]})
		}
	}
	return out
}

// recordLines are the server's records lines by request id (none when the family's
// records carry no request id).
func (r *row) recordLines() (map[string]any, error) {
	out := map[string]any{}
	ts := r.spec.Timing
	if ts.RecordID == "" {
		return out, nil
	}
	err := eachRecord(r.ev.Path(schema.RecordsFile), func(doc any) {
		if id, err := schema.ValueAt(doc, ts.RecordID); err == nil {
			out[fmt.Sprint(id)] = doc
		}
	})
	return out, err
}

// qualityCriteria are the family's quality criteria (none when it states none).
func (r *row) qualityCriteria() (schema.QualityCriteria, error) {
	if r.spec.Quality == nil {
		return schema.QualityCriteria{}, nil
	}
	spec, err := r.spec.Quality(r.env)
	if err != nil {
		return schema.QualityCriteria{}, fmt.Errorf("the family's quality criteria: %w", err)
	}
	return spec.Criteria, nil
}
