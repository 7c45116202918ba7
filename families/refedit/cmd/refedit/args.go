package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

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
