package evidencecheck

import (
	"strings"

	"qualkit/internal/schema"
)

// junitNotRun is junitfix.NotRun: a stage skipped because an earlier one failed.
const junitNotRun = "not-run"

// notRunStages are the stage cases a failed row records not-run; a not-run skip of any
// other case is a skip.
func (c *checker) notRunStages(reports map[string]junitCase) map[string]bool {
	out := map[string]bool{}
	for _, r := range c.rows {
		tc, ok := reports[r.name]
		if !ok || r.res == nil || r.res.Status != schema.StatusFailed {
			continue
		}
		prefix := strings.TrimSuffix(tc.Name, "/"+schema.StageReport)
		for _, st := range r.res.Stages {
			if st.Status == schema.NotRun {
				out[tc.ClassName+"/"+prefix+"/"+st.Name] = true
			}
		}
	}
	return out
}
