package edit

import (
	"fmt"
	"strings"
)

// Match picks the one edit the instruction asks for: an edit matches when one of its
// keywords is a case-insensitive substring of the prompt. None, or more than one, is
// an *InputError on "prompt": the first lists every edit with its keywords, the
// second names the edits that matched. There is no silent no-op.
func (p *Program) Match(prompt string) (*Edit, error) {
	lower := strings.ToLower(prompt)
	var matched []string
	var picked *Edit
	for _, e := range p.edits {
		for _, k := range e.Keywords {
			if strings.Contains(lower, k) {
				matched = append(matched, fmt.Sprintf("%s (%q)", e.Name, k))
				picked = e
				break
			}
		}
	}
	switch len(matched) {
	case 1:
		return picked, nil
	case 0:
		return nil, invalid("prompt", "no supported edit in %s; ask for exactly one of: %s", quoteShort(prompt), p.catalogue())
	default:
		return nil, invalid("prompt", "%s asks for %d edits: %s; ask for exactly one", quoteShort(prompt), len(matched), strings.Join(matched, ", "))
	}
}

// catalogue lists every edit with its keywords, for the no-match error.
func (p *Program) catalogue() string {
	parts := make([]string, len(p.edits))
	for i, e := range p.edits {
		parts[i] = fmt.Sprintf("%s (%s)", e.Name, strings.Join(e.Keywords, ", "))
	}
	return strings.Join(parts, "; ")
}

// quoteShort quotes a prompt for an error message, cut after 200 characters so a
// long prompt cannot swamp the message. It walks the runes instead of converting the
// whole prompt to []rune, which for a prompt of megabytes allocated four bytes per
// byte just to keep the first 200.
func quoteShort(s string) string {
	const limit = 200
	n := 0
	for i := range s {
		if n == limit {
			return fmt.Sprintf("%q...", s[:i])
		}
		n++
	}
	return fmt.Sprintf("%q", s)
}
