package evidencecheck_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"qualkit/internal/evidencecheck"
	"qualkit/internal/harness"
	"qualkit/internal/schema"
)

// The checker re-derives every number on its own, so that it cannot share the harness's
// bugs, and reads the one schema; these tests keep the rest of the format in step.
func TestContractWithTheHarness(t *testing.T) {
	names := harness.StageNames()
	assert.Equal(t, names[:len(names)-1], schema.Stages, "stages (the harness's StageNames less report)")
	assert.Equal(t, "report", names[len(names)-1])
	assert.Equal(t, harness.MarkdownHeader,
		"| "+strings.Join(evidencecheck.Columns, " | ")+" |\n"+strings.Repeat("|---", len(evidencecheck.Columns))+"|\n", "row.md header")
	assert.Equal(t, harness.AIPerfVersion, evidencecheck.AIPerfVersion)
	assert.Equal(t, harness.ChecksumFile, evidencecheck.ChecksumFile)
}

// Every timing source a family can declare is one the checker can read back.
func TestTimingSourcesReadBack(t *testing.T) {
	for _, ts := range []harness.TimingSource{
		{Body: "timing.task_ms"},
		{Body: "trtmc_timing.model_call_ms"},
		{Records: "timing.task_ms", RecordID: "request_id"},
	} {
		assert.True(t, evidencecheck.ReadsTimingSource(ts.String()), "%q", ts.String())
	}
}
