package evidencecheck

import "testing"

// Forge is forge for the package's external tests (voucher_test.go, which reaches the
// checker through internal/report, an importer of this package).
func Forge(t *testing.T, dir string) { forge(t, dir) }
