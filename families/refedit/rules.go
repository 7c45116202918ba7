package refedit

import (
	"regexp"

	"qualkit/families/refedit/server"
	"qualkit/internal/evidencerules"
	"qualkit/internal/schema"
)

// pairReference is where the correctness case writes the quality pair's reference image,
// under its artifacts folder (Quality names it; the checker holds the pair to it).
const pairReference = "reference/pair-photo-grayscale.png"

// The lines the family's programs write per request: the server's access line (server.go:
// "%s %s %d %.1fms request_id=%s") for each edit, and `refedit run --batch`'s line per
// replay (cmd/refedit/batch.go: "refedit: batch %d/%d %s: %s (%.1f ms)", the PNG's
// sha256 cut to 12).
var (
	serverLogLine = regexp.MustCompile(`POST ` + regexp.QuoteMeta(server.EditRoute) + ` (?P<status>\d{3}) [0-9.]+ms request_id=(?P<id>\S+)$`)
	batchLogLine  = regexp.MustCompile(`^refedit: batch (?P<n>\d+)/(?P<total>\d+) (?P<id>\S+): (?P<sha>[0-9a-f]{12}) \(`)
)

// The checker's rules for this family's evidence (evidencerules): the pair's reference
// is pairReference, its formula qualkit's own; the Task time is timing.task_ms of the
// response body and of the records line, one or both as Timing picks.
func init() {
	evidencerules.Register(Backend, evidencerules.Rules{
		PairReference: func(string, string) string { return pairReference },
		PairMetric:    func(string) string { return "" },
		TaskTime: func(evidencerules.Row) evidencerules.TaskTime {
			both, records := Family{}.timing(), Family{RecordsTiming: true}.timing()
			return evidencerules.TaskTime{Sources: []schema.TimingSource{both, records},
				Body: both.Body, Records: both.Records, RecordID: both.RecordID}
		},
		ServerLog:      serverLogLine,
		NativeBatchLog: batchLogLine,
	})
}
