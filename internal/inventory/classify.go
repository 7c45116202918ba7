package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// classified is a profile before its status is known, with the facts that decided it.
type classified struct {
	Profile
	facts facts
	l0For []string // group profiles that name this one as their l0_replacement
}

// classify decides the class and reason of every testcase of a checkout.
func classify(co *checkout) []Profile {
	rows := make([]*classified, 0, len(co.testcases))
	byName := map[string]*classified{}
	for _, t := range co.testcases {
		c := &classified{Profile: baseProfile(co, t), facts: readFacts(co, t)}
		c.Workload = c.facts.workload
		c.Parallel = c.facts.parallel
		c.Quantization = c.facts.quant
		if c.facts.refOK {
			c.ReferenceImage = c.facts.refImage
		}
		decideFirst(c)
		rows = append(rows, c)
		byName[c.Profile.Profile] = c
	}
	decideVariants(rows)

	// A group profile's l0_replacement is often a text-to-image profile; saying so keeps
	// a reader from wondering why the edit's premerge stand-in is out of the group.
	for _, t := range co.testcases {
		src := byName[t.name()]
		if !src.Class.InGroup() {
			continue
		}
		if l0 := byName[t.str(fieldL0Replacement)]; l0 != nil && l0 != src {
			l0.l0For = append(l0.l0For, src.Profile.Profile)
		}
	}
	out := make([]Profile, 0, len(rows))
	for _, c := range rows {
		if len(c.l0For) > 0 && c.Class == OutOfGroup {
			c.Reason += fmt.Sprintf("; named as %s by %s, but it does not edit", fieldL0Replacement, strings.Join(c.l0For, ", "))
		}
		out = append(out, c.Profile)
	}
	sortProfiles(out)
	return out
}

func baseProfile(co *checkout, t testcase) Profile {
	family := t.str(fieldFamily)
	if family == "" {
		family = t.model.ID
	}
	hf := t.str(fieldHFID)
	native, _ := t.task()
	if native == "" {
		native = t.str(fieldTaskStrategy)
	}
	operation, _ := co.tasks.Operation(native)
	return Profile{
		Profile:           t.name(),
		HFID:              hf,
		Family:            family,
		Revision:          cmp.Or(co.revisions[hf], t.str(fieldHFRevision)),
		Precision:         t.str(fieldPrecision),
		UserContract:      t.str(fieldUserContract),
		TaskMode:          t.str(fieldTaskMode),
		CITier:            t.str(fieldCITier),
		NativeTask:        native,
		Operation:         operation,
		Controls:          controls(t),
		SupportedControls: controlsNotDeclared,
		Manifest:          t.manifestPath,
		ModelType:         t.str(fieldModelType),
		Runtime:           t.str(fieldRuntimeStrategy),
		Status:            Planned,
	}
}

// decideFirst settles every class except full versus variant, which needs the whole
// group. Partial wins over gap: a reduced profile is never counted whatever else holds,
// and its reason still lists what would make it a gap.
func decideFirst(c *classified) {
	f := c.facts
	if f.workload != WorkloadImageEdit {
		c.Class = OutOfGroup
		c.Reason = fmt.Sprintf("out_of_group: workload %s from %s; not an edit: %s",
			f.workload, f.workloadBy, f.notEditBy)
		return
	}
	var problems []string
	switch {
	case f.refMulti != "":
		problems = append(problems, f.refMulti)
	case !f.refOK:
		problems = append(problems, "no usable reference image: "+f.refBy)
	}
	problems = append(problems, f.skipBy...)

	switch {
	case len(f.partialBy) > 0:
		c.Class = Partial
		c.Reason = fmt.Sprintf("partial: %s; reduced profile: %s", f.workloadBy, strings.Join(f.partialBy, ", "))
		if len(problems) > 0 {
			c.Reason += "; also " + strings.Join(problems, "; ")
		}
	case len(problems) > 0:
		c.Class = Gap
		c.Reason = fmt.Sprintf("gap: %s, but %s", f.workloadBy, strings.Join(problems, "; "))
	default:
		c.Class = Full // provisional: decideVariants may demote it
		c.Reason = fmt.Sprintf("full: %s; reference image %s; no L0, reduced or random-weight marker (%s %q); no skip marker",
			f.workloadBy, f.refBy, fieldCITier, c.CITier)
	}
}

// decideVariants keeps one full profile per (checkpoint, workload) and makes the rest
// variants of it. The representative is the plainest layout: one device before a
// parallel one, unquantized before quantized, then the shortest name, then by name.
func decideVariants(rows []*classified) {
	groups := map[string][]*classified{}
	var keys []string
	for _, c := range rows {
		if c.Class != Full {
			continue
		}
		k := c.facts.checkpoint + "|" + c.Workload
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	for _, k := range keys {
		g := groups[k]
		if len(g) == 1 {
			c := g[0]
			c.Reason += fmt.Sprintf("; the only %s profile of %s %q", c.Workload, fieldHFID, c.HFID)
			continue
		}
		slices.SortFunc(g, func(a, b *classified) int {
			return cmp.Or(
				cmp.Compare(boolRank(a.Parallel != ""), boolRank(b.Parallel != "")),
				cmp.Compare(boolRank(a.Quantization != ""), boolRank(b.Quantization != "")),
				cmp.Compare(len(a.Profile.Profile), len(b.Profile.Profile)),
				cmp.Compare(a.Profile.Profile, b.Profile.Profile),
			)
		})
		base := g[0]
		var names []string
		for _, v := range g[1:] {
			names = append(names, v.Profile.Profile)
			v.Class = Variant
			v.VariantOf = base.Profile.Profile
			v.Reason = fmt.Sprintf("variant: another layout of %s: same %s %q and workload %s; %s",
				base.Profile.Profile, fieldHFID, v.HFID, v.Workload, differences(v, base))
		}
		base.Reason += fmt.Sprintf("; represents %s %q (variants: %s)", fieldHFID, base.HFID, strings.Join(names, ", "))
	}
}

// differences names the layout fields in which v differs from base.
func differences(v, base *classified) string {
	var d []string
	show := func(s, none string) string {
		if s == "" {
			return none
		}
		return fmt.Sprintf("%q", s)
	}
	if v.Precision != base.Precision {
		d = append(d, fmt.Sprintf("precision %s vs %s", show(v.Precision, "unset"), show(base.Precision, "unset")))
	}
	if v.Quantization != base.Quantization {
		d = append(d, fmt.Sprintf("quantization %s vs %s", show(v.Quantization, "none"), show(base.Quantization, "none")))
	}
	if v.Parallel != base.Parallel {
		d = append(d, fmt.Sprintf("parallel layout %s vs %s", show(v.Parallel, "one device"), show(base.Parallel, "one device")))
	}
	if len(d) == 0 {
		return "same precision, quantization and parallel layout: another testcase of the same bundle, not another model"
	}
	return "differs in " + strings.Join(d, ", ")
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortProfiles orders by class (full first), then family, then profile.
func sortProfiles(ps []Profile) {
	slices.SortStableFunc(ps, func(a, b Profile) int {
		return cmp.Or(
			cmp.Compare(a.Class.rank(), b.Class.rank()),
			cmp.Compare(a.Family, b.Family),
			cmp.Compare(a.Profile, b.Profile),
		)
	})
}
