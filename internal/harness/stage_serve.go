package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"qualkit/internal/family"
	"qualkit/internal/fixtures"
	"qualkit/internal/schema"
	"qualkit/internal/serving"
	"qualkit/internal/wire"
)

type serverLaunch struct {
	spec    family.ServeSpec
	ss      serving.ServerSpec
	opts    []serving.Option
	runtime string
}

// prepareServer settles the server's port, folders, command and options. during names
// the stage it starts in when not serve, for its command record (whose start goes to started).
func (r *row) prepareServer(ctx context.Context, b bundle, fx *fixtures.Workload, during string, started *time.Time) (*serverLaunch, error) {
	port, err := serving.FreePort()
	if err != nil {
		return nil, err
	}
	records, scratch := r.ev.Path(schema.RecordsFile), r.ev.Path(schema.ScratchDir)
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	largest, err := fx.LargestRequest(r.proto(), r.c.Model)
	if err != nil {
		return nil, err
	}
	spec := family.ServeSpec{Bundle: b.path, Model: r.c.Model, Host: "127.0.0.1", Port: port, Records: records, Scratch: scratch, MaxRequestBytes: largest}
	var rec serving.Recorder
	if during != "" {
		rec = duringRecorder{r.ev, during, started}
	}
	opts, err := r.options(ctx, schema.StageServe, r.env.GPUs, rec, append(at(true, b.path), at(false, filepath.Dir(records), scratch)...)...)
	if err != nil {
		return nil, err
	}
	cmd, err := r.c.Adapter.Serve(r.env, spec)
	if err != nil {
		return nil, fmt.Errorf("the family's server: %w", err)
	}
	ss := serving.ServerSpec{Cmd: cmd, Port: port, Ready: r.c.Deadline.Ready, Log: r.ev.Path(schema.ServerLog)}
	return &serverLaunch{spec: spec, ss: ss, opts: opts, runtime: r.s.rowRuntime(r.c)}, nil
}

// serve waits until the family's server (begun with the correctness case, or now) is
// ready, and asks it what it serves; its load time is recorded apart from request times.
func (r *row) serve(ctx context.Context, l *serverLaunch, server *future[serving.Server]) (serving.Server, error) {
	if server.early {
		r.prog.printf("the server (%s runtime) started with the correctness case; waiting up to %s from its start for %s", l.runtime, r.c.Deadline.Ready, serving.ReadyPath)
	} else {
		r.prog.printf("starting the server (%s runtime), waiting up to %s for %s", l.runtime, r.c.Deadline.Ready, serving.ReadyPath)
	}
	srv, err := server.wait()
	if err != nil {
		return nil, fmt.Errorf("start server (%s; %s): %w", l.runtime, r.s.RuntimeNote, err)
	}
	var container *schema.ContainerInfo
	if r.img != nil {
		container = r.img.info
		container.ContainerID = srv.ContainerID()
	}
	if err := r.checkIdentity(ctx, srv, l.spec); err != nil {
		return srv, err
	}
	return srv, r.ev.WriteJSON(schema.StartupFile, map[string]any{
		"runtime": srv.Runtime(), "runtime_note": r.s.RuntimeNote, "url": srv.URL(), "startup_s": srv.Startup().Seconds(),
		"ready_path": serving.ReadyPath, "spec": l.spec, "container": container, "gpus": r.env.GPUs,
	})
}

// checkIdentity asks a ready server what it is (Spec.Identity) and keeps the answer: a
// server of another backend, bundle or checkpoint fails here, before any request.
func (r *row) checkIdentity(ctx context.Context, srv serving.Server, spec family.ServeSpec) error {
	ic := r.spec.Identity
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+ic.Path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("server identity (GET %s): %w", ic.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("server identity (GET %s): %w", ic.Path, err)
	}
	if err := r.ev.WriteFile(schema.ServerIdentityFile, body); err != nil {
		return err
	}
	v := judgeServerIdentity(serverIdentity{Check: ic, Status: resp.StatusCode, Body: body, Spec: spec, Model: r.c.Model})
	return v.Err
}

// serverIdentity is a ready server's answer at the family's identity path.
type serverIdentity struct {
	Check  family.IdentityCheck
	Status int
	Body   []byte
	Spec   family.ServeSpec
	Model  string
}

type serverIdentityVerdict struct {
	Served string
	Err    error
}

// judgeServerIdentity requires a 200 answer that the family's check accepts (the
// backend and the bundle the server was started on), naming the row's checkpoint.
func judgeServerIdentity(in serverIdentity) serverIdentityVerdict {
	path := in.Check.Path
	if in.Status != http.StatusOK {
		return serverIdentityVerdict{Err: fmt.Errorf("server identity: GET %s answered %d: %s", path, in.Status, wire.Clip(in.Body, 300))}
	}
	served, err := in.Check.Check(in.Body, in.Spec)
	if err != nil {
		return serverIdentityVerdict{Err: fmt.Errorf("server identity (GET %s): %w", path, err)}
	}
	if served != in.Model {
		// Every row is held to the checkpoint it names: a row copied under another
		// model, served by this bundle, would otherwise pass every stage.
		return serverIdentityVerdict{Served: served, Err: fmt.Errorf("server identity (GET %s): the server serves checkpoint %q, the row is for %q", path, served, in.Model)}
	}
	return serverIdentityVerdict{Served: served}
}
