package trtmcdouble

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Exit codes shared by the programs.
const (
	exitOK    = 0
	exitFail  = 1 // the call was understood but failed
	exitUsage = 2 // the command line was not understood
)

// proc is one run of a program. Main fills it from the process; tests fill it directly.
type proc struct {
	ctx    context.Context
	args   []string // args[0] is the program name
	env    map[string]string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	wd     string // working directory, for relative paths
	self   string // this executable
	// exec replaces the process (syscall.Exec); tests record the call instead.
	exec func(path string, argv, env []string) error
}

// programs maps each name the binary answers to (argv[0]'s base) to what it plays: the
// native programs under the names the CMake build copies it to, and, as `trtmcdouble
// ROLE`, what the checkouts' stand-in Python files hand to it.
var programs = map[string]func(*proc) int{
	"trtmc":                      trtmcMain,
	"trtmc-server":               nativeServerMain,
	"trtmc_benchmark_worker":     workerMain,
	"qwen_image_e2e_harness":     harnessMain,
	"tensorrt-model-connect":     builderMain,
	"trtmc-server-control-plane": func(p *proc) int { return serverMain(p, p.args[1:]) },
	"trtmc-perf-serve":           replayMain,
	"perf-serve-recorder":        recorderMain,
	"diffusers-reference":        referenceMain,
}

// Main runs the program named by filepath.Base(args[0]) and returns its exit status;
// as trtmcdouble it takes the program name as its first argument. SIGTERM and SIGINT
// cancel a long-running program (trtmc-server), which then exits 0.
func Main(args []string, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "qualkit contract double: working directory: %v\n", err)
		return exitFail
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "qualkit contract double: own executable: %v\n", err)
		return exitFail
	}
	return dispatch(&proc{ctx: ctx, args: args, env: envMap(env), stdin: stdin, stdout: stdout, stderr: stderr, wd: wd, self: self, exec: syscall.Exec})
}

func dispatch(p *proc) int {
	if len(p.args) == 0 {
		return p.fail(exitUsage, "qualkit contract double: no program name (argv[0])")
	}
	name := filepath.Base(p.args[0])
	if name == "trtmcdouble" {
		if len(p.args) < 2 || p.args[1] == "--help" || p.args[1] == "-h" {
			fmt.Fprintf(p.stdout, "trtmcdouble: qualkit's contract double of TensorRT-Model-Connect.\nRun it as one of: %s\n(or trtmcdouble PROGRAM ARGS...)\n", strings.Join(programNames(), ", "))
			if len(p.args) < 2 {
				return exitUsage
			}
			return exitOK
		}
		p.args = p.args[1:]
		name = filepath.Base(p.args[0])
	}
	run, ok := programs[name]
	if !ok {
		return p.fail(exitUsage, "qualkit contract double: no program named %q (it plays %s)", name, strings.Join(programNames(), ", "))
	}
	return run(p)
}

func programNames() []string {
	names := make([]string, 0, len(programs))
	for n := range programs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (p *proc) fail(code int, format string, a ...any) int {
	fmt.Fprintf(p.stderr, format+"\n", a...)
	return code
}

func (p *proc) getenv(key string) string { return p.env[key] }

func (p *proc) abs(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(p.wd, path)
}

func (p *proc) context() context.Context {
	if p.ctx == nil {
		return context.Background()
	}
	return p.ctx
}
