package trtmcdouble

import (
	"fmt"
	"strconv"
	"strings"
)

// opt declares one option: its spellings ("--num-inference-steps|--num-steps", the first
// canonical) and whether it takes a value.
type opt struct {
	names string
	value bool
}

// optParser parses a program's options; equals accepts --opt=value, as argparse does.
type optParser struct {
	canon  map[string]string // spelling -> canonical name
	takes  map[string]bool   // canonical name -> takes a value
	equals bool
}

func newOptParser(equals bool, opts ...opt) optParser {
	op := optParser{canon: map[string]string{}, takes: map[string]bool{}, equals: equals}
	for _, o := range opts {
		names := strings.Split(o.names, "|")
		for _, n := range names {
			op.canon[n] = names[0]
		}
		op.takes[names[0]] = o.value
	}
	return op
}

// parsedArgs holds option values by canonical name (a flag without a value records "").
type parsedArgs struct {
	vals    map[string][]string
	pos     []string
	unknown []string
}

func (a parsedArgs) has(name string) bool { _, ok := a.vals[name]; return ok }

// get is an option's last value, as argparse and the C++ CLI keep it; "" when absent.
func (a parsedArgs) get(name string) string {
	v := a.vals[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// missingValueError is an option given last on the line without its value.
type missingValueError struct{ flag string }

func (e *missingValueError) Error() string { return "option " + e.flag + " needs a value" }

// parse reads args (the program name excluded); a value option takes the next argument
// whatever it looks like. Undeclared options are collected, so each program reports them
// its own way.
func (op optParser) parse(args []string) (parsedArgs, error) {
	a := parsedArgs{vals: map[string][]string{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if len(arg) < 2 || arg[0] != '-' {
			a.pos = append(a.pos, arg)
			continue
		}
		name, value, hasValue := arg, "", false
		if op.equals {
			if n, v, ok := strings.Cut(arg, "="); ok {
				name, value, hasValue = n, v, true
			}
		}
		canon, known := op.canon[name]
		switch {
		case !known || (hasValue && !op.takes[canon]):
			a.unknown = append(a.unknown, arg)
		case !op.takes[canon]:
			a.vals[canon] = append(a.vals[canon], "")
		case hasValue:
			a.vals[canon] = append(a.vals[canon], value)
		case i+1 < len(args):
			i++
			a.vals[canon] = append(a.vals[canon], args[i])
		default:
			return a, &missingValueError{flag: arg}
		}
	}
	return a, nil
}

// intArg parses an integer option; empty gives def.
func intArg(flag, s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("argument %s: invalid int value: '%s'", flag, s)
	}
	return n, nil
}

// floatArg parses a number option; empty gives def.
func floatArg(flag, s string, def float64) (float64, error) {
	if s == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("argument %s: invalid float value: '%s'", flag, s)
	}
	return f, nil
}

func oneOf(vals ...string) func(string) bool {
	return func(v string) bool {
		for _, x := range vals {
			if v == x {
				return true
			}
		}
		return false
	}
}
