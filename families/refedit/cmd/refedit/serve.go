package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"qualkit/families/refedit/edit"
	"qualkit/families/refedit/server"
)

const serveSynopsis = "serve BUNDLE --model-name NAME [--host 127.0.0.1] [--port 8000] [--records FILE] [--max-body-bytes N] [--max-prompt-bytes N] [--body-timeout D] [--max-pixels N] [--queue-depth N] [--fault NAME[:K] [--fault-delay D]]"

// shutdownGrace is how long in-flight edits get to finish after SIGINT/SIGTERM.
const shutdownGrace = 30 * time.Second

// serveOptions are the server's Config and what the CLI adds around it.
type serveOptions struct {
	server.Config
	bundle, host, records string
	port, maxPixels       int
}

func cmdServe(args []string, stderr io.Writer) error {
	var o serveOptions
	c := newCommand("serve", serveSynopsis, stderr)
	fs := c.fs
	fs.StringVar(&o.ModelName, "model-name", "", "the model name clients must send (required)")
	fs.StringVar(&o.host, "host", "127.0.0.1", "listen address; loopback unless told otherwise")
	fs.IntVar(&o.port, "port", 8000, "listen port (0 picks a free one)")
	fs.StringVar(&o.records, "records", "", "append one JSON line per edit request to `FILE`")
	fs.Int64Var(&o.MaxBodyBytes, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body (413 above)")
	fs.IntVar(&o.MaxPromptBytes, "max-prompt-bytes", server.DefaultMaxPromptBytes, "longest prompt in bytes (413 above)")
	fs.DurationVar(&o.BodyTimeout, "body-timeout", server.DefaultBodyTimeout, "longest wait for a request body (408 past it)")
	fs.IntVar(&o.maxPixels, "max-pixels", 0, "largest input and output image in pixels (413 above); 0 keeps the bundle's limit")
	fs.IntVar(&o.QueueDepth, "queue-depth", 16, "edits that may wait while one runs (429 beyond)")
	faultFlag := addFaultFlags(fs, true, server.FaultNames())
	positional, err := c.parse(args)
	if err != nil {
		return err
	}
	if o.Fault, err = faultFlag.parse("serve", c.given(), false); err != nil {
		return err
	}
	switch {
	case len(positional) != 1:
		return usagef("serve", "want exactly one BUNDLE argument, got %d (%q)", len(positional), positional)
	case o.ModelName == "":
		return usagef("serve", "--model-name NAME is required: the name clients send as \"model\"")
	case o.port < 0 || o.port > 65535:
		return usagef("serve", "--port %d: want 0..65535", o.port)
	case o.MaxBodyBytes < 1:
		return usagef("serve", "--max-body-bytes %d: want at least 1", o.MaxBodyBytes)
	case o.MaxPromptBytes < 1:
		return usagef("serve", "--max-prompt-bytes %d: want at least 1", o.MaxPromptBytes)
	case o.BodyTimeout <= 0:
		return usagef("serve", "--body-timeout %s: want a positive duration", o.BodyTimeout)
	case o.maxPixels < 0:
		return usagef("serve", "--max-pixels %d: want at least 1, or 0 for the bundle's limit", o.maxPixels)
	case o.QueueDepth < 0:
		return usagef("serve", "--queue-depth %d: want 0 or more", o.QueueDepth)
	}
	o.bundle = positional[0]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o, log.New(stderr, "refedit: ", log.LstdFlags|log.LUTC|log.Lmicroseconds))
}

// serve listens first (so /health/ready answers 503 while loading), loads the bundle,
// then serves until ctx ends and drains in-flight edits.
func serve(ctx context.Context, o serveOptions, logger *log.Logger) error {
	if o.Fault.On() {
		logger.Print(faultBanner("serve", o.Fault))
	}
	var records io.Writer
	if o.records != "" {
		// Unbuffered: every record line is handed to the OS as it is written.
		f, err := os.OpenFile(o.records, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open records: %w", err)
		}
		defer f.Close()
		records = f
	}
	o.Records, o.Log = records, logger
	s, err := server.New(o.Config)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	httpServer := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()

	p, err := edit.Load(o.bundle)
	if err == nil && o.maxPixels > 0 {
		p, err = p.WithMaxPixels(o.maxPixels)
	}
	if err != nil {
		_ = httpServer.Close()
		return err
	}
	s.Load(p)
	logger.Printf("serving model %s at http://%s bundle %s sha256 %s (max pixels %d, queue depth %d, max body %d bytes)",
		o.ModelName, ln.Addr(), o.bundle, p.SHA256(), p.Limits().MaxPixels, o.QueueDepth, o.MaxBodyBytes)

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Printf("shutting down: waiting up to %s for in-flight requests", shutdownGrace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Printf("stopped")
	return nil
}
