package serving

import (
	"sort"
	"strings"
)

// pathMap turns host paths into a container's, longest prefix first: its mounts and the
// paths its image bakes in.
type pathMap []Mount

func newPathMap(c *Container) pathMap {
	m := append(pathMap{}, c.Mounts...)
	for host, inImage := range c.Image.Paths {
		m = append(m, Mount{Host: host, Container: inImage})
	}
	sort.SliceStable(m, func(i, j int) bool { return len(m[i].Host) > len(m[j].Host) })
	return m
}

// path maps p when it is a host prefix or lies under one; other text is left alone.
func (m pathMap) path(p string) string {
	for _, mt := range m {
		if p == mt.Host {
			return mt.Container
		}
		if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(mt.Host, "/")+"/"); ok {
			return strings.TrimSuffix(mt.Container, "/") + "/" + rest
		}
	}
	return p
}

// arg maps a whole argument, or the value of a --flag=VALUE argument.
func (m pathMap) arg(a string) string {
	if mapped := m.path(a); mapped != a {
		return mapped
	}
	if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(flag, "-") {
		if mapped := m.path(value); mapped != value {
			return flag + "=" + mapped
		}
	}
	return a
}

// command maps the arguments, the environment values and the working directory.
func (m pathMap) command(c Command) Command {
	out := Command{Dir: m.path(c.Dir)}
	for _, a := range c.Args {
		out.Args = append(out.Args, m.arg(a))
	}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		out.Env = append(out.Env, k+"="+m.arg(v))
	}
	return out
}
