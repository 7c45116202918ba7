// Command refedit is the reference image-edit family's CLI: build, serve, run and
// version (families/refedit/README.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"qualkit/families/refedit/edit"
	"qualkit/families/refedit/server"
)

// Exit codes: 1 is a failure while doing the work, 2 a command line to fix.
const (
	exitFailure = 1
	exitUsage   = 2
)

const usage = "usage:\n  refedit " + buildSynopsis + "\n  refedit " + serveSynopsis + "\n  refedit " + runSynopsis +
	"\n  refedit version\nRun 'refedit COMMAND -h' for a command's flags.\n"

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs one subcommand and returns the process exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "refedit: no command given\n"+usage)
		return exitUsage
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "build":
		err = cmdBuild(rest, stdout, stderr)
	case "serve":
		err = cmdServe(rest, stderr)
	case "run":
		err = cmdRun(rest, stdout, stderr)
	case "version":
		err = cmdVersion(rest, stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "refedit: unknown command %q\n%s", cmd, usage)
		return exitUsage
	}
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "refedit %s: %s\nRun 'refedit %s -h' for its flags.\n", ue.cmd, ue.msg, ue.cmd)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "refedit %s: %v\n", args[0], err)
		return exitFailure
	}
}

// usageError is a command line to fix: exit 2, with what was wrong and what to do.
type usageError struct {
	cmd string
	msg string
}

func (e *usageError) Error() string { return e.cmd + ": " + e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// errHelp ends a command that printed its help on -h.
var errHelp = errors.New("help shown")

// command is one subcommand's FlagSet with its synopsis. The FlagSet returns its
// errors instead of printing or exiting: dispatch prints them once, with a hint.
type command struct {
	fs       *flag.FlagSet
	synopsis string
	help     io.Writer
}

func newCommand(name, synopsis string, help io.Writer) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &command{fs: fs, synopsis: synopsis, help: help}
}

// parse reads flags and positional arguments in any order, so both
// "serve --port 1 B" and "serve B --port 1" work: the flag package stops at the first
// positional, so parsing resumes after each one. A "--" ends flag parsing.
func (c *command) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.printHelp()
				return nil, errHelp
			}
			return nil, usagef(c.fs.Name(), "%s", strings.TrimSpace(err.Error()))
		}
		rest := c.fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func (c *command) printHelp() {
	fmt.Fprintf(c.help, "usage: refedit %s\n", c.synopsis)
	c.fs.SetOutput(c.help)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
}

// given lists the names of the flags set on the command line.
func (c *command) given() map[string]bool {
	set := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func cmdVersion(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usagef("version", "takes no arguments, got %q", args)
	}
	fmt.Fprintf(stdout, "refedit %s (bundle format %s v%d, %s, %s/%s)\n",
		edit.Version, edit.Format, edit.FormatVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// faultFlags are --fault and, for serve, --fault-delay: the only way to turn on a fault.
type faultFlags struct {
	spec  string
	delay time.Duration
}

// addFaultFlags adds --fault for names; serve also gets :K and --fault-delay.
func addFaultFlags(fs *flag.FlagSet, serve bool, names []string) *faultFlags {
	var f faultFlags
	spec := "`NAME`"
	if serve {
		spec = "`NAME[:K]`"
	}
	fs.StringVar(&f.spec, "fault", "", "NEGATIVE CONTROL ONLY: break this command on purpose with fault "+spec+" ("+strings.Join(names, ", ")+")")
	if serve {
		fs.DurationVar(&f.delay, "fault-delay", server.DefaultFaultDelay, "how long --fault slow:K sleeps")
	}
	return &f
}

// parse checks the flags of cmd; given is the set of flags on the command line.
func (f *faultFlags) parse(cmd string, given map[string]bool, taskOnly bool) (server.Fault, error) {
	fault, err := server.ParseFault(f.spec)
	if err != nil {
		return server.Fault{}, usagef(cmd, "--fault: %v", err)
	}
	if taskOnly && fault.On() && !fault.Task() {
		return server.Fault{}, usagef(cmd, "--fault %s is a fault of the HTTP server only; %s takes %s", fault, cmd, strings.Join(server.TaskFaultNames(), ", "))
	}
	if given["fault-delay"] {
		if fault.Name != server.FaultSlow {
			return server.Fault{}, usagef(cmd, "--fault-delay applies only to --fault %s[:K]", server.FaultSlow)
		}
		if f.delay <= 0 {
			return server.Fault{}, usagef(cmd, "--fault-delay %s: want a duration > 0", f.delay)
		}
		fault.Delay = f.delay
	}
	return fault, nil
}

// faultBanner is the loud line a faulty command prints before it does anything.
func faultBanner(cmd string, f server.Fault) string {
	return fmt.Sprintf("FAULT INJECTION ON: refedit %s --fault %s (%s). This is a deliberately broken refedit for a negative control: never qualify it.",
		cmd, f, f.Describe())
}

const buildSynopsis = "build -o FILE [--width W --height H] [--num-inference-steps N] [--guidance-scale G] [--seed S]"

// cmdBuild writes the bundle and prints "<sha256>  <path>" like sha256sum.
func cmdBuild(args []string, stdout, stderr io.Writer) error {
	d := edit.BuiltinDefaults()
	c := newCommand("build", buildSynopsis, stderr)
	fs := c.fs
	out := fs.String("o", "", "write the bundle to `FILE` (required)")
	fs.IntVar(&d.Width, "width", d.Width, "default output width; 0 with --height 0 keeps the input size")
	fs.IntVar(&d.Height, "height", d.Height, "default output height")
	fs.IntVar(&d.NumInferenceSteps, "num-inference-steps", d.NumInferenceSteps, "default blur passes")
	fs.Float64Var(&d.GuidanceScale, "guidance-scale", d.GuidanceScale, "default guidance blend strength, (0, 3]")
	fs.Uint64Var(&d.Seed, "seed", d.Seed, "default grain seed")
	positional, err := c.parse(args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return usagef("build", "takes no positional arguments, got %q; name the output with -o FILE", positional)
	}
	if *out == "" {
		return usagef("build", "-o FILE is required: where to write the bundle")
	}
	if (d.Width == 0) != (d.Height == 0) {
		return usagef("build", "--width and --height go together (got %dx%d); give both, or neither for the input size", d.Width, d.Height)
	}
	data, err := edit.Build(d).Encode()
	if err != nil {
		return usagef("build", "%v", err)
	}
	if err := writeFileAtomic(*out, data); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s  %s\n", edit.SHA256(data), *out)
	return nil
}

// writeFileAtomic writes via a temporary file and a rename, so a reader never sees a
// half-written bundle or image under the final name.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err == nil {
		defer os.Remove(tmp.Name()) // no-op after the rename
		_, err = tmp.Write(data)
		if err = errors.Join(err, tmp.Close()); err == nil {
			err = os.Chmod(tmp.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

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
