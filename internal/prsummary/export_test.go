package prsummary

// The browser helpers, for the merged run's page test (package prsummary_test, which
// may import internal/merged: merged imports this package).
var (
	Chromium         = chromium
	CommittedRunPath = committedRun
)
