package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"qualkit/families/refedit/server"
)

// faultFlags are --fault and, for serve, --fault-delay: refedit broken on purpose for
// qualkit's negative controls (README "Fault injection"). There is no other way to
// turn a fault on.
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
		return server.Fault{}, usagef(cmd, "--fault %s is a fault of the HTTP server only; %s takes %s", fault, cmd, strings.Join(taskFaults(), ", "))
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

func taskFaults() []string {
	var names []string
	for _, n := range server.FaultNames() {
		if (server.Fault{Name: n}).Task() {
			names = append(names, n)
		}
	}
	return names
}

// faultBanner is the loud line a faulty command prints before it does anything.
func faultBanner(cmd string, f server.Fault) string {
	return fmt.Sprintf("FAULT INJECTION ON: refedit %s --fault %s (%s). This is a deliberately broken refedit for a negative control: never qualify it.",
		cmd, f, f.Describe())
}
