package evidencecheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"qualkit/internal/schema"
)

// checkLeases: a row names as ran-beside exactly the rows whose leases overlapped its own,
// and overlapping rows share a GPU only when both said they may (older rows not held).
func (c *checker) checkLeases() {
	leases := map[string]*schema.Lease{}
	for _, r := range c.rows {
		if r.res != nil && r.res.Lease != nil {
			leases[r.name] = r.res.Lease
		}
	}
	for _, r := range c.rows {
		l := leases[r.name]
		if l == nil {
			continue
		}
		r.truth(!l.End.Before(l.Start), schema.ResultsFile, "lease.end", "not before lease.start ("+l.Start.Format(time.RFC3339Nano)+")", l.End.Format(time.RFC3339Nano))
		var want []string
		for name, o := range leases {
			if name == r.name || !overlap(l, o) {
				continue
			}
			want = append(want, name)
			for _, g := range l.GPUs {
				if slices.Contains(o.GPUs, g) && !(l.Shared && o.Shared) {
					r.fail(schema.ResultsFile, "lease.gpus", fmt.Sprintf("GPU %s held by one row at a time (rows that do not both share)", g),
						fmt.Sprintf("held by %s and %s at once", r.name, name))
				}
			}
		}
		slices.Sort(want)
		got := make([]string, 0, len(l.RanBeside))
		for _, n := range l.RanBeside {
			got = append(got, n.Row)
			if o := leases[n.Row]; o != nil {
				at := "lease.ran_beside[" + n.Row + "]"
				r.same(schema.ResultsFile, at+".gpus", strings.Join(o.GPUs, " "), strings.Join(n.GPUs, " "), n.Row+"/results.json lease.gpus")
				r.truth(n.Start.Equal(o.Start), schema.ResultsFile, at+".start", o.Start.Format(time.RFC3339Nano)+" ("+n.Row+"/results.json lease.start)", n.Start.Format(time.RFC3339Nano))
			}
		}
		slices.Sort(got)
		r.same(schema.ResultsFile, "lease.ran_beside", strings.Join(want, " "), strings.Join(got, " "), "the rows of this run whose leases overlapped this row's")
	}
}

func overlap(a, b *schema.Lease) bool {
	return a.Start.Before(b.End) && b.Start.Before(a.End)
}
