package serving_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"qualkit/internal/serving"
	"qualkit/internal/serving/reaper"
)

// portsChild makes the test binary a second process that hands out ports
// (TestFreePortNeverTwice): it prints n of FreePort's ports and holds them until its
// stdin closes.
const portsChild = "QUALKIT_TEST_PORTS_CHILD"

func claimPorts(n int) int {
	for range n {
		port, err := serving.FreePort()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(port)
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestMain gives the package's tests a reaper, as qual's runs have one: what a killed or
// timed-out test binary leaves (its containers, images, processes) goes with it, and the
// build steps its images shared go once no other session is alive.
func TestMain(m *testing.M) {
	if n, _ := strconv.Atoi(os.Getenv(portsChild)); n > 0 {
		os.Exit(claimPorts(n))
	}
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
