package harness

import (
	"os"
	"path/filepath"
	"qualkit/internal/schema"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimingFromBody(t *testing.T) {
	ts := schema.TimingSource{Body: "trtmc_timing.model_call_ms"}
	ms, err := taskFromBody(ts, []byte(`{"data":[],"trtmc_timing":{"model_call_ms":22111.9,"queue_ms":0.1}}`))
	require.NoError(t, err)
	assert.Equal(t, 22111.9, ms)

	ms, err = taskFromBody(ts, []byte(`{"trtmc_timing":{"model_call_ms":"12.5"}}`))
	require.NoError(t, err)
	assert.Equal(t, 12.5, ms, "numeric strings are accepted")

	_, err = taskFromBody(ts, []byte(`{"data":[]}`))
	require.ErrorContains(t, err, `field "trtmc_timing.model_call_ms" is absent`)
	_, err = taskFromBody(ts, []byte(`{"trtmc_timing":{"model_call_ms":true}}`))
	require.ErrorContains(t, err, "is bool, not a number")
	_, err = taskFromBody(ts, []byte(`not json`))
	require.ErrorContains(t, err, "not JSON")
}

func TestTimingFromRecordsJoinsOnRequestID(t *testing.T) {
	p := filepath.Join(t.TempDir(), "records.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(`{"request_id":"a","timing":{"model_call_ms":10}}
{"request_id":"b","route":"/health/ready"}

{"request_id":"c","timing":{"model_call_ms":30.5}}
`), 0o644))
	ts := schema.TimingSource{Records: "timing.model_call_ms", RecordID: "request_id"}
	got, err := tasksFromRecords(ts, p)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"a": 10, "c": 30.5}, got)

	require.NoError(t, os.WriteFile(p, []byte("{broken\n"), 0o644))
	_, err = tasksFromRecords(ts, p)
	require.ErrorContains(t, err, "line 1")
}
