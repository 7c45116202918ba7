package qual

import "qualkit/internal/harness"

// table is one qualification table: the test function that walks it, and its rows.
type table struct {
	test string
	rows harness.Table
	// hardware marks tables whose rows need what CI never has (a GPU, TRTMC): `make
	// test` leaves their test out (never started, so never a skip) and runs the rows'
	// preflight unit tests instead.
	hardware bool
}

// tables lists every qualification table; doctor and the Makefile read it, and
// TestTablesListEveryQualifyingTest keeps it in step with the test functions.
var tables = []table{
	{test: "TestRefEdit", rows: refeditRows},
	{test: "TestQwenImageEdit", rows: qwenImageEditRows, hardware: true},
	{test: "TestReferenceSmoke", rows: qwenReferenceRows, hardware: true},
}
