package harness

import (
	"flag"
	"fmt"
	"regexp"
	"strings"
)

// Selection is go test's -run and -skip, matched as the testing package does (which
// exports no matcher; TestSelectionAgreesWithGoTest holds this one to it).
type Selection struct {
	run, skip [][]*regexp.Regexp // alternatives of slash-separated elements; nil run selects all
}

// NewSelection compiles a -run and a -skip pattern.
func NewSelection(run, skip string) (Selection, error) {
	var s Selection
	var err error
	if s.run, err = compilePattern(run); err != nil {
		return s, fmt.Errorf("-run %q: %w", run, err)
	}
	if s.skip, err = compilePattern(skip); err != nil {
		return s, fmt.Errorf("-skip %q: %w", skip, err)
	}
	return s, nil
}

// TestSelection is the selection of this test binary's -test.run and -test.skip flags.
func TestSelection() (Selection, error) {
	value := func(name string) string {
		if f := flag.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	return NewSelection(value("test.run"), value("test.skip"))
}

// Runs says whether the test of that full name ("TestX/row/stage") runs: some -run
// alternative matches each of its elements (a deeper pattern still runs it, for its
// subtests), and no -skip alternative matches it whole.
func (s Selection) Runs(name string) bool {
	elems := strings.Split(name, "/")
	if s.run != nil {
		if ok, _ := matchAny(s.run, elems); !ok {
			return false
		}
	}
	if s.skip != nil {
		if ok, partial := matchAny(s.skip, elems); ok && !partial {
			return false
		}
	}
	return true
}

func matchAny(alts [][]*regexp.Regexp, elems []string) (ok, partial bool) {
	for _, alt := range alts {
		if ok, partial := matchElems(alt, elems); ok {
			return ok, partial
		}
	}
	return false, false
}

func matchElems(pattern []*regexp.Regexp, elems []string) (ok, partial bool) {
	for i, e := range elems {
		if i >= len(pattern) {
			break
		}
		if !pattern[i].MatchString(e) {
			return false, false
		}
	}
	return true, len(elems) < len(pattern)
}

// compilePattern splits a pattern as the testing package does: at '|' and '/' outside
// brackets and parentheses, into alternatives of per-level elements. "" is nil.
func compilePattern(p string) ([][]*regexp.Regexp, error) {
	if p == "" {
		return nil, nil
	}
	var alts [][]*regexp.Regexp
	var cur []*regexp.Regexp
	add := func(elem string) error {
		re, err := regexp.Compile(elem)
		if err != nil {
			return err
		}
		cur = append(cur, re)
		return nil
	}
	brackets, parens, start := 0, 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '[':
			brackets++
		case ']':
			brackets = max(brackets-1, 0)
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets != 0 || parens != 0 {
				continue
			}
			if err := add(p[start:i]); err != nil {
				return nil, err
			}
			start = i + 1
			if p[i] == '|' {
				alts, cur = append(alts, cur), nil
			}
		}
	}
	if err := add(p[start:]); err != nil {
		return nil, err
	}
	return append(alts, cur), nil
}
