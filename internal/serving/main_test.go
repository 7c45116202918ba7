package serving_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"qualkit/internal/serving/reaper"
)

// TestMain gives the package's tests a reaper, as qual's runs have one: what a killed or
// timed-out test binary leaves (its containers, images, processes) goes with it, and the
// build steps its images shared go once no other session is alive.
func TestMain(m *testing.M) {
	if reaper.Requested() {
		os.Exit(reaper.Main())
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving tests:", err)
		os.Exit(2)
	}
	r, err := reaper.Start(exe)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving tests:", err)
		os.Exit(2)
	}
	code := m.Run()
	if err := r.Close(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "serving tests: the session's end:", err)
		code = 1
	}
	os.Exit(code)
}
