// Command refedit is the reference image-edit family's CLI: build a bundle, serve it
// over HTTP, run one edit natively (the same code path as the server minus HTTP),
// and print the version. See families/refedit/README.md.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes: 1 is a failure while doing the work, 2 a command line to fix.
const (
	exitFailure = 1
	exitUsage   = 2
)

const usage = `usage:
  refedit build -o FILE [--width W --height H] [--num-inference-steps N] [--guidance-scale G] [--seed S]
  refedit serve BUNDLE --model-name NAME [--host 127.0.0.1] [--port 8000] [--records FILE]
                [--max-body-bytes N] [--max-pixels N] [--queue-depth N]
                [--fault NAME[:K] [--fault-delay D]]   (negative controls only)
  refedit run BUNDLE --image IN --prompt P [--size WxH] [--seed S] [--num-inference-steps N]
              [--guidance-scale G] --output OUT.png [--fault NAME]   (negative controls only)
  refedit version
Run 'refedit COMMAND -h' for a command's flags.
`

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
