package edit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Program is a loaded, validated bundle, ready to apply. It is immutable and safe
// for concurrent use.
type Program struct {
	bundle Bundle
	sha256 string
	edits  []*Edit
	limits Limits
}

// Edit is one selectable edit of a Program.
type Edit struct {
	Name     string
	Keywords []string
	op       operation
}

// Load reads and validates the bundle at path.
func Load(path string) (*Program, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", path, err)
	}
	return p, nil
}

// Parse validates bundle bytes. Unknown JSON fields are rejected so that a typo in a
// hand-edited bundle fails loudly instead of silently falling back to zero.
func Parse(data []byte) (*Program, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var b Bundle
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("decode bundle JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode bundle JSON: trailing data after the bundle object")
	}
	p, err := compile(b)
	if err != nil {
		return nil, err
	}
	p.sha256 = SHA256(data)
	return p, nil
}

// SHA256 is the hex sha256 of the bundle bytes the Program was loaded from.
func (p *Program) SHA256() string { return p.sha256 }

// Bundle returns the bundle as loaded.
func (p *Program) Bundle() Bundle { return p.bundle }

// Limits returns the limits in force, which WithMaxPixels may have changed.
func (p *Program) Limits() Limits { return p.limits }

// Edits lists the edits in bundle order.
func (p *Program) Edits() []*Edit { return p.edits }

// WithMaxPixels returns a copy of p whose input and output pixel limit is n; the
// server's --max-pixels overrides the bundle's limit this way.
func (p *Program) WithMaxPixels(n int) (*Program, error) {
	if n < 1 {
		return nil, fmt.Errorf("max pixels %d: want at least 1", n)
	}
	q := *p
	q.limits.MaxPixels = n
	return &q, nil
}

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
