package evidencecheck

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/schema"
)

// A failed row's stages that results.json records not-run may be skipped as not-run in
// the JUnit file (scripts/junitfix) without the run having a skip; a not-run skip of a
// stage that ran, or of a row that did not fail, is a skip, and fails as one.
func TestNotRunStagesOfAFailedRowAreNoSkip(t *testing.T) {
	stages := []schema.StageResult{{Name: schema.StagePreflight, Status: schema.Fail}, {Name: schema.StageBuild, Status: schema.NotRun}}
	check := func(status string, skipped ...string) *Report {
		c := &checker{rep: &Report{}, info: &schema.RunInfo{}}
		c.rows = []*rowCheck{{c: c, name: "r", res: &schema.Result{Status: status, Stages: stages}}}
		reports := map[string]junitCase{"r": {Name: "TestT/r/report", ClassName: "p"}}
		cases := []junitCase{reports["r"]}
		for _, st := range skipped {
			cases = append(cases, junitCase{Name: "TestT/r/" + st, ClassName: "p", Skipped: &junitSkip{Type: junitNotRun}})
		}
		c.checkJUnitSkips("junit.xml", reports, cases)
		return c.rep
	}
	assert.Empty(t, check(schema.StatusFailed, schema.StageBuild).Problems)
	failsWith(t, check(schema.StatusFailed, schema.StageBuild, schema.StagePreflight).Err(),
		"run.json: skips: evidence says 1 skipped test case(s) in junit.xml: TestT/r/preflight, file says none")
	failsWith(t, check(schema.StatusQualified, schema.StageBuild).Err(),
		"run.json: skips: evidence says 1 skipped test case(s) in junit.xml: TestT/r/build, file says none")
}
