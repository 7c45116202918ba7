package harness

import (
	"context"
	"fmt"
	"path/filepath"

	"qualkit/internal/harness/serving"
	"qualkit/internal/schema"
)

// serve starts the family's server on the bundle, where the row runs it, and waits
// until it is ready; the load time is recorded apart from any request time.
func (r *row) serve(ctx context.Context) error {
	port, err := serving.FreePort()
	if err != nil {
		return err
	}
	records := r.ev.Path(schema.RecordsFile)
	spec := ServeSpec{Bundle: r.bundle, Model: r.c.Model, Host: "127.0.0.1", Port: port, Records: records}
	rt := r.s.rowRuntime(r.c)
	log := r.ev.Path("serve/server.log")
	r.prog.watch(log)
	opts, err := r.options(ctx, schema.StageServe, append(at(true, r.bundle), at(false, filepath.Dir(records))...)...)
	if err != nil {
		return err
	}
	r.prog.printf("starting the server (%s runtime), waiting up to %s for %s", rt, r.c.Deadline.Ready, serving.ReadyPath)
	srv, err := serving.Start(ctx, serving.ServerSpec{Cmd: r.c.Adapter.Serve(r.env, spec), Port: port, Ready: r.c.Deadline.Ready, Log: log}, opts...)
	if err != nil {
		return fmt.Errorf("start server (%s; %s): %w", rt, r.s.RuntimeNote, err)
	}
	r.server = srv
	r.result.Runtime = srv.Runtime()
	r.result.StartupS = srv.Startup().Seconds()
	if c := r.result.Container; c != nil {
		c.ContainerID = srv.ContainerID()
	}
	return r.ev.WriteJSON("serve/startup.json", map[string]any{
		"runtime": srv.Runtime(), "runtime_note": r.s.RuntimeNote, "url": srv.URL(), "startup_s": srv.Startup().Seconds(),
		"ready_path": serving.ReadyPath, "spec": spec, "container": r.result.Container, "gpus": r.gpus,
	})
}
