package gpu

import (
	"fmt"
	"regexp"
	"strconv"
)

// capability is a CUDA compute capability, compared as numbers: as strings "10.0" < "9.0".
type capability struct{ major, minor int }

// capabilityForm has digits only: no sign or space that strconv.Atoi would accept.
var capabilityForm = regexp.MustCompile(`^([0-9]+)\.([0-9]+)$`)

func parseCapability(s string) (capability, error) {
	m := capabilityForm.FindStringSubmatch(s)
	if m == nil {
		return capability{}, fmt.Errorf("compute capability %q: want MAJOR.MINOR, e.g. \"9.0\"", s)
	}
	major, err := strconv.Atoi(m[1])
	if err == nil {
		var minor int
		minor, err = strconv.Atoi(m[2])
		return capability{major, minor}, err
	}
	return capability{}, fmt.Errorf("compute capability %q: %w", s, err)
}

func (c capability) less(o capability) bool {
	return c.major < o.major || c.major == o.major && c.minor < o.minor
}

func (c capability) String() string { return fmt.Sprintf("%d.%d", c.major, c.minor) }
