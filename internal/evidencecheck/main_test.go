package evidencecheck

import (
	"os"
	"testing"

	"qualkit/internal/runarchive/runstest"
)

// TestMain removes the committed runs the tests unpacked (runstest.Shared).
func TestMain(m *testing.M) {
	code := m.Run()
	runstest.RemoveShared()
	os.Exit(code)
}
