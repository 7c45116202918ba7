package evidencecheck

import (
	"strings"

	"qualkit/internal/schema"
)

// junitNotRun is the skip type scripts/junitfix gives a stage that did not run because
// an earlier stage of its row failed (junitfix.NotRun).
const junitNotRun = "not-run"

// notRunStages are the stage cases ("<classname>/<test>") that a failed row's
// results.json records not-run: JUnit may skip them as not-run without the run having a
// skip. A not-run skip of any other case is a skip.
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
