package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// capability is a CUDA compute capability. It is compared as a (major, minor)
// pair because the string form misorders "10.0" before "9.0".
type capability struct {
	major, minor int
}

func parseCapability(s string) (capability, error) {
	major, minor, ok := strings.Cut(s, ".")
	if !ok || !isDigits(major) || !isDigits(minor) {
		return capability{}, fmt.Errorf("compute capability %q: want MAJOR.MINOR, e.g. \"9.0\"", s)
	}
	maj, err := strconv.Atoi(major)
	if err != nil {
		return capability{}, fmt.Errorf("compute capability %q: %w", s, err)
	}
	mnr, err := strconv.Atoi(minor)
	if err != nil {
		return capability{}, fmt.Errorf("compute capability %q: %w", s, err)
	}
	return capability{major: maj, minor: mnr}, nil
}

func (c capability) less(o capability) bool {
	if c.major != o.major {
		return c.major < o.major
	}
	return c.minor < o.minor
}

func (c capability) String() string {
	return fmt.Sprintf("%d.%d", c.major, c.minor)
}

// isDigits rejects signs and spaces that strconv.Atoi would accept.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
